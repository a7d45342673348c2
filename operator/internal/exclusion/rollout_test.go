package exclusion

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// TestRollout: a backup waits for the rollout of the VMCluster its
// operation names (vmCluster, observability/vmcluster when omitted), and
// only while that rollout step runs.
func TestRollout(t *testing.T) {
	rolling := func(name string, target *opsv1.VMClusterReference, step opsv1.StepPhase, p opsv1.UpgradePhase) *opsv1.ClusterUpgradeOperation {
		o := op(name, 0, phase(p))
		o.Spec.NodeGroupUpgrades = []opsv1.NodeGroupUpgrade{{NodeGroupName: "ng", Strategy: opsv1.StrategyBlueGreen, NewNodeGroupName: "ng2",
			RequiresVMStorageRollout: true, VMCluster: target}}
		o.Status.Steps = []opsv1.UpgradeStep{{ID: opsv1.NodeGroupStepID("ng", opsv1.ActionRolloutVMStorage), Action: opsv1.ActionRolloutVMStorage, Phase: step}}
		return &o
	}
	tests := []struct {
		name string
		op   *opsv1.ClusterUpgradeOperation
		vmc  types.NamespacedName
		want string
	}{
		{"default target, running", rolling("a", nil, opsv1.StepPhaseRunning, opsv1.UpgradePhaseRunning),
			types.NamespacedName{Namespace: "observability", Name: "vmcluster"}, "ops/a"},
		{"default target, another VMCluster", rolling("a", nil, opsv1.StepPhaseRunning, opsv1.UpgradePhaseRunning),
			types.NamespacedName{Namespace: "observability", Name: "metrics"}, ""},
		{"explicit target", rolling("b", &opsv1.VMClusterReference{Namespace: "mon", Name: "metrics"}, opsv1.StepPhaseRunning, opsv1.UpgradePhaseRunning),
			types.NamespacedName{Namespace: "mon", Name: "metrics"}, "ops/b"},
		{"explicit target without namespace", rolling("b", &opsv1.VMClusterReference{Name: "metrics"}, opsv1.StepPhaseRunning, opsv1.UpgradePhaseRunning),
			types.NamespacedName{Namespace: "observability", Name: "metrics"}, "ops/b"},
		{"explicit target, not the default", rolling("b", &opsv1.VMClusterReference{Namespace: "mon", Name: "metrics"}, opsv1.StepPhaseRunning, opsv1.UpgradePhaseRunning),
			types.NamespacedName{Namespace: "observability", Name: "vmcluster"}, ""},
		{"step not started", rolling("c", nil, opsv1.StepPhasePending, opsv1.UpgradePhaseRunning),
			types.NamespacedName{Namespace: "observability", Name: "vmcluster"}, ""},
		{"operation finished", rolling("d", nil, opsv1.StepPhaseRunning, opsv1.UpgradePhaseFailed),
			types.NamespacedName{Namespace: "observability", Name: "vmcluster"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := runtime.NewScheme()
			g.Expect(opsv1.AddToScheme(s)).To(Succeed())
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(tt.op).Build()
			got, err := Rollout(context.Background(), c, tt.vmc)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}
