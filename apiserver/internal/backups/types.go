// Package backups is the backup REST API of ops-apiserver, over objects
// ops-operator carries out (docs/backups.md):
//
//   - /api/v1/observability-ops/vmclusters/{vmclusterId}/backups (create,
//     list, get, delete) over ClusterBackup objects;
//   - /api/v1/observability-ops/vmclusters/{vmclusterId}/backupSchedules
//     (create, list, get, update, delete) over ClusterBackupSchedule
//     objects, from which ops-operator creates a ClusterBackup per cron tick
//     and deletes the ones past the retention.
//
// Restores of a backup are package restores. A destination is held to the
// ClusterBackup CRD's rules (opsv1.BackupDestinationProblem) and to the
// administrator's fs:// roots before anything is written.
//
// The handlers bind and validate requests; the services resolve the
// vmcluster through the vmclusters API, decide and talk to Kubernetes
// (reads from the informer cache, writes to the API server). Translation
// between the REST bodies and the objects is pure.
package backups

import (
	"github.com/tidbcloud/ops-server/apiserver/internal/listing"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
)

// BasePath is the collection path, below a vmcluster.
const BasePath = vmclusters.BasePath + "/:vmclusterId/backups"

// CollectionID is the collection segment of a backup's resource name.
const CollectionID = "backups"

// Request is a validated POST body. Every field is optional.
type Request struct {
	Destination *DestinationRequest `json:"destination,omitempty"`
	// Concurrency is how many replicas are uploaded at a time, 1 to 32;
	// absent: all at once.
	Concurrency *int64 `json:"concurrency,omitempty"`
	// DeletionPolicy is Retain (the default) or Delete.
	DeletionPolicy string `json:"deletion_policy,omitempty"`
}

// DestinationRequest is where to back up to.
type DestinationRequest struct {
	// URL is s3://, gs://, azblob:// or fs://; absent: the server's
	// default (backups.destination).
	URL string `json:"url,omitempty"`
	// CredentialsSecret is a Secret in the backups namespace; absent: the
	// server's default (backups.credentialsSecret); "": none (the ambient
	// identity).
	CredentialsSecret *string `json:"credentials_secret,omitempty"`
	// CredentialsSecretKey is the key of CredentialsSecret holding a
	// credentials file; only with credentials_secret.
	CredentialsSecretKey string `json:"credentials_secret_key,omitempty"`
}

// Backup is the REST representation of a ClusterBackup (snake_case, as
// the vmclusters resource).
type Backup struct {
	// Name is "vmclusters/<vmcluster>/backups/<backup>".
	Name string `json:"name"`
	// ID is the UID of the ClusterBackup.
	ID string `json:"id"`
	// VMCluster is the parent resource name, "vmclusters/<vmcluster>".
	VMCluster string `json:"vmcluster"`
	// VMClusterID is the id of the parent vmcluster.
	VMClusterID string `json:"vmcluster_id"`
	// Target is the VMCluster object (operator.victoriametrics.com) backed
	// up: the one the vmcluster's chart creates, named after the release.
	Target ObjectRef `json:"target"`
	// Phase is Pending, Running, Succeeded, PartiallyFailed or Failed.
	Phase string `json:"phase"`
	// Progress is "<finished>/<total>" replicas.
	Progress string `json:"progress,omitempty"`
	// Message is the operator's message (the Ready condition's).
	Message        string      `json:"message,omitempty"`
	Destination    Destination `json:"destination"`
	Concurrency    *int32      `json:"concurrency,omitempty"`
	DeletionPolicy string      `json:"deletion_policy"`
	// Deleting is true once DELETE was accepted and the operator is
	// cleaning up.
	Deleting       bool      `json:"deleting,omitempty"`
	Replicas       []Replica `json:"replicas"`
	InitiatedBy    string    `json:"initiated_by,omitempty"`
	CreateTime     string    `json:"create_time,omitempty"`
	StartTime      string    `json:"start_time,omitempty"`
	CompletionTime string    `json:"completion_time,omitempty"`
}

// ObjectRef names a Kubernetes object.
type ObjectRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// Destination is where a backup is written.
type Destination struct {
	URL                  string `json:"url"`
	CredentialsSecret    string `json:"credentials_secret,omitempty"`
	CredentialsSecretKey string `json:"credentials_secret_key,omitempty"`
}

// Replica is the backup of one vmstorage replica.
type Replica struct {
	Pod  string `json:"pod"`
	Node string `json:"node,omitempty"`
	// Snapshot is the instant snapshot taken on the replica.
	Snapshot string `json:"snapshot,omitempty"`
	// Destination is the URL this replica is backed up to.
	Destination string `json:"destination,omitempty"`
	// Phase is Pending, Snapshotting, Uploading, Succeeded or Failed.
	Phase          string `json:"phase"`
	Bytes          int64  `json:"bytes"`
	Error          string `json:"error,omitempty"`
	StartTime      string `json:"start_time,omitempty"`
	CompletionTime string `json:"completion_time,omitempty"`
}

// ListResponse is a page of backups, newest first.
type ListResponse struct {
	Backups       []Backup `json:"backups"`
	NextPageToken string   `json:"next_page_token,omitempty"`
}

// Results of a DELETE.
const (
	ResultDeleted  = "Deleted"
	ResultDeleting = "Deleting"
)

// DeleteResponse says whether DELETE removed the backup at once or the
// operator is cleaning up (as the upgrades API's).
type DeleteResponse struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Result string `json:"result"` // Deleted | Deleting
	// Backup is the backup being deleted (Deleting only).
	Backup *Backup `json:"backup,omitempty"`
}

// ListRequest is a validated list query.
type ListRequest struct {
	PageSize int
	// After is the position the page starts after (from the page token).
	After *listing.Cursor
	// Watch streams changes instead of answering a page.
	Watch bool
}
