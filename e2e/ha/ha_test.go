package ha

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/e2e/stack"
	"github.com/tidbcloud/ops-server/e2e/suite"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
)

// takeovers are the failovers measured, logged together at the end.
var takeovers []string

// TestHA runs the failover scenarios in order on one stack; later ones
// use what earlier ones left (the vmcluster of the Flux scenario).
func TestHA(t *testing.T) {
	t.Cleanup(func() {
		t.Logf("time from SIGKILL to a standby holding the Lease (lease %s, renew %s, retry %s):\n  %s",
			stack.LeaseDuration, stack.RenewDeadline, stack.RetryPeriod, strings.Join(takeovers, "\n  "))
	})
	t.Run("processes.json lists two of each, and the leader of every Lease", testProcesses)
	t.Run("ops-apiserver killed: the other replica answers, a POST retried there with its Idempotency-Key returns the same operation", testAPIServerFailover)
	t.Run("active Flux pair killed during a vmcluster install: the other pair installs it", testFluxFailover)
	t.Run("leading ops-operator killed at every step kind of a blue-green upgrade: the other finishes it, each cloud call once", testOperatorUpgradeFailover)
	t.Run("leading ops-operator killed during a backup: the other finishes it, one backup per replica", testOperatorBackupFailover)
}

func testProcesses(t *testing.T) {
	g := NewWithT(t)
	l, err := stack.ReadProcesses(filepath.Dir(st.ProcessesPath()))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(l.Replicas).To(Equal(2))
	for _, c := range []string{"ops-apiserver", "ops-operator", "source-controller", "helm-controller"} {
		for i := range 2 {
			p, ok := l.Find(fmt.Sprintf("%s-%d", c, i))
			g.Expect(ok).To(BeTrue(), "%s-%d in %s", c, i, st.ProcessesPath())
			g.Expect(p.Component).To(Equal(c))
			g.Expect(p.PID).To(BeNumerically(">", 0))
			g.Expect(syscall.Kill(p.PID, 0)).To(Succeed(), "%s (pid %d) runs", p.Name, p.PID)
			g.Expect(p.Ports).NotTo(BeEmpty())
			if c != "ops-apiserver" {
				g.Expect(p.Lease).To(HavePrefix(stack.Namespace + "/"))
				g.Expect(p.Identity).NotTo(BeEmpty())
			}
		}
	}
	src, helm := stack.FluxLeases()
	for _, lease := range []string{stack.OperatorLease, src, helm} {
		p := leader(t, lease)
		t.Logf("Lease %s: held by %s (pid %d)", lease, p.Name, p.PID)
	}
}

// leader waits until a running process of the stack holds lease.
func leader(t *testing.T, lease string) stack.ProcessInfo {
	t.Helper()
	var p stack.ProcessInfo
	NewWithT(t).Eventually(func(g Gomega) {
		var err error
		p, err = st.LeaderOf(context.Background(), lease)
		g.Expect(err).NotTo(HaveOccurred())
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	return p
}

// awaitTakeover waits until a process other than victim, SIGKILLed at
// killedAt, holds lease, logs and records the time it took, and returns
// the new leader.
func awaitTakeover(t *testing.T, lease string, victim stack.ProcessInfo, killedAt time.Time, during string) stack.ProcessInfo {
	t.Helper()
	var p stack.ProcessInfo
	NewWithT(t).Eventually(func(g Gomega) {
		var err error
		p, err = st.LeaderOf(context.Background(), lease)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.Name).NotTo(Equal(victim.Name))
	}, 2*time.Minute, 100*time.Millisecond).Should(Succeed())
	took := time.Since(killedAt).Round(100 * time.Millisecond)
	msg := fmt.Sprintf("%-18s killed during %s: %s took Lease %s over after %s", victim.Name, during, p.Name, lease, took)
	t.Log(msg)
	takeovers = append(takeovers, msg)
	return p
}

func testAPIServerFailover(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(st.APIURLs).To(HaveLen(2))
	// An operation scheduled an hour ahead: no cloud call.
	req := map[string]any{
		"k8sClusterName": "dev-cluster", "region": "local", "cloudProvider": "mock", "targetVersion": "1.30",
		"schedule": time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
	}
	key := "ha-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	code, first := suite.CallAt(t, st.APIURLs[0], http.MethodPost, suite.Upgrades, req, "Idempotency-Key", key)
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", first)
	id, _ := first["id"].(string)
	g.Expect(id).NotTo(BeEmpty())

	killedAt := time.Now()
	st.KillAPIServer(0)
	// The client retries its POST on the other replica, as a client of
	// the Service would after a connection error.
	code, again := suite.CallAt(t, st.APIURLs[1], http.MethodPost, suite.Upgrades, req, "Idempotency-Key", key)
	answered := time.Since(killedAt).Round(time.Millisecond)
	g.Expect(code).To(Equal(http.StatusOK), "a retry is answered with the operation it created: %v", again)
	g.Expect(again["id"]).To(Equal(id))
	g.Expect(again["name"]).To(Equal(first["name"]))
	g.Expect(again["createTime"]).To(Equal(first["createTime"]))
	msg := fmt.Sprintf("%-18s killed: ops-apiserver-1 answered the retried POST %s later (no Lease: both replicas serve)", "ops-apiserver-0", answered)
	t.Log(msg)
	takeovers = append(takeovers, msg)
	_, err := os.Stat(st.ProcessesPath())
	g.Expect(err).NotTo(HaveOccurred())
	l, err := stack.ReadProcesses(filepath.Dir(st.ProcessesPath()))
	g.Expect(err).NotTo(HaveOccurred())
	_, listed := l.Find("ops-apiserver-0")
	g.Expect(listed).To(BeFalse(), "a killed process leaves %s", stack.ProcessesFile)

	// Reads and writes keep succeeding on the replica left.
	for range 10 {
		code, body := suite.CallAt(t, st.APIURLs[1], http.MethodGet, suite.Upgrades+"/"+id, nil)
		g.Expect(code).To(Equal(http.StatusOK), "%v", body)
		code, body = suite.CallAt(t, st.APIURLs[1], http.MethodGet, suite.VMClusters, nil)
		g.Expect(code).To(Equal(http.StatusOK), "%v", body)
	}
	// A different request under the same key is refused, on either replica.
	other := map[string]any{"k8sClusterName": "dev-cluster", "region": "local", "cloudProvider": "mock", "targetVersion": "1.31",
		"schedule": req["schedule"]}
	code, body := suite.CallAt(t, st.APIURLs[1], http.MethodPost, suite.Upgrades, other, "Idempotency-Key", key)
	g.Expect(code).To(Equal(http.StatusConflict), "%v", body)

	g.Expect(st.StartAPIServerReplica(ctx, 0)).To(Succeed())
	code, body = suite.CallAt(t, st.APIURLs[0], http.MethodPost, suite.Upgrades, req, "Idempotency-Key", key)
	g.Expect(code).To(Equal(http.StatusOK), "%v", body)
	g.Expect(body["id"]).To(Equal(id))
	code, body = suite.CallAt(t, st.APIURLs[1], http.MethodDelete, suite.Upgrades+"/"+id, nil)
	g.Expect(code).To(Equal(http.StatusOK), "%v", body)
}

var helmReleaseGVK = schema.GroupVersionKind{Group: "helm.toolkit.fluxcd.io", Version: "v2", Kind: "HelmRelease"}

// readySince is when the HelmRelease's Ready condition last turned True
// (zero while it is not True).
func readySince(g Gomega, name string) time.Time {
	hr := &unstructured.Unstructured{}
	hr.SetGroupVersionKind(helmReleaseGVK)
	g.Expect(st.Env.Client.Get(context.Background(), client.ObjectKey{Namespace: stack.Namespace, Name: name}, hr)).To(Succeed())
	conds, _, _ := unstructured.NestedSlice(hr.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" && m["status"] == "True" {
			ts, _ := m["lastTransitionTime"].(string)
			at, err := time.Parse(time.RFC3339, ts)
			g.Expect(err).NotTo(HaveOccurred())
			return at
		}
	}
	return time.Time{}
}

func testFluxFailover(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srcLease, helmLease := stack.FluxLeases()
	src, helm := leader(t, srcLease), leader(t, helmLease)
	if src.Replica != helm.Replica {
		// One pair active: the helm-controller leader's pair goes, the
		// source-controller leader's pair takes the helm Lease.
		killed, killedAt := helm.Replica, time.Now()
		st.KillFluxPair(killed)
		helm = awaitTakeover(t, helmLease, helm, killedAt, "no operation (uniting the leaders in one pair)")
		g.Expect(st.StartFluxPair(ctx, killed)).To(Succeed())
	}
	active := src.Replica

	// The vmcluster of the upgrade scenario: three vmstorage replicas on
	// the vmstorage node group.
	code, body := suite.Call(t, http.MethodPost, suite.VMClusters, map[string]any{
		"name": "vmcluster",
		"values": map[string]any{"vmstorage": map[string]any{
			"replicaCount": 3, "nodeSelector": map[string]any{"node-role.observability/vmstorage": "true"},
		}},
	})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	killedAt := time.Now()
	st.KillFluxPair(active)
	during := "the install of vmcluster"
	awaitTakeover(t, srcLease, src, killedAt, during)
	awaitTakeover(t, helmLease, helm, killedAt, during)
	g.Expect(st.StartFluxPair(ctx, active)).To(Succeed())

	suite.WaitVMCluster(t, "vmcluster", "RUNNING", 5*time.Minute)
	var ready time.Time
	g.Eventually(func(g Gomega) {
		ready = readySince(g, "vmcluster")
		g.Expect(ready.IsZero()).To(BeFalse(), "HelmRelease vmcluster Ready")
	}, time.Minute, time.Second).Should(Succeed())
	// Installed by the pair left: Ready turned True after the kill.
	g.Expect(ready).NotTo(BeTemporally("<", killedAt.Truncate(time.Second)), "HelmRelease Ready since %s, the active pair was killed at %s", ready, killedAt)
	g.Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(st.Env.Client.List(ctx, pods, client.InNamespace(stack.Namespace), client.MatchingLabels{"app.kubernetes.io/name": "vmstorage"})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(3))
		for _, p := range pods.Items {
			g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), p.Name)
		}
	}, 3*time.Minute, time.Second).Should(Succeed())
}

func testOperatorUpgradeFailover(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	code, body := suite.Call(t, http.MethodGet, suite.VMClusters+"/vmcluster", nil)
	g.Expect(code).To(Equal(http.StatusOK), "the vmcluster of the Flux scenario: %v", body)
	suite.WaitVMCluster(t, "vmcluster", "RUNNING", 3*time.Minute)

	code, body = suite.Call(t, http.MethodPost, suite.Upgrades, map[string]any{
		"k8sClusterName": "dev-cluster", "region": "local", "cloudProvider": "mock", "targetVersion": "1.30",
		"clusterAddons": []any{map[string]any{"name": "vpc-cni", "version": "v1.18.5-eksbuild.1", "resolveConflicts": "PRESERVE"}},
		"nodeGroupUpgrades": []any{
			map[string]any{"nodeGroupName": "observability-ng", "strategy": "in-place"},
			map[string]any{"nodeGroupName": "vmstorage", "strategy": "blue-green", "requiresVMStorageRollout": true, "newNodeGroupName": "vmstorage-130",
				"vmClusterHelmValues": map[string]any{"vmstorage": map[string]any{"nodeSelector": map[string]any{stack.NodeGroupLabel: "vmstorage-130"}}}},
		},
	})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	id := body["id"].(string)

	// One kill per step kind: the control plane, an addon, an in-place
	// node group, a blue-green node group's creation, the vmstorage
	// rollout. Each time the killed replica starts again (as a standby)
	// before the next kill.
	for _, step := range []string{
		opsv1.ControlPlaneStepID,
		opsv1.AddonStepID("vpc-cni"),
		opsv1.NodeGroupStepID("observability-ng", opsv1.ActionUpgradeNodeGroup),
		opsv1.NodeGroupStepID("vmstorage", opsv1.ActionCreateNodeGroup),
		opsv1.NodeGroupStepID("vmstorage", opsv1.ActionRolloutVMStorage),
	} {
		g.Eventually(func(g Gomega) {
			_, body := suite.Call(t, http.MethodGet, suite.Upgrades+"/"+id, nil)
			g.Expect(body["phase"]).NotTo(BeElementOf("Succeeded", "Failed"), "%v", body)
			g.Expect(body["currentStep"]).To(Equal(step))
		}, 3*time.Minute, 200*time.Millisecond).Should(Succeed())
		victim := leader(t, stack.OperatorLease)
		killedAt := time.Now()
		st.KillOperator(victim.Replica)
		awaitTakeover(t, stack.OperatorLease, victim, killedAt, "step "+step)
		g.Expect(st.StartOperatorReplica(ctx, victim.Replica)).To(Succeed())
	}

	done := suite.WaitUpgrade(t, id, "Succeeded", 6*time.Minute)
	for _, s := range done["steps"].([]any) {
		g.Expect(suite.Field(s.(map[string]any), "phase")).To(Equal("Succeeded"), "%v", s)
	}
	pods := &corev1.PodList{}
	g.Expect(st.Env.Client.List(ctx, pods, client.InNamespace(stack.Namespace), client.MatchingLabels{"app.kubernetes.io/name": "vmstorage"})).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(3))
	for _, p := range pods.Items {
		node := &corev1.Node{}
		g.Expect(st.Env.Client.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, node)).To(Succeed())
		g.Expect(node.Labels[stack.NodeGroupLabel]).To(Equal("vmstorage-130"), "pod %s", p.Name)
	}
	state, err := (&mock.Provider{Client: st.Env.Client}).State(ctx, stack.DevCluster)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(state.Version).To(Equal("1.30"))
	g.Expect(state.NodeGroups).NotTo(HaveKey("vmstorage"))
	g.Expect(state.Addons["vpc-cni"].Version).To(Equal("v1.18.5-eksbuild.1"))
	// Five kills, and still every cloud operation exactly once.
	count := map[string]int{}
	for _, op := range state.Operations {
		count[op.Kind+" "+op.Target]++
	}
	g.Expect(count).To(HaveLen(5), "control plane, addon, in-place node group, create and delete node group: %v", count)
	for k, n := range count {
		g.Expect(n).To(Equal(1), k)
	}
}

func testOperatorBackupFailover(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	before, err := (&mock.Provider{Client: st.Env.Client}).State(ctx, stack.DevCluster)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.MkdirAll(st.BackupRoot(), 0o755)).To(Succeed())
	dest, err := os.MkdirTemp(st.BackupRoot(), "ha-")
	g.Expect(err).NotTo(HaveOccurred())
	backups := suite.VMClusters + "/vmcluster/backups"
	code, body := suite.Call(t, http.MethodPost, backups, map[string]any{"destination": map[string]any{"url": "fs://" + dest}})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	id := strings.TrimPrefix(body["name"].(string), "vmclusters/vmcluster/backups/")

	// Killed once the backup runs (a replica's snapshot or vmbackup under
	// way).
	g.Eventually(func(g Gomega) {
		_, body := suite.Call(t, http.MethodGet, backups+"/"+id, nil)
		g.Expect(body["phase"]).To(Equal("Running"), "%v", body)
	}, 2*time.Minute, 50*time.Millisecond).Should(Succeed())
	victim := leader(t, stack.OperatorLease)
	killedAt := time.Now()
	st.KillOperator(victim.Replica)
	awaitTakeover(t, stack.OperatorLease, victim, killedAt, "a backup")
	g.Expect(st.StartOperatorReplica(ctx, victim.Replica)).To(Succeed())

	var done map[string]any
	g.Eventually(func(g Gomega) {
		code, body := suite.Call(t, http.MethodGet, backups+"/"+id, nil)
		done = body
		g.Expect(code).To(Equal(http.StatusOK), "%v", body)
		g.Expect(body["phase"]).To(Equal("Succeeded"), "progress=%v message=%v replicas=%v", body["progress"], body["message"], body["replicas"])
	}, 4*time.Minute, time.Second).Should(Succeed())
	g.Expect(done["progress"]).To(Equal("3/3"))
	reps, _ := done["replicas"].([]any)
	g.Expect(reps).To(HaveLen(3))
	for _, raw := range reps {
		r := raw.(map[string]any)
		pod, _ := r["pod"].(string)
		g.Expect(r["phase"]).To(Equal("Succeeded"), "%v", r)
		g.Expect(filepath.Join(dest, "vmcluster", id, pod, "backup_complete.ignore")).To(BeAnExistingFile(), "vmbackup finished the backup of %s", pod)
	}
	entries, err := os.ReadDir(filepath.Join(dest, "vmcluster", id))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(HaveLen(3), "one backup per replica, none twice")
	// A backup calls no cloud API.
	after, err := (&mock.Provider{Client: st.Env.Client}).State(ctx, stack.DevCluster)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after.Operations).To(HaveLen(len(before.Operations)))
}
