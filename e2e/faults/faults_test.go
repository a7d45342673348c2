// Package faults runs fault tests on the local stack (the stack of
// `make dev` and the e2e stories): it makes the Kubernetes API unavailable
// by stopping etcd (SIGSTOP, then SIGCONT) while an upgrade runs. It has
// its own TestMain and stack so that its pauses never disturb the stories.
package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"

	"github.com/tidbcloud/ops-server/e2e/stack"
)

var st *stack.Stack

func TestMain(m *testing.M) {
	os.Exit(stack.RunSuite(m, "ops-faults-", &st, func() { st.WriteLogs(os.Stderr, 4000) }))
}

// rest sends one REST request to ops-apiserver and decodes the answer.
func rest(t *testing.T, method, path string, body any) (int, map[string]any) {
	t.Helper()
	raw, err := json.Marshal(body)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	req, err := http.NewRequest(method, st.APIURL+path, bytes.NewReader(raw))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	if st.Token != "" {
		req.Header.Set("Authorization", "Bearer "+st.Token)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := map[string]any{}
	_ = json.Unmarshal(b, &out)
	return resp.StatusCode, out
}

// pauseAPI stops etcd for d: every Kubernetes API request that needs
// storage hangs or fails meanwhile. It checks that the API is really
// unavailable, and available again afterwards.
func pauseAPI(t *testing.T, d time.Duration) {
	g := NewWithT(t)
	pid, err := st.Env.EtcdPID()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(syscall.Kill(pid, syscall.SIGSTOP)).To(Succeed())
	stopped := time.Now()
	defer func() {
		// Whatever happens, etcd runs again.
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	err = st.Env.Client.Get(ctx, client.ObjectKey{Namespace: stack.Namespace, Name: "fault-probe"}, &corev1.ConfigMap{})
	cancel()
	g.Expect(err).To(HaveOccurred(), "the Kubernetes API answers while etcd is stopped")
	time.Sleep(d - time.Since(stopped))
	g.Expect(syscall.Kill(pid, syscall.SIGCONT)).To(Succeed())
	g.Eventually(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return st.Env.Client.List(ctx, &corev1.NamespaceList{})
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
	t.Logf("etcd stopped for %s; the Kubernetes API answered again %s after SIGCONT", d, time.Since(stopped)-d)
}

// pausePoint is where in the upgrade the API is made unavailable: the
// first moment at returns true for the operation's status.
type pausePoint struct {
	name   string
	outage time.Duration
	at     func(op *opsv1.ClusterUpgradeOperation) bool
}

func stepIs(op *opsv1.ClusterUpgradeOperation, id string, phase opsv1.StepPhase, inFlight bool) bool {
	s := op.Status.Step(id)
	return s != nil && s.Phase == phase && (!inFlight || s.OperationID != "")
}

// TestUpgradeSurvivesKubernetesAPIOutages: during a blue-green upgrade with
// a vmstorage rollout on the simulated cloud, the Kubernetes API is
// unavailable three times (20 s, 20 s, 30 s) — while a cloud operation is in flight
// (the new node group being created), mid-wait of a Kubernetes-side step
// (the vmstorage rollout), and at a step boundary (Cordon done, Drain
// next). The operation Succeeds, and each cloud operation was started
// exactly once.
func TestUpgradeSurvivesKubernetesAPIOutages(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	began := time.Now()

	code, body := rest(t, http.MethodPost, "/api/v1/observability-ops/vmclusters", map[string]any{
		"name": "vmcluster",
		"values": map[string]any{"vmstorage": map[string]any{
			"replicaCount": 3, "nodeSelector": map[string]any{"node-role.observability/vmstorage": "true"},
		}},
	})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	g.Eventually(func(g Gomega) {
		_, body := rest(t, http.MethodGet, "/api/v1/observability-ops/vmclusters/vmcluster", nil)
		g.Expect(body["status"]).To(Equal("RUNNING"), "%v", body)
		pods := &corev1.PodList{}
		g.Expect(st.Env.Client.List(ctx, pods, client.InNamespace(stack.Namespace), client.MatchingLabels{"app.kubernetes.io/name": "vmstorage"})).To(Succeed())
		ready := 0
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		g.Expect(ready).To(Equal(3))
	}, 4*time.Minute, time.Second).Should(Succeed())
	t.Logf("vmcluster running after %s", time.Since(began).Round(time.Second))

	code, body = rest(t, http.MethodPost, "/ops/api/v1/upgradeOperations", map[string]any{
		"k8sClusterName": "dev-cluster", "region": "local", "cloudProvider": "mock", "targetVersion": "1.30",
		"nodeGroupUpgrades": []any{
			map[string]any{"nodeGroupName": "vmstorage", "strategy": "blue-green", "requiresVMStorageRollout": true, "newNodeGroupName": "vmstorage-130",
				"vmClusterHelmValues": map[string]any{"vmstorage": map[string]any{"nodeSelector": map[string]any{stack.NodeGroupLabel: "vmstorage-130"}}}},
		},
	})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	name, _ := body["name"].(string)
	g.Expect(name).NotTo(BeEmpty(), "%v", body)
	upgradeStart := time.Now()
	key := client.ObjectKey{Namespace: stack.Namespace, Name: name}
	get := func() (*opsv1.ClusterUpgradeOperation, error) {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		op := &opsv1.ClusterUpgradeOperation{}
		return op, st.Env.Client.Get(ctx, key, op)
	}

	points := []pausePoint{
		{"a cloud operation in flight (CreateNodeGroup)", 20 * time.Second, func(op *opsv1.ClusterUpgradeOperation) bool {
			return stepIs(op, "nodegroup/vmstorage/CreateNodeGroup", opsv1.StepPhaseRunning, true)
		}},
		{"mid-wait of a Kubernetes-side step (RolloutVMStorage)", 20 * time.Second, func(op *opsv1.ClusterUpgradeOperation) bool {
			return stepIs(op, "nodegroup/vmstorage/RolloutVMStorage", opsv1.StepPhaseRunning, false)
		}},
		{"a step boundary (CordonNodes done)", 30 * time.Second, func(op *opsv1.ClusterUpgradeOperation) bool {
			return stepIs(op, "nodegroup/vmstorage/CordonNodes", opsv1.StepPhaseSucceeded, false)
		}},
	}
	for _, p := range points {
		var seen *opsv1.ClusterUpgradeOperation
		g.Eventually(func(g Gomega) {
			op, err := get()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(op.Status.Phase).NotTo(BeElementOf(opsv1.UpgradePhaseFailed, opsv1.UpgradePhaseSucceeded), "%+v", op.Status)
			g.Expect(p.at(op)).To(BeTrue())
			seen = op
		}, 5*time.Minute, 50*time.Millisecond).Should(Succeed(), "waiting for %s", p.name)
		cur := seen.Status.Step(seen.Status.CurrentStep)
		t.Logf("%s after %s: stopping etcd at %s (step %s %s, %q)", p.name, time.Since(upgradeStart).Round(100*time.Millisecond),
			time.Now().Format("15:04:05.000"), cur.ID, cur.Phase, cur.Message)
		pauseAPI(t, p.outage)
	}

	var done *opsv1.ClusterUpgradeOperation
	g.Eventually(func(g Gomega) {
		op, err := get()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(op.Status.Phase).NotTo(Equal(opsv1.UpgradePhaseFailed), "%+v", op.Status)
		g.Expect(op.Status.Phase).To(Equal(opsv1.UpgradePhaseSucceeded), "current step %s", op.Status.CurrentStep)
		done = op
	}, 10*time.Minute, time.Second).Should(Succeed())
	t.Logf("upgrade Succeeded %s after it was created (outages of 20 s, 20 s, 30 s)", time.Since(upgradeStart).Round(time.Second))
	for _, s := range done.Status.Steps {
		g.Expect(s.Phase).To(Equal(opsv1.StepPhaseSucceeded), "%s: %s", s.ID, s.Message)
		t.Logf("  %-40s attempts=%d %s", s.ID, s.Attempts, s.CompletionTime.Sub(s.StartTime.Time).Round(100*time.Millisecond))
	}

	// What the operator went through: requests that failed (and were
	// retried) rather than hung until etcd came back.
	if log, err := os.ReadFile(st.Operator.LogPath); err == nil {
		t.Logf("ops-operator log: %d reconciles returned an error (retried with backoff), %d step messages said so",
			bytes.Count(log, []byte("Reconciler error")), bytes.Count(log, []byte("Retrying after")))
	}

	// Each cloud operation was started exactly once.
	state, err := (&mock.Provider{Client: st.Env.Client}).State(ctx, stack.DevCluster)
	g.Expect(err).NotTo(HaveOccurred())
	count := map[string]int{}
	for _, op := range state.Operations {
		count[op.Kind+" "+op.Target]++
	}
	g.Expect(count).To(HaveKeyWithValue(mock.OpStartControlPlaneUpgrade+" cluster/dev-cluster", 1))
	g.Expect(count).To(HaveLen(3), "control plane, create, delete: %v", count)
	for k, n := range count {
		g.Expect(n).To(Equal(1), k)
	}
	g.Expect(state.NodeGroups).To(HaveKey("vmstorage-130"))
	g.Expect(state.NodeGroups).NotTo(HaveKey("vmstorage"))

	// vmstorage runs on the new group.
	pods := &corev1.PodList{}
	g.Expect(st.Env.Client.List(ctx, pods, client.InNamespace(stack.Namespace), client.MatchingLabels{"app.kubernetes.io/name": "vmstorage"})).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(3))
	for _, p := range pods.Items {
		node := &corev1.Node{}
		g.Expect(st.Env.Client.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, node)).To(Succeed())
		g.Expect(node.Labels[stack.NodeGroupLabel]).To(Equal("vmstorage-130"), "pod %s", p.Name)
	}
}
