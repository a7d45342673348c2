// Package vmclusterops is the REST API of ordered Day-2 operations on a
// vmcluster: /api/v1/observability-ops/vmclusters/{vmclusterId}/operations
// (create, dry run, list, get, pause, resume, cancel) over
// VMClusterOperation objects, which ops-operator carries out
// (docs/operations.md).
//
// The handler binds and validates requests; the service resolves the
// vmcluster through the vmclusters API, decides and talks to Kubernetes
// (reads from the informer cache, writes to the API server under the
// ops-server field manager). Translation is pure.
package vmclusterops

import (
	"github.com/tidbcloud/ops-server/apiserver/internal/listing"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
)

// BasePath is the collection path, below a vmcluster.
const BasePath = vmclusters.BasePath + "/:vmclusterId/operations"

// CollectionID is the collection segment of an operation's resource name.
const CollectionID = "operations"

// Request is a POST body.
type Request struct {
	// Type is HorizontalScaling, VerticalScaling or Restart.
	Type string `json:"type"`
	// HorizontalScaling is the target replicas per component.
	HorizontalScaling *Replicas `json:"horizontal_scaling,omitempty"`
	// VerticalScaling is the target resources per component.
	VerticalScaling *ResourcesPerComponent `json:"vertical_scaling,omitempty"`
	// Restart names the components to restart.
	Restart *Restart `json:"restart,omitempty"`
	// Order is an explicit component order.
	Order []string `json:"order,omitempty"`
	// AcknowledgeReplicationRisk allows vmstorage below replicationFactor,
	// or removing replicationFactor or more vmstorage replicas at once.
	AcknowledgeReplicationRisk bool `json:"acknowledge_replication_risk,omitempty"`
	// StepTimeout is a duration such as "15m", 1m to 6h.
	StepTimeout string `json:"step_timeout,omitempty"`
	// Paused creates the operation paused (planned, no step started).
	Paused bool `json:"paused,omitempty"`
}

// Replicas are replica counts per component.
type Replicas struct {
	VMStorage *int64 `json:"vmstorage,omitempty"`
	VMInsert  *int64 `json:"vminsert,omitempty"`
	VMSelect  *int64 `json:"vmselect,omitempty"`
}

// ResourcesPerComponent are resources per component.
type ResourcesPerComponent struct {
	VMStorage *Resources `json:"vmstorage,omitempty"`
	VMInsert  *Resources `json:"vminsert,omitempty"`
	VMSelect  *Resources `json:"vmselect,omitempty"`
}

// Resources are requests and limits: cpu and memory quantities.
type Resources struct {
	Requests map[string]string `json:"requests,omitempty"`
	Limits   map[string]string `json:"limits,omitempty"`
}

// Restart names components.
type Restart struct {
	Components []string `json:"components"`
}

// Operation is the REST representation of a VMClusterOperation.
type Operation struct {
	// Name is "vmclusters/<vmcluster>/operations/<operation>".
	Name        string `json:"name"`
	ID          string `json:"id"`
	VMCluster   string `json:"vmcluster"`
	VMClusterID string `json:"vmcluster_id"`
	Type        string `json:"type"`
	// Phase is Pending, Running, Paused, Succeeded, Failed, Cancelling or
	// Cancelled.
	Phase    string `json:"phase"`
	Progress string `json:"progress,omitempty"`
	Message  string `json:"message,omitempty"`
	// WaitingFor names what the operation waits for before it starts.
	WaitingFor      string  `json:"waiting_for,omitempty"`
	Paused          bool    `json:"paused"`
	CancelRequested bool    `json:"cancel_requested"`
	Request         Request `json:"request"`
	Steps           []Step  `json:"steps"`
	InitiatedBy     string  `json:"initiated_by,omitempty"`
	CreateTime      string  `json:"create_time,omitempty"`
	StartTime       string  `json:"start_time,omitempty"`
	CompletionTime  string  `json:"completion_time,omitempty"`
}

// Step is one planned step.
type Step struct {
	ID             string `json:"id"`
	Component      string `json:"component"`
	Action         string `json:"action"`
	From           string `json:"from,omitempty"`
	To             string `json:"to,omitempty"`
	Pod            string `json:"pod,omitempty"`
	Phase          string `json:"phase"`
	StartTime      string `json:"start_time,omitempty"`
	CompletionTime string `json:"completion_time,omitempty"`
	Message        string `json:"message,omitempty"`
}

// ListResponse is a page of operations, newest first.
type ListResponse struct {
	Operations    []Operation `json:"operations"`
	NextPageToken string      `json:"next_page_token,omitempty"`
}

// ListRequest is a validated list query.
type ListRequest struct {
	PageSize int
	Type     string
	Phase    string
	After    *listing.Cursor
}
