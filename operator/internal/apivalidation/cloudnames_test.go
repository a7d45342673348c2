package apivalidation

import (
	"strings"
	"testing"

	"github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// cloudName is a real-world name on one cloud, for one field, and whether
// the cloud allows it.
type cloudName struct {
	provider v1alpha1.CloudProvider
	field    string // k8sClusterName, nodeGroupName or newNodeGroupName
	name     string
	ok       bool
}

var cloudNames = []cloudName{
	{v1alpha1.CloudProviderEKS, "k8sClusterName", "Prod_Cluster-01", true},
	{v1alpha1.CloudProviderEKS, "k8sClusterName", "prod-cluster-", true},
	{v1alpha1.CloudProviderEKS, "k8sClusterName", "_prod", false},
	{v1alpha1.CloudProviderEKS, "nodeGroupName", "NG_blue-01", true},
	{v1alpha1.CloudProviderEKS, "nodeGroupName", "ng.blue", false},
	{v1alpha1.CloudProviderEKS, "newNodeGroupName", "NG_green-01", true},
	{v1alpha1.CloudProviderGKE, "k8sClusterName", "prod-cluster-1", true},
	{v1alpha1.CloudProviderGKE, "k8sClusterName", "Prod-Cluster", false},
	{v1alpha1.CloudProviderGKE, "k8sClusterName", "g" + strings.Repeat("k", 40), false},
	{v1alpha1.CloudProviderGKE, "nodeGroupName", "default-pool", true},
	{v1alpha1.CloudProviderGKE, "newNodeGroupName", "pool-", false},
	{v1alpha1.CloudProviderAKS, "k8sClusterName", "myAKS_cluster", true},
	{v1alpha1.CloudProviderAKS, "k8sClusterName", "myAKS_", false},
	{v1alpha1.CloudProviderAKS, "nodeGroupName", "userpool1", true},
	{v1alpha1.CloudProviderAKS, "nodeGroupName", "user-pool", false},
	{v1alpha1.CloudProviderAKS, "newNodeGroupName", "nodepool12345", false},
	{v1alpha1.CloudProviderACK, "k8sClusterName", "生产集群-01", true},
	{v1alpha1.CloudProviderACK, "k8sClusterName", "Prod_ACK", true},
	{v1alpha1.CloudProviderACK, "k8sClusterName", "-集群", false},
	{v1alpha1.CloudProviderACK, "nodeGroupName", "默认节点池", true},
	{v1alpha1.CloudProviderACK, "newNodeGroupName", "pool one", false},
	{v1alpha1.CloudProviderMock, "k8sClusterName", "dev-cluster", true},
	{v1alpha1.CloudProviderMock, "k8sClusterName", "Dev_Cluster", false},
	{v1alpha1.CloudProviderMock, "nodeGroupName", "ng_1", false},
}

// TestCloudNames: the CRD accepts each cloud's real-world names and
// refuses what the cloud refuses, exactly as the shared rule
// (v1alpha1.ClusterNameRule, NodeGroupNameRule) the REST API applies
// decides, and in its words: the CEL patterns in the markers are the
// rule's.
func TestCloudNames(t *testing.T) {
	var cases []specCase
	for _, c := range cloudNames {
		rule, _ := v1alpha1.NodeGroupNameRule(c.provider)
		if c.field == "k8sClusterName" {
			rule, _ = v1alpha1.ClusterNameRule(c.provider)
		}
		if (rule.Check(c.name) == "") != c.ok {
			t.Fatalf("the shared rule of %s %s disagrees on %q", c.provider, c.field, c.name)
		}
		tc := specCase{name: string(c.provider) + " " + c.field + " " + c.name, mutate: onCloud(c)}
		if !c.ok {
			field, msg := "spec.nodeGroupUpgrades", "nodeGroupName and newNodeGroupName must be "+rule.Description
			if c.field == "k8sClusterName" {
				field, msg = "spec.k8sClusterName", "k8sClusterName must be "+rule.Description
			}
			tc.reject = rejected(field, msg)
		}
		cases = append(cases, tc)
	}
	runCreateCases(t, v1alpha1.ClusterUpgradeOperationKind, upgradeSpec, cases)
}

// onCloud sets the provider and puts the name in its field, the other
// names valid on every cloud (lowercase letters).
func onCloud(c cloudName) func(obj) {
	return func(s obj) {
		s["cloudProvider"], s["k8sClusterName"] = string(c.provider), "prod"
		delete(s, "clusterAddons")
		entry := obj{"nodeGroupName": "pool", "strategy": "blue-green", "newNodeGroupName": "poolnew"}
		switch c.field {
		case "k8sClusterName":
			s["k8sClusterName"] = c.name
		default:
			entry[c.field] = c.name
		}
		s["nodeGroupUpgrades"] = []any{entry}
	}
}
