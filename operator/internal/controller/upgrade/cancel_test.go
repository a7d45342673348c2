package upgrade_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// TestCancelUncordons cancels a blue-green upgrade whose drain a
// PodDisruptionBudget holds: the Nodes the operation cordoned are
// schedulable again, a Node a person had cordoned before stays cordoned,
// nothing more reaches the cloud, and status lists the created node group.
// The operator is restarted between the cordon and the cancel.
func TestCancelUncordons(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	ns := env.NewNamespace(t)
	f := newCloud(t, "cnl", 0, seed("cnl-old"))
	kubeletLoop(t, ns)
	workload(t, ns, "cnl-old", 2, map[string]string{"app": "db"})
	blockingPDB(g, ns)

	old := nodesOf(g, "cnl-old")
	g.Expect(old).To(HaveLen(2))
	// A person cordoned one Node before the upgrade.
	byPerson := old[0].Name
	g.Expect(env.Client.Patch(ctx, &old[0], client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"unschedulable":true}}`)))).To(Succeed())

	first := startOperator(t, ns, f, nil)
	op := newOp(ns, "cnl", f, func(s *opsv1.ClusterUpgradeOperationSpec) {
		s.NodeGroupUpgrades = []opsv1.NodeGroupUpgrade{{NodeGroupName: "cnl-old", Strategy: opsv1.StrategyBlueGreen, NewNodeGroupName: "cnl-new"}}
	})
	g.Expect(env.Client.Create(ctx, op)).To(Succeed())

	// The drain is blocked: the Nodes are cordoned.
	cordonID := opsv1.NodeGroupStepID("cnl-old", opsv1.ActionCordonNodes)
	g.Eventually(func(g Gomega) {
		cur := get(g, op)
		g.Expect(cur.Status.BlockedBy).NotTo(BeNil(), describe(cur))
		g.Expect(cur.Status.BlockedBy.Reason).To(Equal(opsv1.BlockedByPodDisruptionBudget))
		g.Expect(cur.Status.Step(cordonID).Message).To(ContainSubstring("1 more were already cordoned by someone else"))
	}, time.Minute, 50*time.Millisecond).Should(Succeed())
	marks := map[string]string{}
	for _, n := range nodesOf(g, "cnl-old") {
		g.Expect(n.Spec.Unschedulable).To(BeTrue(), n.Name)
		marks[n.Name] = n.Annotations[opsv1.CordonedByAnnotation]
	}
	g.Expect(marks).To(Equal(map[string]string{byPerson: "", old[1].Name: ns + "/cnl"}), "only the Node the operation cordoned is marked")

	// The record of what was cordoned is on the Nodes, not in the
	// operator's memory: a new operator does the cancel.
	first.stop()
	setSpec(g, op, func(s *opsv1.ClusterUpgradeOperationSpec) { s.Cancel = true })
	startOperator(t, ns, f, nil)
	done := waitPhase(t, op, opsv1.UpgradePhaseCancelled, time.Minute)

	for _, n := range nodesOf(g, "cnl-old") {
		if n.Name == byPerson {
			g.Expect(n.Spec.Unschedulable).To(BeTrue(), "cordoned by a person: stays cordoned")
		} else {
			g.Expect(n.Spec.Unschedulable).To(BeFalse(), "cordoned by the operation: uncordoned by the cancel")
		}
		g.Expect(n.Annotations).NotTo(HaveKey(opsv1.CordonedByAnnotation), n.Name)
	}
	drainStep := done.Status.Step(opsv1.NodeGroupStepID("cnl-old", opsv1.ActionDrainNodes))
	g.Expect(drainStep.Phase).To(Equal(opsv1.StepPhaseSkipped))
	g.Expect(done.Status.Step(opsv1.NodeGroupStepID("cnl-old", opsv1.ActionDeleteNodeGroup)).Phase).To(Equal(opsv1.StepPhaseSkipped))
	g.Expect(apimeta.FindStatusCondition(done.Status.Conditions, opsv1.ReadyCondition).Reason).To(Equal(opsv1.CancelledReason))
	g.Expect(mutationCounts(f)).To(Equal(map[string]int{
		"StartControlPlaneUpgrade cluster/cnl":   1,
		"StartCreateNodeGroup nodegroup/cnl-new": 1,
	}), "the old node group is not deleted")

	g.Expect(done.Status.LeftBehind).To(HaveLen(3), "%+v", done.Status.LeftBehind)
	lb := done.Status.LeftBehind
	g.Expect(lb[0].Kind).To(Equal(opsv1.LeftBehindControlPlane))
	g.Expect(lb[0].Name).To(Equal("cnl"))
	g.Expect(lb[0].Reason).To(ContainSubstring("cannot be downgraded"))
	g.Expect(lb[1]).To(And(
		HaveField("Kind", opsv1.LeftBehindNodeGroup), HaveField("Name", "cnl-new"),
		HaveField("StepID", opsv1.NodeGroupStepID("cnl-old", opsv1.ActionCreateNodeGroup)),
		HaveField("Reason", ContainSubstring("evicted from the old node group cnl-old"))))
	g.Expect(lb[2]).To(And(
		HaveField("Kind", opsv1.LeftBehindNodeGroup), HaveField("Name", "cnl-old"),
		HaveField("StepID", drainStep.ID), HaveField("Reason", ContainSubstring("uncordoned by the cancel"))))
}

// TestCancelDuringCreateNodeGroup cancels while the node group creation is
// in flight: the operator waits for it, starts no other cloud call,
// cordons nothing and lists the created group.
func TestCancelDuringCreateNodeGroup(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	ns := env.NewNamespace(t)
	// Cloud operations take long enough for the test to see Cancelling.
	f := newCloud(t, "cnc", 5*time.Second, seed("cnc-old"))
	startOperator(t, ns, f, nil)
	op := newOp(ns, "cnc", f, func(s *opsv1.ClusterUpgradeOperationSpec) {
		s.NodeGroupUpgrades = []opsv1.NodeGroupUpgrade{{NodeGroupName: "cnc-old", Strategy: opsv1.StrategyBlueGreen, NewNodeGroupName: "cnc-new"}}
	})
	g.Expect(env.Client.Create(ctx, op)).To(Succeed())
	createID := opsv1.NodeGroupStepID("cnc-old", opsv1.ActionCreateNodeGroup)
	g.Eventually(func(g Gomega) {
		cur := get(g, op)
		g.Expect(cur.Status.Step(createID)).NotTo(BeNil())
		g.Expect(cur.Status.Step(createID).OperationID).NotTo(BeEmpty(), describe(cur))
	}, time.Minute, 10*time.Millisecond).Should(Succeed())
	setSpec(g, op, func(s *opsv1.ClusterUpgradeOperationSpec) { s.Cancel = true })

	// While Cancelling, the message names the cloud operation awaited.
	inFlightID := get(g, op).Status.Step(createID).OperationID
	cancelling := waitPhase(t, op, opsv1.UpgradePhaseCancelling, 30*time.Second)
	g.Expect(apimeta.FindStatusCondition(cancelling.Status.Conditions, opsv1.ReadyCondition).Message).To(ContainSubstring(inFlightID))

	done := waitPhase(t, op, opsv1.UpgradePhaseCancelled, time.Minute)
	g.Expect(done.Status.Step(createID).Phase).To(Equal(opsv1.StepPhaseSucceeded), "the creation in flight was awaited")
	g.Expect(mutationCounts(f)).To(Equal(map[string]int{
		"StartControlPlaneUpgrade cluster/cnc":   1,
		"StartCreateNodeGroup nodegroup/cnc-new": 1,
	}))
	for _, n := range nodesOf(g, "cnc-old") {
		g.Expect(n.Spec.Unschedulable).To(BeFalse())
		g.Expect(n.Annotations).NotTo(HaveKey(opsv1.CordonedByAnnotation))
	}
	g.Expect(done.Status.LeftBehind).To(ContainElement(And(
		HaveField("Kind", opsv1.LeftBehindNodeGroup), HaveField("Name", "cnc-new"),
		HaveField("Reason", ContainSubstring("the old node group cnc-old still runs the workloads")))))
	g.Expect(nodesOf(g, "cnc-new")).NotTo(BeEmpty(), "the created group is left as it is")
}
