package upgrade_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/manager"
	"github.com/tidbcloud/ops-server/operator/internal/skeleton/kstatustest"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
)

// seed is a cluster at 1.29 with node groups of two nodes each and two
// addons.
func seed(groups ...string) mock.ClusterState {
	st := mock.ClusterState{Version: "1.29", NodeGroups: map[string]*mock.NodeGroupState{}, Addons: map[string]*mock.AddonState{
		"vpc-cni": {Version: "v1.18.3", AvailableVersions: []string{"v1.18.3", "v1.18.5-eksbuild.1"}},
		"coredns": {Version: "v1.11.1", AvailableVersions: []string{"v1.11.1", "v1.11.3"}},
	}}
	for _, g := range groups {
		st.NodeGroups[g] = &mock.NodeGroupState{Size: 2, InstanceTypes: []string{"m5.large"}, Labels: map[string]string{"role": g}}
	}
	return st
}

func nodesOf(g Gomega, group string) []corev1.Node {
	list := &corev1.NodeList{}
	g.Expect(env.Client.List(context.Background(), list, client.MatchingLabels{mock.NodeGroupLabel: group})).To(Succeed())
	return list.Items
}

func TestInPlaceOnly(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	f := newCloud(t, "inplace", 0, seed("ip-a"))
	startOperator(t, ns, f, nil)

	op := newOp(ns, "inplace", f, func(s *opsv1.ClusterUpgradeOperationSpec) {
		s.NodeGroupUpgrades = []opsv1.NodeGroupUpgrade{{NodeGroupName: "ip-a", Strategy: opsv1.StrategyInPlace}}
	})
	g.Expect(env.Client.Create(ctx, op)).To(Succeed())
	done := waitPhase(t, op, opsv1.UpgradePhaseSucceeded, time.Minute)

	g.Expect(done.Status.Steps).To(HaveLen(2))
	for _, s := range done.Status.Steps {
		g.Expect(s.Phase).To(Equal(opsv1.StepPhaseSucceeded), s.ID)
		g.Expect(s.OperationID).NotTo(BeEmpty(), s.ID)
		g.Expect(s.StartTime).NotTo(BeNil())
		g.Expect(s.CompletionTime).NotTo(BeNil())
	}
	g.Expect(done.Status.ObservedGeneration).To(Equal(done.Generation))
	g.Expect(apimeta.IsStatusConditionTrue(done.Status.Conditions, opsv1.ReadyCondition)).To(BeTrue())
	g.Expect(servedKstatus(g, done)).To(Equal(status.CurrentStatus), "kstatus of the object as served")
	st, err := f.provider.State(ctx, f.ref)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Version).To(Equal("1.30"))
	g.Expect(st.NodeGroups["ip-a"].Version).To(Equal("1.30"))
	for _, n := range nodesOf(g, "ip-a") {
		g.Expect(n.Status.NodeInfo.KubeletVersion).To(Equal("v1.30"))
	}
	g.Expect(mutationCounts(f)).To(Equal(map[string]int{
		"StartControlPlaneUpgrade cluster/inplace": 1,
		"StartNodeGroupUpgrade nodegroup/ip-a":     1,
	}))

	events := &corev1.EventList{}
	g.Expect(env.Client.List(ctx, events, client.InNamespace(ns))).To(Succeed())
	var reasons []string
	for _, e := range events.Items {
		reasons = append(reasons, e.Reason)
	}
	g.Expect(reasons).To(ContainElements("Planned", "PreflightPassed", "StepStarted", "StepSucceeded", "Succeeded"))
}

// workload puts pods of a "Deployment" on a node group's nodes (the test
// plays scheduler and kubelet).
func workload(t *testing.T, ns, group string, n int, labels map[string]string) {
	t.Helper()
	g := NewWithT(t)
	nodes := nodesOf(g, group)
	g.Expect(nodes).NotTo(BeEmpty())
	for i := 0; i < n; i++ {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-pod-%d", group, i), Labels: labels},
			Spec: corev1.PodSpec{
				NodeName:   nodes[i%len(nodes)].Name,
				Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			},
		}
		g.Expect(env.Client.Create(context.Background(), pod)).To(Succeed())
		// Play the kubelet: Running and Ready. (The Eviction API ignores
		// PodDisruptionBudgets for Pending pods.)
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		g.Expect(env.Client.Status().Update(context.Background(), pod)).To(Succeed())
	}
}

func podsOn(g Gomega, ns string) map[string]string {
	pods := &corev1.PodList{}
	g.Expect(env.Client.List(context.Background(), pods, client.InNamespace(ns))).To(Succeed())
	out := map[string]string{}
	for _, p := range pods.Items {
		out[p.Name] = p.Spec.NodeName
	}
	return out
}

// kubeletLoop plays the kubelet until the test ends.
func kubeletLoop(t *testing.T, ns string) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for ctx.Err() == nil {
			playKubelet(ctx, ns)
			time.Sleep(50 * time.Millisecond)
		}
	}()
}

func TestBlueGreenWithoutRollout(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	f := newCloud(t, "bluegreen", 0, seed("bg-old"))
	startOperator(t, ns, f, nil)
	workload(t, ns, "bg-old", 3, map[string]string{"app": "web"})
	kubeletLoop(t, ns)

	op := newOp(ns, "bg", f, func(s *opsv1.ClusterUpgradeOperationSpec) {
		s.NodeGroupUpgrades = []opsv1.NodeGroupUpgrade{{NodeGroupName: "bg-old", Strategy: opsv1.StrategyBlueGreen, NewNodeGroupName: "bg-new"}}
	})
	g.Expect(env.Client.Create(ctx, op)).To(Succeed())
	done := waitPhase(t, op, opsv1.UpgradePhaseSucceeded, time.Minute)
	g.Expect(done.Status.Steps).To(HaveLen(6))

	st, err := f.provider.State(ctx, f.ref)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.NodeGroups).NotTo(HaveKey("bg-old"))
	g.Expect(st.NodeGroups).To(HaveKey("bg-new"))
	g.Expect(st.NodeGroups["bg-new"].InstanceTypes).To(Equal([]string{"m5.large"}), "cloned from the old group")
	g.Expect(st.NodeGroups["bg-new"].Labels).To(HaveKeyWithValue("role", "bg-old"))
	g.Expect(nodesOf(g, "bg-old")).To(BeEmpty())
	g.Expect(nodesOf(g, "bg-new")).To(HaveLen(2))
	g.Expect(podsOn(g, ns)).To(BeEmpty(), "the old nodes' pods were evicted")
	g.Expect(mutationCounts(f)).To(Equal(map[string]int{
		"StartControlPlaneUpgrade cluster/bluegreen": 1,
		"StartCreateNodeGroup nodegroup/bg-new":      1,
		"StartDeleteNodeGroup nodegroup/bg-old":      1,
	}))
}

func TestMixedControlPlaneAddonsNodeGroups(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	f := newCloud(t, "mixed", 20*time.Millisecond, seed("mx-a", "mx-b", "mx-c"))
	startOperator(t, ns, f, nil)
	kubeletLoop(t, ns)

	op := newOp(ns, "mixed", f, func(s *opsv1.ClusterUpgradeOperationSpec) {
		s.ClusterAddons = []opsv1.ClusterAddon{
			{Name: "vpc-cni", Version: "v1.18.5-eksbuild.1", ResolveConflicts: opsv1.ResolveConflictsPreserve},
			{Name: "coredns", Version: "v1.11.3"},
		}
		s.NodeGroupUpgrades = []opsv1.NodeGroupUpgrade{
			{NodeGroupName: "mx-a", Strategy: opsv1.StrategyInPlace},
			{NodeGroupName: "mx-b", Strategy: opsv1.StrategyBlueGreen, NewNodeGroupName: "mx-b2"},
			{NodeGroupName: "mx-c", Strategy: opsv1.StrategyInPlace},
		}
	})
	g.Expect(env.Client.Create(ctx, op)).To(Succeed())
	done := waitPhase(t, op, opsv1.UpgradePhaseSucceeded, time.Minute)

	var order []string
	for _, s := range done.Status.Steps {
		order = append(order, s.ID)
		g.Expect(s.Phase).To(Equal(opsv1.StepPhaseSucceeded))
	}
	g.Expect(order[:3]).To(Equal([]string{"controlplane", "addon/vpc-cni", "addon/coredns"}))
	// Steps ran in order: each started after the previous one completed.
	for i := 1; i < len(done.Status.Steps); i++ {
		prev, cur := done.Status.Steps[i-1], done.Status.Steps[i]
		g.Expect(cur.StartTime.Time.Before(prev.CompletionTime.Time)).To(BeFalse(), "%s started before %s finished", cur.ID, prev.ID)
	}
	st, err := f.provider.State(ctx, f.ref)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Addons["vpc-cni"].Version).To(Equal("v1.18.5-eksbuild.1"))
	g.Expect(st.Addons["coredns"].Version).To(Equal("v1.11.3"))
	g.Expect(st.NodeGroups["mx-a"].Version).To(Equal("1.30"))
	g.Expect(st.NodeGroups["mx-c"].Version).To(Equal("1.30"))
	g.Expect(st.NodeGroups["mx-b2"].Version).To(Equal("1.30"))
	g.Expect(st.NodeGroups).NotTo(HaveKey("mx-b"))
	for k, n := range mutationCounts(f) {
		g.Expect(n).To(Equal(1), k)
	}
	g.Expect(mutationCounts(f)).To(HaveLen(7))
}

// TestCrashSafety stops the operator and starts a new one (same API
// server, same cloud) after every change of the operation's status — at
// every step boundary and in the middle of every wait — and checks that
// the operation completes and every mutating cloud call happened once.
func TestCrashSafety(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	f := newCloud(t, "crash", 300*time.Millisecond, seed("cr-a", "cr-b"))
	kubeletLoop(t, ns)
	workload(t, ns, "cr-b", 2, map[string]string{"app": "crash"})

	op := newOp(ns, "crash", f, func(s *opsv1.ClusterUpgradeOperationSpec) {
		s.ClusterAddons = []opsv1.ClusterAddon{{Name: "coredns", Version: "v1.11.3"}}
		s.NodeGroupUpgrades = []opsv1.NodeGroupUpgrade{
			{NodeGroupName: "cr-a", Strategy: opsv1.StrategyInPlace},
			{NodeGroupName: "cr-b", Strategy: opsv1.StrategyBlueGreen, NewNodeGroupName: "cr-b2"},
		}
	})
	g.Expect(env.Client.Create(ctx, op)).To(Succeed())

	restarts := 0
	seen := ""
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		o := startOperator(t, ns, f, nil)
		// Run until the status changes, then kill the operator.
		g.Eventually(func(g Gomega) {
			cur := get(g, op)
			g.Expect(statusKey(cur)).NotTo(Equal(seen))
		}, 30*time.Second, 10*time.Millisecond).Should(Succeed())
		o.stop()
		restarts++
		cur := get(g, op)
		seen = statusKey(cur)
		if cur.Status.Phase.IsTerminal() {
			break
		}
	}
	done := get(g, op)
	g.Expect(done.Status.Phase).To(Equal(opsv1.UpgradePhaseSucceeded), describe(done))
	g.Expect(restarts).To(BeNumerically(">=", len(done.Status.Steps)), "restarted at least once per step")
	counts := mutationCounts(f)
	g.Expect(counts).To(HaveLen(5))
	for k, n := range counts {
		g.Expect(n).To(Equal(1), "%s happened %d times", k, n)
	}
	t.Logf("operator restarted %d times", restarts)
}

func statusKey(op *opsv1.ClusterUpgradeOperation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|", op.Status.Phase)
	for _, s := range op.Status.Steps {
		fmt.Fprintf(&b, "%s:%s:%s|", s.ID, s.Phase, s.OperationID)
	}
	return b.String()
}

func TestPauseResumeAndCancel(t *testing.T) {
	ctx := context.Background()
	t.Run("pause mid-operation, then resume", func(t *testing.T) {
		g := NewWithT(t)
		ns := env.NewNamespace(t)
		f := newCloud(t, "pause", 500*time.Millisecond, seed("pa-a", "pa-b"))
		startOperator(t, ns, f, nil)
		op := newOp(ns, "pause", f, func(s *opsv1.ClusterUpgradeOperationSpec) {
			s.NodeGroupUpgrades = []opsv1.NodeGroupUpgrade{{NodeGroupName: "pa-a", Strategy: opsv1.StrategyInPlace}, {NodeGroupName: "pa-b", Strategy: opsv1.StrategyInPlace}}
		})
		g.Expect(env.Client.Create(ctx, op)).To(Succeed())
		// Pause while the control plane upgrade is in flight.
		g.Eventually(func(g Gomega) {
			g.Expect(get(g, op).Status.Steps).NotTo(BeEmpty())
			g.Expect(get(g, op).Status.Steps[0].OperationID).NotTo(BeEmpty())
		}, 30*time.Second, 10*time.Millisecond).Should(Succeed())
		setSpec(g, op, func(s *opsv1.ClusterUpgradeOperationSpec) { s.Paused = true })
		paused := waitPhase(t, op, opsv1.UpgradePhasePaused, 30*time.Second)
		g.Expect(paused.Status.Steps[0].Phase).To(Equal(opsv1.StepPhaseSucceeded), "the cloud operation in flight was awaited")
		g.Expect(paused.Status.Steps[1].Phase).To(Equal(opsv1.StepPhasePending), "no next step started")
		g.Expect(apimeta.FindStatusCondition(paused.Status.Conditions, opsv1.ReadyCondition).Reason).To(Equal(opsv1.PausedReason))
		g.Consistently(func(g Gomega) {
			g.Expect(get(g, op).Status.Steps[1].Phase).To(Equal(opsv1.StepPhasePending))
		}, time.Second, 100*time.Millisecond).Should(Succeed())

		setSpec(g, op, func(s *opsv1.ClusterUpgradeOperationSpec) { s.Paused = false })
		waitPhase(t, op, opsv1.UpgradePhaseSucceeded, time.Minute)
		for k, n := range mutationCounts(f) {
			g.Expect(n).To(Equal(1), k)
		}
	})
	t.Run("cancel mid-operation", func(t *testing.T) {
		g := NewWithT(t)
		ns := env.NewNamespace(t)
		f := newCloud(t, "cancel", 500*time.Millisecond, seed("ca-a"))
		startOperator(t, ns, f, nil)
		op := newOp(ns, "cancel", f, func(s *opsv1.ClusterUpgradeOperationSpec) {
			s.NodeGroupUpgrades = []opsv1.NodeGroupUpgrade{{NodeGroupName: "ca-a", Strategy: opsv1.StrategyInPlace}}
		})
		g.Expect(env.Client.Create(ctx, op)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(get(g, op).Status.Steps).NotTo(BeEmpty())
			g.Expect(get(g, op).Status.Steps[0].OperationID).NotTo(BeEmpty())
		}, 30*time.Second, 10*time.Millisecond).Should(Succeed())
		setSpec(g, op, func(s *opsv1.ClusterUpgradeOperationSpec) { s.Cancel = true })
		done := waitPhase(t, op, opsv1.UpgradePhaseCancelled, 30*time.Second)
		g.Expect(done.Status.Steps[0].Phase).To(Equal(opsv1.StepPhaseSucceeded), "the in-flight control plane upgrade finished")
		g.Expect(done.Status.Steps[1].Phase).To(Equal(opsv1.StepPhaseSkipped))
		g.Expect(mutationCounts(f)).To(Equal(map[string]int{"StartControlPlaneUpgrade cluster/cancel": 1}))
	})
	t.Run("pause and cancel of a scheduled operation", func(t *testing.T) {
		g := NewWithT(t)
		ns := env.NewNamespace(t)
		f := newCloud(t, "sched", 0, seed("sc-a"))
		startOperator(t, ns, f, nil)
		later := metav1.NewTime(time.Now().Add(time.Hour))
		op := newOp(ns, "sched", f, func(s *opsv1.ClusterUpgradeOperationSpec) { s.Schedule = &later })
		g.Expect(env.Client.Create(ctx, op)).To(Succeed())
		sched := waitPhase(t, op, opsv1.UpgradePhaseScheduled, 30*time.Second)
		g.Expect(sched.Status.Steps).To(HaveLen(1))
		setSpec(g, op, func(s *opsv1.ClusterUpgradeOperationSpec) { s.Paused = true })
		waitPhase(t, op, opsv1.UpgradePhaseScheduled, 30*time.Second)
		setSpec(g, op, func(s *opsv1.ClusterUpgradeOperationSpec) { s.Cancel = true })
		done := waitPhase(t, op, opsv1.UpgradePhaseCancelled, 30*time.Second)
		g.Expect(done.Status.Steps[0].Phase).To(Equal(opsv1.StepPhaseSkipped))
		g.Expect(mutationCounts(f)).To(BeEmpty(), "nothing reached the cloud")
	})
}

func setSpec(g Gomega, op *opsv1.ClusterUpgradeOperation, mut func(*opsv1.ClusterUpgradeOperationSpec)) {
	cur := get(g, op)
	patch := client.MergeFrom(cur.DeepCopy())
	mut(&cur.Spec)
	g.Expect(env.Client.Patch(context.Background(), cur, patch)).To(Succeed())
}

func TestPodDisruptionBudgetBlocksDrain(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T, name string, drainTimeout time.Duration) (*opsv1.ClusterUpgradeOperation, *policyv1.PodDisruptionBudget, string) {
		g := NewWithT(t)
		ns := env.NewNamespace(t)
		f := newCloud(t, name, 0, seed(name+"-old"))
		startOperator(t, ns, f, func(o *manager.Options) { o.Upgrade.DrainTimeout = drainTimeout })
		kubeletLoop(t, ns)
		workload(t, ns, name+"-old", 2, map[string]string{"app": "db"})
		pdb := blockingPDB(g, ns)
		op := newOp(ns, name, f, func(s *opsv1.ClusterUpgradeOperationSpec) {
			s.NodeGroupUpgrades = []opsv1.NodeGroupUpgrade{{NodeGroupName: name + "-old", Strategy: opsv1.StrategyBlueGreen, NewNodeGroupName: name + "-new"}}
		})
		g.Expect(env.Client.Create(ctx, op)).To(Succeed())
		return op, pdb, ns
	}

	t.Run("blocked, then relaxed", func(t *testing.T) {
		g := NewWithT(t)
		op, pdb, ns := setup(t, "pdb", time.Hour)
		var blocked *opsv1.ClusterUpgradeOperation
		g.Eventually(func(g Gomega) {
			blocked = get(g, op)
			g.Expect(blocked.Status.BlockedBy).NotTo(BeNil(), describe(blocked))
			g.Expect(blocked.Status.BlockedBy.Reason).To(Equal(opsv1.BlockedByPodDisruptionBudget))
		}, time.Minute, 50*time.Millisecond).Should(Succeed())
		b := blocked.Status.BlockedBy
		g.Expect(b.PodDisruptionBudget).To(Equal(&opsv1.NamespacedObjectReference{Namespace: ns, Name: "db"}))
		g.Expect(b.Pod.Name).To(HavePrefix("pdb-old-pod-"))
		g.Expect(b.Node).To(HavePrefix("pdb-pdb-old-node-"))
		g.Expect(b.Since).NotTo(BeNil())
		g.Expect(blocked.Status.Phase).To(Equal(opsv1.UpgradePhaseRunning))
		g.Expect(apimeta.FindStatusCondition(blocked.Status.Conditions, opsv1.ReadyCondition).Reason).To(Equal(opsv1.BlockedReason))

		setPDBStatus(g, pdb, 2)
		done := waitPhase(t, op, opsv1.UpgradePhaseSucceeded, time.Minute)
		g.Expect(done.Status.BlockedBy).To(BeNil())
	})
	t.Run("drain timeout fails the operation", func(t *testing.T) {
		g := NewWithT(t)
		op, _, _ := setup(t, "pdbto", 2*time.Second)
		done := waitPhase(t, op, opsv1.UpgradePhaseFailed, time.Minute)
		drainStep := done.Status.Step(opsv1.NodeGroupStepID("pdbto-old", opsv1.ActionDrainNodes))
		g.Expect(drainStep.Phase).To(Equal(opsv1.StepPhaseFailed))
		g.Expect(drainStep.Message).To(ContainSubstring("Drain timed out"))
		g.Expect(drainStep.Message).To(ContainSubstring("PodDisruptionBudget"))
		g.Expect(done.Status.Step(opsv1.NodeGroupStepID("pdbto-old", opsv1.ActionDeleteNodeGroup)).Phase).To(Equal(opsv1.StepPhaseSkipped))
		g.Expect(apimeta.IsStatusConditionTrue(done.Status.Conditions, opsv1.StalledCondition)).To(BeTrue())
	})
}

func ptrIntStr(v intstr.IntOrString) *intstr.IntOrString { return &v }

// blockingPDB creates PodDisruptionBudget db in ns: at least 2 of the
// app=db Pods available, no disruption allowed yet.
func blockingPDB(g Gomega, ns string) *policyv1.PodDisruptionBudget {
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptrIntStr(intstr.FromInt32(2)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
		},
	}
	g.Expect(env.Client.Create(context.Background(), pdb)).To(Succeed())
	setPDBStatus(g, pdb, 0)
	return pdb
}

// setPDBStatus plays the disruption controller (kube-controller-manager
// does not run in the test control plane).
func setPDBStatus(g Gomega, pdb *policyv1.PodDisruptionBudget, allowed int32) {
	cur := &policyv1.PodDisruptionBudget{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(pdb), cur)).To(Succeed())
	cur.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: cur.Generation, DisruptionsAllowed: allowed,
		CurrentHealthy: 2 + allowed, DesiredHealthy: 2, ExpectedPods: 2 + allowed,
	}
	g.Expect(env.Client.Status().Update(context.Background(), cur)).To(Succeed())
}

func TestCloudFaults(t *testing.T) {
	ctx := context.Background()
	t.Run("throttling and 5xx on every call kind", func(t *testing.T) {
		g := NewWithT(t)
		ns := env.NewNamespace(t)
		f := newCloud(t, "faults", 0, seed("fa-a", "fa-b"))
		kubeletLoop(t, ns)
		for _, op := range []string{mock.OpDescribeCluster, mock.OpListNodeGroups, mock.OpListAddons, mock.OpStartControlPlaneUpgrade,
			mock.OpStartAddonUpdate, mock.OpStartNodeGroupUpgrade, mock.OpStartCreateNodeGroup, mock.OpStartDeleteNodeGroup, mock.OpPollOperation} {
			f.faults.Add(mock.Fault{Op: op, Nth: 1, Kind: mock.Throttle})
			f.faults.Add(mock.Fault{Op: op, Nth: 2, Kind: mock.ServerError})
		}
		startOperator(t, ns, f, nil)
		op := newOp(ns, "faults", f, func(s *opsv1.ClusterUpgradeOperationSpec) {
			s.ClusterAddons = []opsv1.ClusterAddon{{Name: "coredns", Version: "v1.11.3"}}
			s.NodeGroupUpgrades = []opsv1.NodeGroupUpgrade{{NodeGroupName: "fa-a", Strategy: opsv1.StrategyInPlace}, {NodeGroupName: "fa-b", Strategy: opsv1.StrategyBlueGreen, NewNodeGroupName: "fa-b2"}}
		})
		g.Expect(env.Client.Create(ctx, op)).To(Succeed())
		waitPhase(t, op, opsv1.UpgradePhaseSucceeded, time.Minute)
		failed := 0
		for _, c := range f.log.Calls() {
			if c.Failed {
				failed++
			}
		}
		g.Expect(failed).To(Equal(18), "every injected fault was hit")
		for k, n := range mutationCounts(f) {
			g.Expect(n).To(Equal(1), k)
		}
	})
	t.Run("permanent error fails with the provider's message", func(t *testing.T) {
		g := NewWithT(t)
		ns := env.NewNamespace(t)
		f := newCloud(t, "permanent", 0, seed("pe-a"))
		f.faults.Add(mock.Fault{Op: mock.OpStartNodeGroupUpgrade, Kind: mock.PermanentError, Message: "InvalidParameterException: node group pe-a is degraded"})
		startOperator(t, ns, f, nil)
		op := newOp(ns, "permanent", f, func(s *opsv1.ClusterUpgradeOperationSpec) {
			s.NodeGroupUpgrades = []opsv1.NodeGroupUpgrade{{NodeGroupName: "pe-a", Strategy: opsv1.StrategyInPlace}}
		})
		g.Expect(env.Client.Create(ctx, op)).To(Succeed())
		done := waitPhase(t, op, opsv1.UpgradePhaseFailed, time.Minute)
		g.Expect(done.Status.Steps[1].Phase).To(Equal(opsv1.StepPhaseFailed))
		g.Expect(done.Status.Steps[1].Message).To(ContainSubstring("node group pe-a is degraded"))
		ready := apimeta.FindStatusCondition(done.Status.Conditions, opsv1.ReadyCondition)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Message).To(ContainSubstring("node group pe-a is degraded"))
		g.Expect(servedKstatus(g, done)).To(Equal(status.FailedStatus), "kstatus of the object as served")
	})
	t.Run("a failed cloud operation fails the step", func(t *testing.T) {
		g := NewWithT(t)
		ns := env.NewNamespace(t)
		f := newCloud(t, "opfail", 0, seed("of-a"))
		f.faults.Add(mock.Fault{Op: mock.OpStartControlPlaneUpgrade, Kind: mock.FailOperation})
		startOperator(t, ns, f, nil)
		op := newOp(ns, "opfail", f, nil)
		g.Expect(env.Client.Create(ctx, op)).To(Succeed())
		done := waitPhase(t, op, opsv1.UpgradePhaseFailed, time.Minute)
		g.Expect(done.Status.Steps[0].Message).To(ContainSubstring("simulated failure"))
	})
	t.Run("preflight refuses a two-minor jump and a missing node group", func(t *testing.T) {
		g := NewWithT(t)
		ns := env.NewNamespace(t)
		f := newCloud(t, "preflight", 0, seed("pf-a"))
		startOperator(t, ns, f, nil)
		op := newOp(ns, "skew", f, func(s *opsv1.ClusterUpgradeOperationSpec) { s.TargetVersion = "1.31" })
		g.Expect(env.Client.Create(ctx, op)).To(Succeed())
		done := waitPhase(t, op, opsv1.UpgradePhaseFailed, time.Minute)
		g.Expect(apimeta.FindStatusCondition(done.Status.Conditions, opsv1.ReadyCondition).Message).To(ContainSubstring("more than one minor version ahead"))
		op2 := newOp(ns, "missing", f, func(s *opsv1.ClusterUpgradeOperationSpec) {
			s.NodeGroupUpgrades = []opsv1.NodeGroupUpgrade{{NodeGroupName: "nope", Strategy: opsv1.StrategyInPlace}}
		})
		g.Expect(env.Client.Create(ctx, op2)).To(Succeed())
		done2 := waitPhase(t, op2, opsv1.UpgradePhaseFailed, time.Minute)
		g.Expect(apimeta.FindStatusCondition(done2.Status.Conditions, opsv1.ReadyCondition).Message).To(ContainSubstring(`node group "nope" does not exist`))
		g.Expect(mutationCounts(f)).To(BeEmpty())
	})
}

// servedKstatus is the kstatus (cli-utils) of an operation read from the
// API server.
func servedKstatus(g Gomega, op *opsv1.ClusterUpgradeOperation) status.Status {
	st, msg, err := kstatustest.Compute(op, opsv1.GroupVersion.WithKind("ClusterUpgradeOperation"))
	g.Expect(err).NotTo(HaveOccurred(), msg)
	return st
}
