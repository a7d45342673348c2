package upgrade

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

var t0 = time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)

func mkOp(mut func(*opsv1.ClusterUpgradeOperation)) *opsv1.ClusterUpgradeOperation {
	op := &opsv1.ClusterUpgradeOperation{Spec: opsv1.ClusterUpgradeOperationSpec{
		K8sClusterName: "c", Region: "r", CloudProvider: "mock", TargetVersion: "1.30",
		NodeGroupUpgrades: []opsv1.NodeGroupUpgrade{{NodeGroupName: "ng", Strategy: opsv1.StrategyBlueGreen, NewNodeGroupName: "ng2"}},
	}}
	if mut != nil {
		mut(op)
	}
	return op
}

func planned(op *opsv1.ClusterUpgradeOperation) {
	op.Status.Steps = buildPlan(&op.Spec)
	op.Status.Phase = opsv1.UpgradePhasePending
}

func started(op *opsv1.ClusterUpgradeOperation) {
	planned(op)
	st := metav1.NewTime(t0)
	op.Status.StartTime = &st
	op.Status.Phase = opsv1.UpgradePhaseRunning
}

func TestBuildPlan(t *testing.T) {
	g := NewWithT(t)
	spec := &opsv1.ClusterUpgradeOperationSpec{
		ClusterAddons: []opsv1.ClusterAddon{{Name: "vpc-cni", Version: "v1"}},
		NodeGroupUpgrades: []opsv1.NodeGroupUpgrade{
			{NodeGroupName: "a", Strategy: opsv1.StrategyInPlace},
			{NodeGroupName: "vmstorage", Strategy: opsv1.StrategyBlueGreen, NewNodeGroupName: "vmstorage-130", RequiresVMStorageRollout: true},
			{NodeGroupName: "b", Strategy: opsv1.StrategyBlueGreen, NewNodeGroupName: "b2"},
		},
	}
	var ids []string
	for _, s := range buildPlan(spec) {
		g.Expect(s.Phase).To(Equal(opsv1.StepPhasePending))
		ids = append(ids, s.ID)
	}
	g.Expect(ids).To(Equal([]string{
		"controlplane", "addon/vpc-cni", "nodegroup/a/UpgradeNodeGroup",
		"nodegroup/vmstorage/CreateNodeGroup", "nodegroup/vmstorage/WaitNodesReady", "nodegroup/vmstorage/RolloutVMStorage",
		"nodegroup/vmstorage/CordonNodes", "nodegroup/vmstorage/DrainNodes", "nodegroup/vmstorage/DeleteNodeGroup",
		"nodegroup/b/CreateNodeGroup", "nodegroup/b/WaitNodesReady",
		"nodegroup/b/CordonNodes", "nodegroup/b/DrainNodes", "nodegroup/b/DeleteNodeGroup",
	}))
	plan := buildPlan(spec)
	g.Expect(plan[3].Target).To(Equal("vmstorage-130"), "create targets the new group")
	g.Expect(plan[6].Target).To(Equal("vmstorage"), "cordon targets the old group")
}

func TestDecide(t *testing.T) {
	future := metav1.NewTime(t0.Add(time.Hour))
	past := metav1.NewTime(t0.Add(-time.Hour))
	cases := []struct {
		name string
		op   *opsv1.ClusterUpgradeOperation
		want actionKind
		step int
	}{
		{"new object writes the plan", mkOp(nil), actWritePlan, -1},
		{"terminal does nothing", mkOp(func(o *opsv1.ClusterUpgradeOperation) { planned(o); o.Status.Phase = opsv1.UpgradePhaseSucceeded }), actNone, -1},
		{"future schedule waits", mkOp(func(o *opsv1.ClusterUpgradeOperation) { o.Spec.Schedule = &future; planned(o) }), actWaitSchedule, -1},
		{"past schedule runs preflight", mkOp(func(o *opsv1.ClusterUpgradeOperation) { o.Spec.Schedule = &past; planned(o) }), actPreflight, -1},
		{"paused before start", mkOp(func(o *opsv1.ClusterUpgradeOperation) { o.Spec.Paused = true; planned(o) }), actPause, -1},
		{"cancelled while scheduled", mkOp(func(o *opsv1.ClusterUpgradeOperation) { o.Spec.Schedule = &future; o.Spec.Cancel = true; planned(o) }), actCancel, 0},
		{"started runs first step", mkOp(started), actRunStep, 0},
		{"in flight is polled", mkOp(func(o *opsv1.ClusterUpgradeOperation) {
			started(o)
			o.Status.Steps[0].Phase, o.Status.Steps[0].OperationID = opsv1.StepPhaseRunning, "op-1"
		}), actPoll, 0},
		{"paused with op in flight keeps polling", mkOp(func(o *opsv1.ClusterUpgradeOperation) {
			started(o)
			o.Spec.Paused = true
			o.Status.Steps[0].Phase, o.Status.Steps[0].OperationID = opsv1.StepPhaseRunning, "op-1"
		}), actPoll, 0},
		{"paused between steps", mkOp(func(o *opsv1.ClusterUpgradeOperation) {
			started(o)
			o.Spec.Paused = true
			o.Status.Steps[0].Phase = opsv1.StepPhaseSucceeded
		}), actPause, 1},
		{"cancel with op in flight polls", mkOp(func(o *opsv1.ClusterUpgradeOperation) {
			started(o)
			o.Spec.Cancel = true
			o.Status.Steps[1].Phase, o.Status.Steps[1].OperationID = opsv1.StepPhaseRunning, "op-2"
			o.Status.Steps[0].Phase = opsv1.StepPhaseSucceeded
		}), actPoll, 1},
		{"cancel during a Kubernetes-side step stops", mkOp(func(o *opsv1.ClusterUpgradeOperation) {
			started(o)
			o.Spec.Cancel = true
			o.Status.Steps[0].Phase, o.Status.Steps[1].Phase = opsv1.StepPhaseSucceeded, opsv1.StepPhaseSucceeded
			o.Status.Steps[2].Phase = opsv1.StepPhaseRunning // WaitNodesReady
		}), actCancel, 2},
		{"failed step fails the operation", mkOp(func(o *opsv1.ClusterUpgradeOperation) {
			started(o)
			o.Status.Steps[0].Phase = opsv1.StepPhaseFailed
		}), actFail, 0},
		{"all done succeeds", mkOp(func(o *opsv1.ClusterUpgradeOperation) {
			started(o)
			for i := range o.Status.Steps {
				o.Status.Steps[i].Phase = opsv1.StepPhaseSucceeded
			}
			o.Status.Steps[0].Phase = opsv1.StepPhaseSkipped
		}), actSucceed, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := decide(tc.op, t0)
			g.Expect(got.kind).To(Equal(tc.want))
			g.Expect(got.step).To(Equal(tc.step))
		})
	}
}

func TestVersionSkew(t *testing.T) {
	cases := []struct {
		current, target string
		ok              bool
	}{
		{"1.29", "1.30", true},
		{"1.29.3", "1.30", true},
		{"1.30", "1.30", true},
		{"1.29", "1.31", false},
		{"1.30", "1.29", false},
		{"1.31.1-aliyun.1", "1.32.1-aliyun.1", true},
		{"v1.29.8-eks-a737599", "1.30", true},
		{"junk", "1.30", false},
	}
	for _, tc := range cases {
		t.Run(tc.current+"->"+tc.target, func(t *testing.T) {
			NewWithT(t).Expect(versionSkew(tc.current, tc.target) == "").To(Equal(tc.ok))
		})
	}
	g := NewWithT(t)
	g.Expect(versionSatisfies("1.30.4", "1.30")).To(BeTrue())
	g.Expect(versionSatisfies("1.30.4", "1.30.5")).To(BeFalse())
	g.Expect(versionSatisfies("v1.30.5", "1.30.5")).To(BeTrue())
	g.Expect(versionSatisfies("1.29", "1.30")).To(BeFalse())
}

// FuzzDecide builds arbitrary statuses and checks that decide always picks
// a legal action: nothing on a terminal operation, never a start of a step
// that records a cloud operation, nothing new while paused or cancelled.
func FuzzDecide(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3}, false, false, int64(0), uint8(0))
	f.Add([]byte{2, 2, 1, 0, 4}, true, false, int64(3600), uint8(3))
	f.Add([]byte{1, 1, 1, 1, 1, 1}, false, true, int64(-10), uint8(7))
	phases := []opsv1.StepPhase{opsv1.StepPhasePending, opsv1.StepPhaseRunning, opsv1.StepPhaseSucceeded, opsv1.StepPhaseFailed, opsv1.StepPhaseSkipped}
	opPhases := []opsv1.UpgradePhase{"", opsv1.UpgradePhasePending, opsv1.UpgradePhaseScheduled, opsv1.UpgradePhaseRunning, opsv1.UpgradePhasePaused,
		opsv1.UpgradePhaseSucceeded, opsv1.UpgradePhaseFailed, opsv1.UpgradePhaseCancelling, opsv1.UpgradePhaseCancelled}
	f.Fuzz(func(t *testing.T, stepBytes []byte, paused, cancel bool, scheduleOffset int64, phase uint8) {
		op := mkOp(func(o *opsv1.ClusterUpgradeOperation) {
			o.Spec.ClusterAddons = []opsv1.ClusterAddon{{Name: "a", Version: "v1"}}
			o.Spec.NodeGroupUpgrades = append(o.Spec.NodeGroupUpgrades, opsv1.NodeGroupUpgrade{NodeGroupName: "ip", Strategy: opsv1.StrategyInPlace})
			o.Spec.Paused, o.Spec.Cancel = paused, cancel
			sched := metav1.NewTime(t0.Add(time.Duration(scheduleOffset) * time.Second))
			o.Spec.Schedule = &sched
		})
		op.Status.Phase = opPhases[int(phase)%len(opPhases)]
		if len(stepBytes) > 0 {
			op.Status.Steps = buildPlan(&op.Spec)
			for i := range op.Status.Steps {
				b := stepBytes[i%len(stepBytes)]
				op.Status.Steps[i].Phase = phases[int(b)%len(phases)]
				if b&0x40 != 0 {
					op.Status.Steps[i].OperationID = "op"
				}
			}
			if stepBytes[0]&0x80 != 0 {
				st := metav1.NewTime(t0)
				op.Status.StartTime = &st
			}
		}
		a := decide(op, t0)
		if op.Status.Phase.IsTerminal() && a.kind != actNone {
			t.Fatalf("terminal phase %s got %s", op.Status.Phase, a.kind)
		}
		if a.step >= len(op.Status.Steps) {
			t.Fatalf("step index %d out of range", a.step)
		}
		switch a.kind {
		case actRunStep:
			s := op.Status.Steps[a.step]
			if s.OperationID != "" && isCloudAction(s.Action) && s.Phase == opsv1.StepPhaseRunning {
				t.Fatalf("would start step %s again though it records operation %q", s.ID, s.OperationID)
			}
			if paused || cancel {
				t.Fatalf("runs step %s while paused=%t cancel=%t", s.ID, paused, cancel)
			}
			if s.Phase.IsTerminal() {
				t.Fatalf("runs finished step %s (%s)", s.ID, s.Phase)
			}
		case actPreflight:
			if op.Status.StartTime != nil || paused || cancel {
				t.Fatalf("preflight after start or while paused/cancelled")
			}
		case actPoll:
			if !inFlight(&op.Status.Steps[a.step]) {
				t.Fatalf("polls a step with nothing in flight")
			}
		case actSucceed:
			for _, s := range op.Status.Steps {
				if s.Phase != opsv1.StepPhaseSucceeded && s.Phase != opsv1.StepPhaseSkipped {
					t.Fatalf("succeeds with step %s %s", s.ID, s.Phase)
				}
			}
		}
	})
}
