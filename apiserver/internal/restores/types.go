// Package restores is the restore REST API of ops-apiserver:
// /api/v1/observability-ops/vmclusters/{vmclusterId}/restores (create,
// list, get) over ClusterRestore objects, which ops-operator carries out
// (docs/backups.md, "Restoring"). It follows package backups: the handler
// binds and validates, the service resolves the vmcluster and the backup,
// decides and talks to Kubernetes (reads from the informer cache, writes
// to the API server under the ops-server field manager).
package restores

import (
	"github.com/tidbcloud/ops-server/apiserver/internal/backups"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
)

// BasePath is the collection path, below a vmcluster.
const BasePath = vmclusters.BasePath + "/:vmclusterId/restores"

// CollectionID is the collection segment of a restore's resource name.
const CollectionID = "restores"

// Resource is the permission resource of the routes (docs/auth.md): its
// own, granted to the admin role only by default.
const Resource = "clusterrestores"

// Request is a validated POST body.
type Request struct {
	// Backup is the id (UID) or name of a Succeeded backup in the
	// backups namespace (of this vmcluster or another one).
	Backup string `json:"backup"`
	// Strategy is OneAtATime (default) or AllAtOnce.
	Strategy string `json:"strategy,omitempty"`
	// ReplicaMapping says which backup replica each vmstorage replica is
	// restored from, by ordinal; required when the counts differ.
	ReplicaMapping []Mapping `json:"replica_mapping,omitempty"`
}

// Mapping restores one vmstorage replica from one backup replica.
type Mapping struct {
	Replica     *int64 `json:"replica"`
	FromReplica *int64 `json:"from_replica"`
}

// Restore is the REST representation of a ClusterRestore.
type Restore struct {
	// Name is "vmclusters/<vmcluster>/restores/<restore>".
	Name string `json:"name"`
	// ID is the UID of the ClusterRestore.
	ID          string `json:"id"`
	VMCluster   string `json:"vmcluster"`
	VMClusterID string `json:"vmcluster_id"`
	// Target is the VMCluster object restored into.
	Target backups.ObjectRef `json:"target"`
	// Backup is the ClusterBackup restored from (its name).
	Backup         string    `json:"backup"`
	Strategy       string    `json:"strategy"`
	ReplicaMapping []Mapping `json:"replica_mapping,omitempty"`
	// Phase is Pending, Running, Succeeded or Failed.
	Phase          string    `json:"phase"`
	Progress       string    `json:"progress,omitempty"`
	Message        string    `json:"message,omitempty"`
	Replicas       []Replica `json:"replicas"`
	InitiatedBy    string    `json:"initiated_by,omitempty"`
	CreateTime     string    `json:"create_time,omitempty"`
	StartTime      string    `json:"start_time,omitempty"`
	CompletionTime string    `json:"completion_time,omitempty"`
}

// Replica is the restore of one vmstorage replica.
type Replica struct {
	Pod     string `json:"pod"`
	FromPod string `json:"from_pod,omitempty"`
	Source  string `json:"source,omitempty"`
	// Phase is Pending, Stopping, Restoring, Starting, Succeeded or Failed.
	Phase string `json:"phase"`
	// RunID names the vmrestore run.
	RunID          string `json:"run_id,omitempty"`
	Error          string `json:"error,omitempty"`
	StartTime      string `json:"start_time,omitempty"`
	CompletionTime string `json:"completion_time,omitempty"`
}

// ListResponse is a page of restores, newest first.
type ListResponse struct {
	Restores      []Restore `json:"restores"`
	NextPageToken string    `json:"next_page_token,omitempty"`
}
