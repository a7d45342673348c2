package exclusion

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

func vmop(name, vmcluster string, age time.Duration, startedOp bool, p opsv1.OperationPhase) opsv1.VMClusterOperation {
	o := opsv1.VMClusterOperation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "observability", Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(t0.Add(-age))},
		Spec:       opsv1.VMClusterOperationSpec{VMCluster: opsv1.VMClusterReference{Name: vmcluster}, Type: opsv1.OperationRestart},
	}
	if startedOp {
		now := metav1.NewTime(t0)
		o.Status.StartTime = &now
	}
	o.Status.Phase = p
	return o
}

func TestOperationBlocker(t *testing.T) {
	name := func(o *opsv1.VMClusterOperation) string {
		if o == nil {
			return ""
		}
		return o.Name
	}
	cases := []struct {
		name string
		op   opsv1.VMClusterOperation
		all  []opsv1.VMClusterOperation
		want string
	}{
		{"alone", vmop("a", "vm", time.Minute, false, ""), nil, ""},
		{"an older pending one goes first", vmop("b", "vm", time.Minute, false, ""),
			[]opsv1.VMClusterOperation{vmop("a", "vm", 2*time.Minute, false, "")}, "a"},
		{"a younger started one goes first", vmop("a", "vm", 2*time.Minute, false, ""),
			[]opsv1.VMClusterOperation{vmop("b", "vm", time.Minute, true, opsv1.OperationPhaseRunning)}, "b"},
		{"another vmcluster does not count", vmop("b", "vm", time.Minute, false, ""),
			[]opsv1.VMClusterOperation{vmop("a", "other", 2*time.Minute, true, opsv1.OperationPhaseRunning)}, ""},
		{"a finished one does not count", vmop("b", "vm", time.Minute, false, ""),
			[]opsv1.VMClusterOperation{vmop("a", "vm", 2*time.Minute, true, opsv1.OperationPhaseCancelled)}, ""},
		{"both started: the older goes on", vmop("a", "vm", 2*time.Minute, true, opsv1.OperationPhaseRunning),
			[]opsv1.VMClusterOperation{vmop("b", "vm", time.Minute, true, opsv1.OperationPhaseRunning)}, ""},
		{"both started: the younger steps back", vmop("b", "vm", time.Minute, true, opsv1.OperationPhaseRunning),
			[]opsv1.VMClusterOperation{vmop("a", "vm", 2*time.Minute, true, opsv1.OperationPhaseRunning)}, "a"},
		{"itself is ignored", vmop("a", "vm", time.Minute, true, ""),
			[]opsv1.VMClusterOperation{vmop("a", "vm", time.Minute, true, "")}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			op := tc.op
			NewWithT(t).Expect(name(operationBlocker(&op, append(tc.all, op)))).To(Equal(tc.want))
		})
	}
}

// TestOperationActing: which active operation a ClusterRestore waits for.
// With ActiveRestore's "younger and not acting does not count", an
// operation and a restore that both claimed never wait for each other.
func TestOperationActing(t *testing.T) {
	vm := types.NamespacedName{Namespace: "observability", Name: "vm"}
	restore := &opsv1.ClusterRestore{ObjectMeta: metav1.ObjectMeta{Namespace: "observability", Name: "r", CreationTimestamp: metav1.NewTime(t0.Add(-time.Minute))}}
	acting := func(o opsv1.VMClusterOperation) opsv1.VMClusterOperation {
		o.Status.Steps = []opsv1.OperationStep{{Phase: opsv1.StepPhaseRunning}}
		return o
	}
	cases := []struct {
		name string
		all  []opsv1.VMClusterOperation
		want string
	}{
		{"none", nil, ""},
		{"not started", []opsv1.VMClusterOperation{vmop("a", "vm", 2*time.Minute, false, opsv1.OperationPhasePending)}, ""},
		{"started and older", []opsv1.VMClusterOperation{vmop("a", "vm", 2*time.Minute, true, opsv1.OperationPhaseRunning)}, "a"},
		{"started, younger, no step yet: the restore goes first", []opsv1.VMClusterOperation{vmop("a", "vm", 0, true, opsv1.OperationPhaseRunning)}, ""},
		{"started, younger, a step running", []opsv1.VMClusterOperation{acting(vmop("a", "vm", 0, true, opsv1.OperationPhaseRunning))}, "a"},
		{"finished", []opsv1.VMClusterOperation{acting(vmop("a", "vm", 2*time.Minute, true, opsv1.OperationPhaseSucceeded))}, ""},
		{"another vmcluster", []opsv1.VMClusterOperation{acting(vmop("a", "other", 2*time.Minute, true, opsv1.OperationPhaseRunning))}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if o := operationActing(vm, restore, tc.all); o != nil {
				got = o.Name
			}
			NewWithT(t).Expect(got).To(Equal(tc.want))
		})
	}
}
