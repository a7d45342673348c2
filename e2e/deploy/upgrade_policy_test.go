package deploy

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// TestUpgradeRolloutNamespacePolicy applies the chart's policy on
// ClusterUpgradeOperations to the real API server: a VMStorage rollout that
// targets a VMCluster outside the operation's namespace and observability
// is refused at admission; its own namespace, observability or an omitted
// namespace are admitted.
func TestUpgradeRolloutNamespacePolicy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	name := applyPolicy(t, "upgrade-policy", ns, "ops-server-upgrade-rollout-namespace")
	op := func(target *opsv1.VMClusterReference) *opsv1.ClusterUpgradeOperation {
		return &opsv1.ClusterUpgradeOperation{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "u-"},
			Spec: opsv1.ClusterUpgradeOperationSpec{K8sClusterName: "c", Region: "r", CloudProvider: opsv1.CloudProviderMock, TargetVersion: "1.30",
				NodeGroupUpgrades: []opsv1.NodeGroupUpgrade{{NodeGroupName: "a", Strategy: opsv1.StrategyBlueGreen, NewNodeGroupName: "b",
					RequiresVMStorageRollout: true, VMClusterHelmValues: opsv1.VMClusterHelmValues{}, VMCluster: target}}},
		}
	}
	g.Eventually(func() error {
		return env.Client.Create(ctx, op(&opsv1.VMClusterReference{Namespace: "kube-system", Name: "vm"}), client.DryRunAll)
	}, 60*time.Second, 200*time.Millisecond).Should(MatchError(And(
		ContainSubstring("ValidatingAdmissionPolicy '"+name+"'"),
		ContainSubstring("may only target a VMCluster in the operation's namespace "+ns+" or in observability"),
	)))
	for _, target := range []*opsv1.VMClusterReference{nil, {Name: "vm"}, {Namespace: ns, Name: "vm"}, {Namespace: "observability", Name: "vm"}} {
		g.Expect(env.Client.Create(ctx, op(target))).To(Succeed(), "%+v", target)
	}
}
