// Package troubleshoot is the troubleshooting API of a vmcluster, under
// /api/v1/observability-ops/vmclusters/{vmclusterId}: its resource tree
// (the HelmRelease down to the Pods), its Pods, a Pod's logs (optionally
// followed) and a command run in a Pod's container.
//
// Ownership is found from owner references and Helm's release labels and
// annotations, never from name patterns: the VMCluster is the object of
// the VMCluster kind whose Helm release annotations name the vmcluster's
// release; the StatefulSets, Deployments and Services are the ones the
// VictoriaMetrics operator created with an owner reference to it; Pods
// hang off them (through ReplicaSets for Deployments) and PVCs off the
// Pods that mount them. A Pod is part of a vmcluster exactly when its
// chain of controller owner references reaches the VMCluster; every Pod
// route answers 404 for any other Pod.
//
// The handler binds and validates, the service decides, Kubernetes is
// read live (not from the informer cache: the objects are many and
// short-lived, and a troubleshooting read must not be stale). Health is a
// pure function of each object (health.go).
package troubleshoot

// Health of a node of the tree.
type Health string

// The health values.
const (
	Healthy     Health = "Healthy"
	Progressing Health = "Progressing"
	Degraded    Health = "Degraded"
	Missing     Health = "Missing"
)

// Node is one object of the resource tree.
type Node struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	UID       string `json:"uid,omitempty"`
	Health    Health `json:"health"`
	// HealthReason says why the object is not Healthy.
	HealthReason string `json:"healthReason,omitempty"`
	// Ready and Desired are counts of replicas (workloads), of ready
	// containers (Pods); absent for other kinds.
	Ready    *int32 `json:"ready,omitempty"`
	Desired  *int32 `json:"desired,omitempty"`
	Children []Node `json:"children,omitempty"`
}

// Tree is the body of GET …/resources.
type Tree struct {
	// Root is the HelmRelease.
	Root Node `json:"root"`
}

// Pod is one Pod of a vmcluster.
type Pod struct {
	Name string `json:"name"`
	// Component is the VictoriaMetrics component (the VM operator's
	// app.kubernetes.io/name label: vmstorage, vmselect, vminsert).
	Component string `json:"component"`
	Phase     string `json:"phase"`
	Ready     bool   `json:"ready"`
	Restarts  int32  `json:"restarts"`
	Node      string `json:"node,omitempty"`
	// NodeGroup is the value of the Node's node-group label (of any
	// supported cloud), empty when the Node has none.
	NodeGroup  string      `json:"nodeGroup,omitempty"`
	CreateTime string      `json:"createTime,omitempty"`
	AgeSeconds int64       `json:"ageSeconds"`
	Health     Health      `json:"health"`
	Reason     string      `json:"healthReason,omitempty"`
	Containers []Container `json:"containers"`
}

// Container is the state of one container of a Pod.
type Container struct {
	Name     string `json:"name"`
	Ready    bool   `json:"ready"`
	Restarts int32  `json:"restarts"`
	// State is running, waiting or terminated; StateReason the waiting or
	// terminated reason.
	State           string       `json:"state"`
	StateReason     string       `json:"stateReason,omitempty"`
	LastTermination *Termination `json:"lastTermination,omitempty"`
}

// Termination is how a container's previous run ended.
type Termination struct {
	Reason     string `json:"reason,omitempty"`
	ExitCode   int32  `json:"exitCode"`
	FinishedAt string `json:"finishedAt,omitempty"`
}

// PodList is the body of GET …/pods.
type PodList struct {
	Pods          []Pod  `json:"pods"`
	NextPageToken string `json:"next_page_token,omitempty"`
}

// LogRequest is a validated logs query.
type LogRequest struct {
	Container    string
	TailLines    *int64
	SinceSeconds *int64
	Previous     bool
	Timestamps   bool
	Follow       bool
	LimitBytes   int64
}

// ExecRequest is the body of POST …/pods/{pod}/exec.
type ExecRequest struct {
	Container      string   `json:"container"`
	Command        []string `json:"command"`
	TimeoutSeconds int      `json:"timeoutSeconds"`
}

// ExecResult is the answer of an exec.
type ExecResult struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int    `json:"exitCode"`
	// Truncated reports that stdout or stderr was cut at the server's
	// output limit.
	Truncated bool `json:"truncated"`
	// TimedOut reports that the command was still running at
	// timeoutSeconds (ExitCode is -1 then).
	TimedOut bool `json:"timedOut"`
}
