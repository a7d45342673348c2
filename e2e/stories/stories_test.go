package stories

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/e2e/stack"
	"github.com/tidbcloud/ops-server/e2e/suite"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
)

const obs = "observability"

// runningVMCluster creates vmcluster name with one vmstorage replica
// through the REST API, deletes it when the test ends, waits until it is
// RUNNING and returns its path.
func runningVMCluster(t *testing.T, name string) string {
	t.Helper()
	base := suite.VMClusters + "/" + name
	code, body := suite.Call(t, http.MethodPost, suite.VMClusters, map[string]any{
		"name":   name,
		"values": map[string]any{"vmstorage": map[string]any{"replicaCount": 1}},
	})
	NewWithT(t).Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	t.Cleanup(func() { suite.Call(t, http.MethodDelete, base, nil) })
	suite.WaitVMCluster(t, name, "RUNNING", 3*time.Minute)
	return base
}

func stsReady(g Gomega, name string, replicas int32) {
	sts := &appsv1.StatefulSet{}
	g.Expect(st.Env.Client.Get(context.Background(), client.ObjectKey{Namespace: obs, Name: name}, sts)).To(Succeed())
	g.Expect(sts.Status.ReadyReplicas).To(Equal(replicas))
	g.Expect(*sts.Spec.Replicas).To(Equal(replicas))
}

// TestStories runs the user stories in order; later stories build on the
// cluster earlier ones left (as a user's session would).
func TestStories(t *testing.T) {
	t.Run("1 deploy, change and delete a vmcluster", storyVMClusterLifecycle)
	t.Run("2 upgrade with a blue-green vmstorage move, operator killed midway", storyUpgrade)
	t.Run("3 pause and resume; cancel", storyPauseCancel)
	t.Run("4 ClusterBackup of the vmcluster: Succeeded with one entry per replica", storyBackup)
	t.Run("5 ops-apiserver killed: nothing accepted is lost", storyAPIServerRestart)
	t.Run("6 GitOps: kubectl apply gives the same result; invalid YAML is rejected", storyGitOps)
	t.Run("7 one active upgrade per cluster: simultaneous POSTs, a second CR waits", storyOneActiveUpgrade)
	t.Run("8 cancel a blue-green upgrade during its drain: the old Nodes are uncordoned", storyCancelBlueGreen)
	t.Run("9 dry-run YAML piped to kubectl apply Succeeds like a POSTed operation", storyDryRunApply)
	t.Run("10 kubectl logs and exec of a vmstorage Pod reach its real process", storyLogsExec)
	t.Run("11 rollout target: a vmcluster named in the upgrade moves, and a later PUT keeps it moved", storyRolloutTarget)
	t.Run("12 vmcluster data: 10,000 samples written and queried at its endpoints, again after a blue-green vmstorage move", storyVMData)
	t.Run("13 troubleshooting through the REST API: tree, Pods, logs (followed), exec", storyTroubleshoot)
	t.Run("14 crash loop: the tree marks the vmstorage Pod and StatefulSet Degraded, the Events say why, diagnostics bundle", storyCrashLoop)
	t.Run("15 VMClusterOperation: vmstorage 3 to 5 to 2 one replica per step, below replicationFactor refused, 5 to 2 refused until acknowledged, samples kept", storyScaling)
	t.Run("16 VMClusterOperation: rolling restart of vmstorage, each Pod once, one at a time; operator killed, pause, resume, cancel", storyRollingRestart)
	t.Run("17 restore a ClusterBackup into its vmcluster, operator killed midway: exactly the backed-up samples", storyRestore)
	t.Run("18 migration: a new vmcluster restored from another vmcluster's backup serves the same samples", storyMigrate)
	t.Run("19 backup schedule every minute with keep_last 2: exactly two backups and their data directories are left", storyBackupSchedule)
	t.Run("20 backup gate: with backupBeforeRollout a blue-green upgrade fails before the new node group when the backup fails, and moves only after it Succeeded", storyBackupGate)
	t.Run("21 bootstrap: the default declaration brings up vm-operator, vmcluster, vmagent in order; vmagent's up series of the vmcluster's components", storyBootstrap)
	t.Run("22 bootstrap changes: a vmagent values change upgrades only it; removing vmagent uninstalls it; removing the vmcluster is refused without allowDataRemoval", storyBootstrapChange)
	t.Run("23 approval gate: BeforeNodeGroups stops after the control plane, holds across an operator restart, PUT approve finishes it", storyApprovalGate)
	t.Run("24 metrics: a failed upgrade raises the chart's upgrade-failed alert expression, evaluated on ops-operator's scraped metrics", storyUpgradeFailedAlert)
	t.Run("25 the quickstart: docs/quickstart.md's shell blocks run in order against the stack", storyQuickstart)
	t.Run("26 preflight: a PodDisruptionBudget with maxUnavailable 0 over a vmstorage Pod fails POST …/preflight naming both, and the operation before any cloud change with the same check", storyPreflight)
	t.Run("27 opsctl: a vmcluster created and waited for until RUNNING, the quickstart's blue-green upgrade watched to Succeeded (exit 0), a refused upgrade makes watch exit 1 with the step's message, -o json is the API's response", storyOpsctl)
}

func storyVMClusterLifecycle(t *testing.T) {
	g := NewWithT(t)
	code, body := suite.Call(t, http.MethodPost, suite.VMClusters, map[string]any{
		"name":   "demo",
		"values": map[string]any{"vmstorage": map[string]any{"replicaCount": 1}, "vmselect": map[string]any{"replicaCount": 1}},
	})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	g.Expect(body["status"]).To(Equal("CREATING"))
	g.Expect(body["name"]).To(Equal("vmclusters/demo"))
	suite.WaitVMCluster(t, "demo", "RUNNING", 3*time.Minute)
	g.Eventually(func(g Gomega) { stsReady(g, "vmselect-demo", 1) }, 2*time.Minute, time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) { stsReady(g, "vmstorage-demo", 1) }, 2*time.Minute, time.Second).Should(Succeed())

	code, body = suite.Call(t, http.MethodPut, suite.VMClusters+"/demo", map[string]any{
		"values": map[string]any{"vmstorage": map[string]any{"replicaCount": 1}, "vmselect": map[string]any{"replicaCount": 2}},
	})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	g.Expect(body["status"]).To(Equal("UPDATING"))
	g.Eventually(func(g Gomega) { stsReady(g, "vmselect-demo", 2) }, 3*time.Minute, time.Second).Should(Succeed())
	running := suite.WaitVMCluster(t, "demo", "RUNNING", 3*time.Minute)
	g.Expect(suite.Field(running, "values.vmselect.replicaCount")).To(BeEquivalentTo(2))

	code, body = suite.Call(t, http.MethodDelete, suite.VMClusters+"/demo", nil)
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	g.Eventually(func(g Gomega) {
		code, _ := suite.Call(t, http.MethodGet, suite.VMClusters+"/demo", nil)
		g.Expect(code).To(Equal(http.StatusNotFound))
		err := st.Env.Client.Get(context.Background(), client.ObjectKey{Namespace: obs, Name: "vmselect-demo"}, &appsv1.StatefulSet{})
		g.Expect(client.IgnoreNotFound(err)).To(Succeed())
		g.Expect(err).To(HaveOccurred(), "the release's workloads are gone")
	}, 3*time.Minute, time.Second).Should(Succeed())
}

func storyUpgrade(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// The vmcluster the upgrade path assumes: VMCluster observability/vmcluster.
	code, body := suite.Call(t, http.MethodPost, suite.VMClusters, map[string]any{
		"name": "vmcluster",
		"values": map[string]any{"vmstorage": map[string]any{
			"replicaCount": 3, "nodeSelector": map[string]any{"node-role.observability/vmstorage": "true"},
		}},
	})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	suite.WaitVMCluster(t, "vmcluster", "RUNNING", 3*time.Minute)
	g.Eventually(func(g Gomega) { stsReady(g, "vmstorage-vmcluster", 3) }, 3*time.Minute, time.Second).Should(Succeed())

	code, body = suite.Call(t, http.MethodGet, "/ops/api/v1/nodeGroups?k8sClusterName=dev-cluster&region=local&cloudProvider=mock", nil)
	g.Expect(code).To(Equal(http.StatusOK), "%v", body)
	g.Expect(fmt.Sprint(body["nodeGroups"])).To(ContainSubstring("vmstorage"))

	req := map[string]any{
		"k8sClusterName": "dev-cluster", "region": "local", "cloudProvider": "mock", "targetVersion": "1.30",
		"clusterAddons": []any{map[string]any{"name": "vpc-cni", "version": "v1.18.5-eksbuild.1", "resolveConflicts": "PRESERVE"}},
		"nodeGroupUpgrades": []any{
			map[string]any{"nodeGroupName": "observability-ng", "strategy": "in-place"},
			map[string]any{"nodeGroupName": "vmstorage", "strategy": "blue-green", "requiresVMStorageRollout": true, "newNodeGroupName": "vmstorage-130",
				"vmClusterHelmValues": map[string]any{"vmstorage": map[string]any{"nodeSelector": map[string]any{stack.NodeGroupLabel: "vmstorage-130"}}}},
		},
	}
	code, body = suite.Call(t, http.MethodPost, suite.Upgrades, req)
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	id := body["id"].(string)

	// Kill ops-operator while the new node group is being created, then
	// start it again.
	g.Eventually(func(g Gomega) {
		_, body := suite.Call(t, http.MethodGet, suite.Upgrades+"/"+id, nil)
		g.Expect(body["currentStep"]).To(Equal("nodegroup/vmstorage/CreateNodeGroup"))
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	st.StopOperator()
	time.Sleep(2 * time.Second) // the simulated cloud keeps working meanwhile
	g.Expect(st.StartOperator(ctx)).To(Succeed())

	done := suite.WaitUpgrade(t, id, "Succeeded", 5*time.Minute)
	for _, s := range done["steps"].([]any) {
		g.Expect(suite.Field(s.(map[string]any), "phase")).To(Equal("Succeeded"), "%v", s)
	}
	// vmstorage now runs on the new group; the old group and its Nodes are gone.
	pods := &corev1.PodList{}
	g.Expect(st.Env.Client.List(ctx, pods, client.InNamespace(obs), client.MatchingLabels{"app.kubernetes.io/name": "vmstorage"})).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(3))
	for _, p := range pods.Items {
		node := &corev1.Node{}
		g.Expect(st.Env.Client.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, node)).To(Succeed())
		g.Expect(node.Labels[stack.NodeGroupLabel]).To(Equal("vmstorage-130"), "pod %s", p.Name)
	}
	nodes := &corev1.NodeList{}
	g.Expect(st.Env.Client.List(ctx, nodes, client.MatchingLabels{stack.NodeGroupLabel: "vmstorage"})).To(Succeed())
	g.Expect(nodes.Items).To(BeEmpty())
	state, err := (&mock.Provider{Client: st.Env.Client}).State(ctx, stack.DevCluster)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(state.Version).To(Equal("1.30"))
	g.Expect(state.NodeGroups).NotTo(HaveKey("vmstorage"))
	g.Expect(state.Addons["vpc-cni"].Version).To(Equal("v1.18.5-eksbuild.1"))
	// The operator restart repeated no cloud operation.
	count := map[string]int{}
	for _, op := range state.Operations {
		count[op.Kind+" "+op.Target]++
	}
	for k, n := range count {
		g.Expect(n).To(Equal(1), k)
	}
}

func storyPauseCancel(t *testing.T) {
	g := NewWithT(t)
	code, body := suite.Call(t, http.MethodPost, suite.Upgrades, map[string]any{
		"k8sClusterName": "dev-cluster", "region": "local", "cloudProvider": "mock", "targetVersion": "1.31",
		"nodeGroupUpgrades": []any{map[string]any{"nodeGroupName": "observability-ng", "strategy": "in-place"}},
	})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	id := body["id"].(string)
	g.Eventually(func(g Gomega) {
		_, body := suite.Call(t, http.MethodGet, suite.Upgrades+"/"+id, nil)
		steps, _ := body["steps"].([]any)
		g.Expect(steps).NotTo(BeEmpty())
		g.Expect(suite.Field(steps[0].(map[string]any), "operationId")).NotTo(BeNil())
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	code, body = suite.Call(t, http.MethodPut, suite.Upgrades+"/"+id+"/pause", nil)
	g.Expect(code).To(Equal(http.StatusOK), "%v", body)
	paused := suite.WaitUpgrade(t, id, "Paused", time.Minute)
	steps := paused["steps"].([]any)
	g.Expect(suite.Field(steps[0].(map[string]any), "phase")).To(Equal("Succeeded"), "the in-flight control plane upgrade finished")
	g.Expect(suite.Field(steps[1].(map[string]any), "phase")).To(Equal("Pending"), "no next step while paused")
	// A retried pause is answered like the first (PUTs are idempotent).
	code, body = suite.Call(t, http.MethodPut, suite.Upgrades+"/"+id+"/pause", nil)
	g.Expect(code).To(Equal(http.StatusOK), "%v", body)
	g.Expect(body["paused"]).To(Equal(true))
	code, body = suite.Call(t, http.MethodPut, suite.Upgrades+"/"+id+"/resume", nil)
	g.Expect(code).To(Equal(http.StatusOK), "%v", body)
	suite.WaitUpgrade(t, id, "Succeeded", 2*time.Minute)

	code, body = suite.Call(t, http.MethodPost, suite.Upgrades, map[string]any{
		"k8sClusterName": "dev-cluster", "region": "local", "cloudProvider": "mock", "targetVersion": "1.32",
		"nodeGroupUpgrades": []any{map[string]any{"nodeGroupName": "observability-ng", "strategy": "in-place"}},
	})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	id = body["id"].(string)
	g.Eventually(func(g Gomega) {
		_, body := suite.Call(t, http.MethodGet, suite.Upgrades+"/"+id, nil)
		g.Expect(body["phase"]).To(Equal("Running"))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	code, body = suite.Call(t, http.MethodDelete, suite.Upgrades+"/"+id, nil)
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	g.Expect(body["result"]).To(Equal("Cancelling"))
	cancelled := suite.WaitUpgrade(t, id, "Cancelled", 2*time.Minute)
	last := cancelled["steps"].([]any)[1].(map[string]any)
	g.Expect(last["phase"]).To(Equal("Skipped"))
}

func storyAPIServerRestart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	code, body := suite.Call(t, http.MethodPost, suite.Upgrades, map[string]any{
		"k8sClusterName": "dev-cluster", "region": "local", "cloudProvider": "mock", "targetVersion": "1.32",
		"schedule": time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
	})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	id := body["id"].(string)
	addr := strings.TrimPrefix(st.APIURL, "http://")
	st.StopAPIServer()
	g.Expect(st.StartAPIServer(ctx, addr)).To(Succeed())
	code, body = suite.Call(t, http.MethodGet, suite.Upgrades+"/"+id, nil)
	g.Expect(code).To(Equal(http.StatusOK), "%v", body)
	g.Expect(body["phase"]).To(Equal("Scheduled"))
	code, _ = suite.Call(t, http.MethodDelete, suite.Upgrades+"/"+id, nil)
	g.Expect(code).To(Equal(http.StatusOK))
}

func storyGitOps(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ref := cloud.ClusterRef{Provider: cloud.Mock, Name: "gitops-cluster", Region: "local"}
	g.Expect((&mock.Provider{Client: st.Env.Client}).Seed(ctx, ref, mock.ClusterState{
		Version:    "1.29",
		NodeGroups: map[string]*mock.NodeGroupState{"gitops-ng": {Size: 1, InstanceTypes: []string{"m5.large"}}},
	})).To(Succeed())
	out, err := suite.KubectlApply(`apiVersion: ops.observability.tidbcloud.com/v1alpha1
kind: ClusterUpgradeOperation
metadata:
  name: gitops-upgrade
  namespace: observability
spec:
  k8sClusterName: gitops-cluster
  region: local
  cloudProvider: mock
  targetVersion: "1.30"
  nodeGroupUpgrades:
  - nodeGroupName: gitops-ng
    strategy: in-place
`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	// The REST API sees it like any other operation.
	done := suite.WaitUpgrade(t, "gitops-upgrade", "Succeeded", 2*time.Minute)
	g.Expect(done["steps"]).To(HaveLen(2))
	state, err := (&mock.Provider{Client: st.Env.Client}).State(ctx, ref)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(state.NodeGroups["gitops-ng"].Version).To(Equal("1.30"))

	out, err = suite.KubectlApply(`apiVersion: ops.observability.tidbcloud.com/v1alpha1
kind: ClusterUpgradeOperation
metadata:
  name: gitops-invalid
  namespace: observability
spec:
  k8sClusterName: gitops-cluster
  region: local
  cloudProvider: mock
  targetVersion: "1.31"
  nodeGroupUpgrades:
  - nodeGroupName: gitops-ng
    strategy: blue-green
    requiresVMStorageRollout: true
`)
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("newNodeGroupName"))
	g.Expect(out).To(ContainSubstring("vmClusterHelmValues"))
	code, _ := suite.Call(t, http.MethodGet, suite.Upgrades+"/gitops-invalid", nil)
	g.Expect(code).To(Equal(http.StatusNotFound))
}

// storyOneActiveUpgrade: two simultaneous POSTs for one cluster give
// exactly one 202 and one 409 naming it; a second ClusterUpgradeOperation
// applied with kubectl while the first is active waits in Pending, naming
// it, and runs after the first Succeeded. (Runs after storyGitOps, on its
// cluster at 1.30.)
func storyOneActiveUpgrade(t *testing.T) {
	g := NewWithT(t)
	req := map[string]any{
		"k8sClusterName": "gitops-cluster", "region": "local", "cloudProvider": "mock", "targetVersion": "1.31",
		"nodeGroupUpgrades": []any{map[string]any{"nodeGroupName": "gitops-ng", "strategy": "in-place"}},
	}
	codes := make([]int, 2)
	bodies := make([]map[string]any, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], bodies[i] = suite.Call(t, http.MethodPost, suite.Upgrades, req)
		}()
	}
	wg.Wait()
	g.Expect(codes).To(ConsistOf(http.StatusAccepted, http.StatusConflict), "%v", bodies)
	won, lost := 0, 1
	if codes[1] == http.StatusAccepted {
		won, lost = 1, 0
	}
	id, name := bodies[won]["id"].(string), bodies[won]["name"].(string)
	g.Expect(fmt.Sprint(bodies[lost])).To(ContainSubstring(id))

	// Hold the first one (paused: still active) while a GitOps commit
	// brings a second one.
	code, body := suite.Call(t, http.MethodPut, suite.Upgrades+"/"+id+"/pause", nil)
	g.Expect(code).To(Equal(http.StatusOK), "%v", body)
	// Of two operations not started yet, the older runs first; creation
	// times have a resolution of one second (ties go by name), so the
	// commit comes in a later second than the first operation.
	created, err := time.Parse(time.RFC3339, fmt.Sprint(bodies[won]["createTime"]))
	g.Expect(err).NotTo(HaveOccurred(), "%v", bodies[won])
	g.Eventually(func() bool { return time.Now().Truncate(time.Second).After(created) }, 3*time.Second, 50*time.Millisecond).Should(BeTrue())
	out, err := suite.KubectlApply(`apiVersion: ops.observability.tidbcloud.com/v1alpha1
kind: ClusterUpgradeOperation
metadata:
  name: gitops-second
  namespace: observability
spec:
  k8sClusterName: gitops-cluster
  region: local
  cloudProvider: mock
  targetVersion: "1.31"
`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		_, body := suite.Call(t, http.MethodGet, suite.Upgrades+"/gitops-second", nil)
		g.Expect(body["phase"]).To(Equal("Pending"))
		g.Expect(body["message"]).To(ContainSubstring("Waiting for ClusterUpgradeOperation observability/" + name))
	}, time.Minute, 200*time.Millisecond).Should(Succeed())

	code, body = suite.Call(t, http.MethodPut, suite.Upgrades+"/"+id+"/resume", nil)
	g.Expect(code).To(Equal(http.StatusOK), "%v", body)
	first := suite.WaitUpgrade(t, id, "Succeeded", 3*time.Minute)
	second := suite.WaitUpgrade(t, "gitops-second", "Succeeded", 3*time.Minute)
	g.Expect(fmt.Sprint(second["startTime"]) >= fmt.Sprint(first["completionTime"])).To(BeTrue(), "the second started after the first finished")
}
