package upgrade

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// runUntil plays the plan up to the step with id stop: the steps before it
// succeeded (cloud ones with an operation id), stop itself started and is
// left in phase (Running, Succeeded or Failed).
func runUntil(op *opsv1.ClusterUpgradeOperation, stop string, phase opsv1.StepPhase) {
	started(op)
	ts := metav1.NewTime(t0)
	for i := range op.Status.Steps {
		st := &op.Status.Steps[i]
		st.StartTime, st.Phase = &ts, opsv1.StepPhaseSucceeded
		if isCloudAction(st.Action) || st.Action == opsv1.ActionRolloutVMStorage {
			st.OperationID = "op-" + st.ID
		}
		if st.ID == stop {
			st.Phase = phase
			return
		}
	}
	panic("no step " + stop)
}

func TestLeftBehind(t *testing.T) {
	ng := func(a opsv1.StepAction) string { return opsv1.NodeGroupStepID("ng", a) }
	withRollout := func(op *opsv1.ClusterUpgradeOperation) {
		op.Spec.NodeGroupUpgrades[0].RequiresVMStorageRollout = true
	}
	inPlace := func(op *opsv1.ClusterUpgradeOperation) {
		op.Spec.NodeGroupUpgrades = []opsv1.NodeGroupUpgrade{{NodeGroupName: "ng", Strategy: opsv1.StrategyInPlace}}
	}
	cases := []struct {
		name   string
		mut    func(*opsv1.ClusterUpgradeOperation)
		stop   string
		phase  opsv1.StepPhase
		failed bool
		// after changes the played steps.
		after func(*opsv1.ClusterUpgradeOperation)
		// want is "Kind Name: reason substring" per entry, in order.
		want []string
	}{
		{name: "cancelled before the first step", want: nil},
		{name: "control plane upgraded", stop: opsv1.ControlPlaneStepID, phase: opsv1.StepPhaseSucceeded,
			want: []string{"ControlPlane c: upgraded to 1.30; a control plane cannot be downgraded"}},
		{name: "control plane already at the version: nothing changed", stop: opsv1.ControlPlaneStepID, phase: opsv1.StepPhaseSucceeded,
			after: func(op *opsv1.ClusterUpgradeOperation) { op.Status.Steps[0].OperationID = "" }, want: nil},
		{name: "addon updated", mut: func(op *opsv1.ClusterUpgradeOperation) {
			op.Spec.ClusterAddons = []opsv1.ClusterAddon{{Name: "vpc-cni", Version: "v1.18.5"}}
		}, stop: opsv1.AddonStepID("vpc-cni"), phase: opsv1.StepPhaseSucceeded,
			want: []string{"ControlPlane c:", "Addon vpc-cni: updated to v1.18.5"}},
		{name: "in-place node group upgraded", mut: inPlace, stop: ng(opsv1.ActionUpgradeNodeGroup), phase: opsv1.StepPhaseSucceeded,
			want: []string{"ControlPlane c:", "NodeGroup ng: upgraded in place to 1.30"}},
		{name: "new group created", stop: ng(opsv1.ActionCreateNodeGroup), phase: opsv1.StepPhaseSucceeded,
			want: []string{"ControlPlane c:", "NodeGroup ng2: created at 1.30; the old node group ng still runs the workloads; both node groups are billed"}},
		{name: "cancelled while waiting for Nodes", stop: ng(opsv1.ActionWaitNodesReady), phase: opsv1.StepPhaseRunning,
			want: []string{"ControlPlane c:", "NodeGroup ng2: created at 1.30; the old node group ng still runs"}},
		{name: "cancelled during the rollout", mut: withRollout, stop: ng(opsv1.ActionRolloutVMStorage), phase: opsv1.StepPhaseRunning,
			want: []string{"ControlPlane c:", "NodeGroup ng2: created at 1.30; the old node group ng still runs the workloads; vmstorage was moved to it",
				"VMCluster vmcluster: patched with vmClusterHelmValues (and recorded as a post-renderer on its HelmRelease, if it has one): vmstorage is placed on node group ng2"}},
		{name: "cancelled after the cordon", stop: ng(opsv1.ActionCordonNodes), phase: opsv1.StepPhaseSucceeded,
			want: []string{"ControlPlane c:", "NodeGroup ng2: created at 1.30; the old node group ng still runs"}},
		{name: "cancelled during the drain", stop: ng(opsv1.ActionDrainNodes), phase: opsv1.StepPhaseRunning,
			want: []string{"ControlPlane c:", "NodeGroup ng2: created at 1.30; pods evicted from the old node group ng",
				"NodeGroup ng: partly drained, not deleted; the Nodes this operation cordoned were uncordoned by the cancel"}},
		{name: "old group deleted: nothing of the node group is left", stop: ng(opsv1.ActionDeleteNodeGroup), phase: opsv1.StepPhaseSucceeded,
			want: []string{"ControlPlane c:"}},
		{name: "failed during the drain: Nodes stay cordoned", stop: ng(opsv1.ActionDrainNodes), phase: opsv1.StepPhaseFailed, failed: true,
			want: []string{"ControlPlane c:", "NodeGroup ng2: created", "NodeGroup ng: partly drained, not deleted; its Nodes stay cordoned"}},
		{name: "failed creation in the cloud", stop: ng(opsv1.ActionCreateNodeGroup), phase: opsv1.StepPhaseFailed, failed: true,
			want: []string{"ControlPlane c:", "NodeGroup ng2: the creation failed in the cloud (its operation id is in the step)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			op := mkOp(tc.mut)
			if tc.stop == "" {
				planned(op)
			} else {
				runUntil(op, tc.stop, tc.phase)
			}
			if tc.after != nil {
				tc.after(op)
			}
			r := &Reconciler{Now: func() time.Time { return t0 }}
			if tc.failed {
				r.fail(op, "failed")
			} else {
				r.cancel(op)
			}
			var got []string
			for _, lb := range op.Status.LeftBehind {
				g.Expect(lb.StepID).NotTo(BeEmpty())
				got = append(got, string(lb.Kind)+" "+lb.Name+": "+lb.Reason)
			}
			g.Expect(got).To(HaveLen(len(tc.want)), strings.Join(got, "\n"))
			for i := range tc.want {
				g.Expect(got[i]).To(HavePrefix(tc.want[i]))
			}
		})
	}
}

// TestCancelRetriesUncordon: an API error while uncordoning keeps the
// operation Cancelling with the error in the step's message and a requeue;
// the next pass uncordons and ends it.
func TestCancelRetriesUncordon(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(corev1.AddToScheme(scheme)).To(Succeed())
	ours := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{opsv1.CordonedByAnnotation: "ns/op"}}, Spec: corev1.NodeSpec{Unschedulable: true}}
	person := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}, Spec: corev1.NodeSpec{Unschedulable: true}}
	other := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n3", Annotations: map[string]string{opsv1.CordonedByAnnotation: "ns/other"}}, Spec: corev1.NodeSpec{Unschedulable: true}}
	failures := 1
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ours, person, other).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if failures > 0 {
				failures--
				return apierrors.NewServiceUnavailable("etcd leader changed")
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	}).Build()
	r := &Reconciler{Client: c, APIReader: c, Now: func() time.Time { return t0 }, Options: DefaultOptions()}
	op := mkOp(nil)
	op.Namespace, op.Name = "ns", "op"
	runUntil(op, opsv1.NodeGroupStepID("ng", opsv1.ActionDrainNodes), opsv1.StepPhaseRunning)
	op.Spec.Cancel = true
	cur := currentStep(op.Status.Steps)

	s := &scope{op: op}
	r.cancelOperation(context.Background(), s, cur)
	g.Expect(op.Status.Phase.IsTerminal()).To(BeFalse(), "not cancelled before the uncordon is written")
	g.Expect(s.requeue).To(BeNumerically(">", 0))
	g.Expect(op.Status.Steps[cur].Message).To(ContainSubstring("retrying: uncordoning node n1"))
	g.Expect(op.Status.Steps[cur].Message).To(ContainSubstring("etcd leader changed"))
	r.summarize(s)
	g.Expect(op.Status.Phase).To(Equal(opsv1.UpgradePhaseCancelling))
	g.Expect(cancellingMessage(op)).To(ContainSubstring("etcd leader changed"))

	s = &scope{op: op}
	r.cancelOperation(context.Background(), s, cur)
	g.Expect(op.Status.Phase).To(Equal(opsv1.UpgradePhaseCancelled))
	for name, unschedulable := range map[string]bool{"n1": false, "n2": true, "n3": true} {
		n := &corev1.Node{}
		g.Expect(c.Get(context.Background(), client.ObjectKey{Name: name}, n)).To(Succeed())
		g.Expect(n.Spec.Unschedulable).To(Equal(unschedulable), name)
		if name == "n1" {
			g.Expect(n.Annotations).NotTo(HaveKey(opsv1.CordonedByAnnotation))
		}
	}
}

// FuzzLeftBehind: for any step record, whether the operation is cancelled
// or fails, leftBehind stays within the CRD's bounds (a status the API
// server refuses would keep the operation from ever ending) and names
// only steps of the plan.
func FuzzLeftBehind(f *testing.F) {
	f.Add([]byte{2, 2, 2, 0}, uint8(3), false)
	f.Add([]byte{2, 0x42, 0x43, 1, 0x82}, uint8(32), true)
	phases := []opsv1.StepPhase{opsv1.StepPhasePending, opsv1.StepPhaseRunning, opsv1.StepPhaseSucceeded, opsv1.StepPhaseFailed, opsv1.StepPhaseSkipped}
	f.Fuzz(func(t *testing.T, stepBytes []byte, groups uint8, failed bool) {
		if len(stepBytes) == 0 {
			return
		}
		long := strings.Repeat("x", 63)
		op := mkOp(func(o *opsv1.ClusterUpgradeOperation) {
			o.Spec.K8sClusterName = strings.Repeat("c", 100)
			o.Spec.TargetVersion = "1.31.1-" + strings.Repeat("a", 56)
			o.Spec.NodeGroupUpgrades = nil
			for i := range 32 {
				o.Spec.ClusterAddons = append(o.Spec.ClusterAddons, opsv1.ClusterAddon{Name: fmt.Sprintf("%s%02d", long[:61], i), Version: "v" + strings.Repeat("1", 127)})
			}
			for i := range int(groups)%32 + 1 {
				name := fmt.Sprintf("%s%02d", long[:61], i)
				o.Spec.NodeGroupUpgrades = append(o.Spec.NodeGroupUpgrades, opsv1.NodeGroupUpgrade{
					NodeGroupName: name, Strategy: opsv1.StrategyBlueGreen, NewNodeGroupName: "n" + name[1:], RequiresVMStorageRollout: true,
				})
			}
		})
		started(op)
		ts := metav1.NewTime(t0)
		for i := range op.Status.Steps {
			b := stepBytes[i%len(stepBytes)]
			op.Status.Steps[i].Phase = phases[int(b)%len(phases)]
			if b&0x40 != 0 {
				op.Status.Steps[i].OperationID = strings.Repeat("o", 8192)
			}
			if b&0x80 != 0 || op.Status.Steps[i].Phase != opsv1.StepPhasePending {
				op.Status.Steps[i].StartTime = &ts
			}
		}
		r := &Reconciler{Now: func() time.Time { return t0 }}
		if failed {
			r.fail(op, "failed")
		} else {
			r.cancel(op)
		}
		lb := op.Status.LeftBehind
		if len(lb) > maxLeftBehind {
			t.Fatalf("%d entries", len(lb))
		}
		for _, e := range lb {
			switch e.Kind {
			case opsv1.LeftBehindControlPlane, opsv1.LeftBehindAddon, opsv1.LeftBehindNodeGroup, opsv1.LeftBehindVMCluster:
			default:
				t.Fatalf("kind %q", e.Kind)
			}
			if e.Name == "" || len(e.Name) > 253 || len(e.Namespace) > 63 || e.Reason == "" || len(e.Reason) > maxLeftBehindReason || op.Status.Step(e.StepID) == nil {
				t.Fatalf("out of bounds: %+v", e)
			}
		}
	})
}
