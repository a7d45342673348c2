package exclusion

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

var t0 = time.Date(2026, 5, 6, 2, 0, 0, 0, time.UTC)

type opt func(*opsv1.ClusterUpgradeOperation)

func op(name string, age time.Duration, opts ...opt) opsv1.ClusterUpgradeOperation {
	o := opsv1.ClusterUpgradeOperation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(t0.Add(-age))},
		Spec:       opsv1.ClusterUpgradeOperationSpec{CloudProvider: "mock", Region: "r", K8sClusterName: "c", TargetVersion: "1.30"},
	}
	for _, f := range opts {
		f(&o)
	}
	return o
}

func phase(p opsv1.UpgradePhase) opt {
	return func(o *opsv1.ClusterUpgradeOperation) { o.Status.Phase = p }
}

func started(o *opsv1.ClusterUpgradeOperation) {
	now := metav1.NewTime(t0)
	o.Status.StartTime, o.Status.Phase = &now, opsv1.UpgradePhaseRunning
}

func cluster(name string) opt {
	return func(o *opsv1.ClusterUpgradeOperation) { o.Spec.K8sClusterName = name }
}

func TestBlocker(t *testing.T) {
	cases := []struct {
		name   string
		self   opsv1.ClusterUpgradeOperation
		others []opsv1.ClusterUpgradeOperation
		want   string // "" : runs
	}{
		{name: "alone", self: op("a", 0)},
		{name: "oldest runs", self: op("a", time.Hour), others: []opsv1.ClusterUpgradeOperation{op("b", time.Minute)}},
		{name: "newer waits for the oldest", self: op("c", 0), others: []opsv1.ClusterUpgradeOperation{op("b", time.Minute), op("a", time.Hour)}, want: "a"},
		{name: "same second: by name", self: op("b", 0), others: []opsv1.ClusterUpgradeOperation{op("a", 0)}, want: "a"},
		{name: "terminal ones do not count", self: op("b", 0), others: []opsv1.ClusterUpgradeOperation{
			op("a", time.Hour, phase(opsv1.UpgradePhaseSucceeded)), op("x", time.Hour, phase(opsv1.UpgradePhaseFailed)), op("y", time.Hour, phase(opsv1.UpgradePhaseCancelled))}},
		{name: "other clusters do not count", self: op("b", 0), others: []opsv1.ClusterUpgradeOperation{op("a", time.Hour, cluster("other"))}},
		{name: "a started newer one goes first", self: op("a", time.Hour), others: []opsv1.ClusterUpgradeOperation{op("b", 0, started)}, want: "b"},
		{name: "started, alone among started", self: op("a", 0, started), others: []opsv1.ClusterUpgradeOperation{op("b", time.Hour)}},
		{name: "started at the same time: steps back", self: op("a", time.Hour, started), others: []opsv1.ClusterUpgradeOperation{op("b", 0, started)}, want: "b"},
		{name: "itself is not a blocker", self: op("a", 0), others: []opsv1.ClusterUpgradeOperation{op("a", 0)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := blocker(&tc.self, tc.others)
			if tc.want == "" {
				g.Expect(got).To(BeNil())
				return
			}
			g.Expect(got).NotTo(BeNil())
			g.Expect(got.Name).To(Equal(tc.want))
		})
	}
}

// FuzzBlockerNeverDeadlocks: of any set of non-terminal operations of one
// cluster, none started, exactly one runs.
func FuzzBlockerNeverDeadlocks(f *testing.F) {
	f.Add([]byte{3, 1, 4, 1, 5})
	f.Fuzz(func(t *testing.T, ages []byte) {
		if len(ages) == 0 || len(ages) > 20 {
			return
		}
		var ops []opsv1.ClusterUpgradeOperation
		for i, a := range ages {
			ops = append(ops, op(string(rune('a'+i)), time.Duration(a)*time.Second))
		}
		runs := 0
		for i := range ops {
			if blocker(&ops[i], ops) == nil {
				runs++
			}
		}
		if runs != 1 {
			t.Fatalf("%d operations run, want 1", runs)
		}
	})
}
