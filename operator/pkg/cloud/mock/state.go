package mock

import (
	"time"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// ClusterState is one simulated cluster, persisted as JSON in a ConfigMap.
type ClusterState struct {
	Name       string                     `json:"name"`
	Region     string                     `json:"region"`
	Version    string                     `json:"version"`
	Status     string                     `json:"status"`
	NodeGroups map[string]*NodeGroupState `json:"nodeGroups"`
	Addons     map[string]*AddonState     `json:"addons"`
	Operations map[string]*Operation      `json:"operations,omitempty"`
	// Tokens maps an idempotency token to the operation it started.
	Tokens map[string]string `json:"tokens,omitempty"`
	// NextOp numbers operations.
	NextOp int `json:"nextOp"`
}

// NodeGroupState is a simulated node group; its Nodes exist in Kubernetes.
type NodeGroupState struct {
	Version       string            `json:"version"`
	Status        string            `json:"status"`
	Size          int32             `json:"size"`
	InstanceTypes []string          `json:"instanceTypes,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	Taints        []cloud.Taint     `json:"taints,omitempty"`
}

// AddonState is a simulated addon.
type AddonState struct {
	Version           string   `json:"version"`
	AvailableVersions []string `json:"availableVersions"`
}

// Operation is a simulated long-running operation. Its effect is applied
// when a poll finds it due.
type Operation struct {
	ID        string         `json:"id"`
	Kind      string         `json:"kind"`
	Target    string         `json:"target"`
	Version   string         `json:"version,omitempty"`
	Group     *NodeGroupSpec `json:"group,omitempty"`
	Started   time.Time      `json:"started"`
	Due       time.Time      `json:"due"`
	State     string         `json:"state"`
	Message   string         `json:"message,omitempty"`
	FailAtEnd bool           `json:"failAtEnd,omitempty"`
}

// NodeGroupSpec is the node group a create operation makes.
type NodeGroupSpec struct {
	Name          string            `json:"name"`
	Version       string            `json:"version"`
	Size          int32             `json:"size"`
	InstanceTypes []string          `json:"instanceTypes,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	Taints        []cloud.Taint     `json:"taints,omitempty"`
}

// Operation kinds, also the names used by the call log and fault injection.
const (
	OpDescribeCluster          = "DescribeCluster"
	OpStartControlPlaneUpgrade = "StartControlPlaneUpgrade"
	OpListNodeGroups           = "ListNodeGroups"
	OpStartNodeGroupUpgrade    = "StartNodeGroupUpgrade"
	OpStartCreateNodeGroup     = "StartCreateNodeGroup"
	OpStartDeleteNodeGroup     = "StartDeleteNodeGroup"
	OpListAddons               = "ListAddons"
	OpStartAddonUpdate         = "StartAddonUpdate"
	OpPollOperation            = "PollOperation"
)

// IsMutating reports whether a call kind changes the cloud.
func IsMutating(op string) bool {
	switch op {
	case OpStartControlPlaneUpgrade, OpStartNodeGroupUpgrade, OpStartCreateNodeGroup, OpStartDeleteNodeGroup, OpStartAddonUpdate:
		return true
	}
	return false
}
