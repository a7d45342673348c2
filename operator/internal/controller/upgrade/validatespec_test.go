package upgrade

import (
	"testing"

	. "github.com/onsi/gomega"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// TestValidateSpec: the operator's own check of vmClusterHelmValues (before
// the preflight and again before the patch) names what is wrong; values
// within the allowlist pass.
func TestValidateSpec(t *testing.T) {
	g := NewWithT(t)
	spec := &opsv1.ClusterUpgradeOperationSpec{NodeGroupUpgrades: []opsv1.NodeGroupUpgrade{
		{NodeGroupName: "a", VMClusterHelmValues: opsv1.VMClusterHelmValues{"vmstorage": {ReplicaCount: new(int32(3)), NodeSelector: map[string]string{"k": "v"}}}},
	}}
	g.Expect(validateSpec(spec)).To(BeEmpty())
	spec.NodeGroupUpgrades = append(spec.NodeGroupUpgrades,
		opsv1.NodeGroupUpgrade{NodeGroupName: "b", VMClusterHelmValues: opsv1.VMClusterHelmValues{"vmstorage": {ReplicaCount: new(int32(0))}, "vminsert": {}}})
	msg := validateSpec(spec)
	g.Expect(msg).To(ContainSubstring("nodeGroupUpgrades[1].vmClusterHelmValues: vminsert is not allowed"))
	g.Expect(msg).To(ContainSubstring("vmstorage.replicaCount must be at least 1"))
}
