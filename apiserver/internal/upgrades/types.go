// Package upgrades is the cluster-upgrade REST API of ops-apiserver:
// /ops/api/v1/upgradeOperations (create, dry-run, list, get, pause, resume,
// delete/cancel) over ClusterUpgradeOperation objects, and the node groups
// and addons of a cluster, read from the cloud through the operator
// module's provider interface.
package upgrades

import (
	"encoding/json"
	"time"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// Paths.
const (
	BasePath       = "/ops/api/v1/upgradeOperations"
	NodeGroupsPath = "/ops/api/v1/nodeGroups"
	AddonsPath     = "/ops/api/v1/addons"
)

// Request is the upgrade request of the seed (camelCase JSON).
type Request struct {
	K8sClusterName    string             `json:"k8sClusterName"`
	Region            string             `json:"region"`
	CloudProvider     string             `json:"cloudProvider"`
	TargetVersion     string             `json:"targetVersion"`
	Schedule          string             `json:"schedule,omitempty"`
	ClusterAddons     []Addon            `json:"clusterAddons,omitempty"`
	NodeGroupUpgrades []NodeGroupUpgrade `json:"nodeGroupUpgrades,omitempty"`
	// MaintenanceWindow is the recurring weekly window the steps start in
	// (the CR's field, same shape).
	MaintenanceWindow *opsv1.MaintenanceWindow `json:"maintenanceWindow,omitempty"`
	// Approvals are the approval gates (BeforeNodeGroups,
	// BeforeEachNodeGroup, BeforeDrain).
	Approvals []string `json:"approvals,omitempty"`

	// requestedVersion is the targetVersion asked for when TargetVersion
	// was resolved from it (ACK: 1.30 → 1.30.2-aliyun.1); see
	// resolveTarget.
	requestedVersion string
}

// Addon is one cluster addon update.
type Addon struct {
	Name             string `json:"name"`
	Version          string `json:"version"`
	ResolveConflicts string `json:"resolveConflicts,omitempty"`
}

// NodeGroupUpgrade is one node group upgrade.
type NodeGroupUpgrade struct {
	NodeGroupName            string          `json:"nodeGroupName"`
	Strategy                 string          `json:"strategy"`
	RequiresVMStorageRollout bool            `json:"requiresVMStorageRollout"`
	NewNodeGroupName         string          `json:"newNodeGroupName,omitempty"`
	VMClusterHelmValues      json.RawMessage `json:"vmClusterHelmValues,omitempty"`
	VMStorageSTSName         string          `json:"vmstorageSTSName,omitempty"`
	VMStorageSTSNamespace    string          `json:"vmstorageSTSNamespace,omitempty"`
	// VMCluster is the vmcluster (id or name, as in the vmclusters API)
	// whose VMCluster the VMStorage rollout patches; omitted: the VMCluster
	// observability/vmcluster. Responses show the VMCluster's name.
	VMCluster string `json:"vmCluster,omitempty"`
	// BackupBeforeRollout asks for a ClusterBackup of the VMCluster before
	// anything of the node group moves (the CR's field, same shape).
	BackupBeforeRollout *opsv1.BackupBeforeRollout `json:"backupBeforeRollout,omitempty"`

	// vmClusterRef is VMCluster resolved at request time (resolveTargets).
	vmClusterRef *opsv1.VMClusterReference
}

// Operation is an upgrade operation as the API returns it.
type Operation struct {
	ID             string     `json:"id"`
	Name           string     `json:"name"`
	Namespace      string     `json:"namespace"`
	Spec           Request    `json:"spec"`
	Paused         bool       `json:"paused"`
	CancelRequest  bool       `json:"cancelRequested"`
	Phase          string     `json:"phase"`
	Message        string     `json:"message,omitempty"`
	CurrentStep    string     `json:"currentStep,omitempty"`
	Steps          []Step     `json:"steps"`
	BlockedBy      *BlockedBy `json:"blockedBy,omitempty"`
	InitiatedBy    string     `json:"initiatedBy,omitempty"`
	CreateTime     *time.Time `json:"createTime,omitempty"`
	StartTime      *time.Time `json:"startTime,omitempty"`
	CompletionTime *time.Time `json:"completionTime,omitempty"`

	// LeftBehind is what a Cancelled or Failed operation leaves changed.
	LeftBehind []LeftBehind `json:"leftBehind,omitempty"`

	// MaintenanceWindow is the effective window: the spec's, or the
	// operator's default for the cluster, with its source.
	MaintenanceWindow *EffectiveWindow `json:"maintenanceWindow,omitempty"`
	// NextWindowStart is when the next step may start, while the
	// operation waits outside its window.
	NextWindowStart *time.Time `json:"nextWindowStart,omitempty"`
	// AwaitingApproval is the gate the operation waits at (phase
	// AwaitingApproval).
	AwaitingApproval *AwaitingApproval `json:"awaitingApproval,omitempty"`
	// Approved are the gate ids approved so far.
	Approved []string `json:"approved,omitempty"`
	// Preflight is the report of the checks made before the first step.
	Preflight *opsv1.PreflightReport `json:"preflight,omitempty"`
}

// EffectiveWindow is the maintenance window the operator applies.
type EffectiveWindow struct {
	opsv1.MaintenanceWindow
	// Source is "spec", or "default: ..." naming the operator's rule.
	Source string `json:"source"`
}

// AwaitingApproval is the gate an operation waits at.
type AwaitingApproval struct {
	Gate     string     `json:"gate"`
	NextStep string     `json:"nextStep"`
	Done     []string   `json:"done,omitempty"`
	Since    *time.Time `json:"since,omitempty"`
}

// ApproveRequest is the optional body of PUT .../approve: the gate to
// approve; omitted, the gate the operation waits at.
type ApproveRequest struct {
	Gate string `json:"gate,omitempty"`
}

// Manifest is the ClusterUpgradeOperation a dry run would create, ready
// to commit to Git or pipe to `kubectl apply -f -` (see Service.DryRun).
type Manifest struct {
	APIVersion string                            `json:"apiVersion"`
	Kind       string                            `json:"kind"`
	Metadata   ManifestMetadata                  `json:"metadata"`
	Spec       opsv1.ClusterUpgradeOperationSpec `json:"spec"`
}

// ManifestMetadata is the metadata of a Manifest.
type ManifestMetadata struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Step is one step of the plan.
type Step struct {
	ID          string `json:"id"`
	Type        string `json:"type"`
	Action      string `json:"action"`
	Target      string `json:"target,omitempty"`
	Phase       string `json:"phase"`
	OperationID string `json:"operationId,omitempty"`
	// Backup is the ClusterBackup ("<namespace>/<name>") of a
	// BackupVMStorage step.
	Backup         string     `json:"backup,omitempty"`
	Message        string     `json:"message,omitempty"`
	StartTime      *time.Time `json:"startTime,omitempty"`
	CompletionTime *time.Time `json:"completionTime,omitempty"`
}

// BlockedBy is what keeps the operation from progressing.
type BlockedBy struct {
	StepID              string     `json:"stepId,omitempty"`
	Reason              string     `json:"reason"`
	Message             string     `json:"message,omitempty"`
	Node                string     `json:"node,omitempty"`
	Pod                 string     `json:"pod,omitempty"`
	PodDisruptionBudget string     `json:"podDisruptionBudget,omitempty"`
	Since               *time.Time `json:"since,omitempty"`
}

// LeftBehind is one change a stopped operation leaves in the cluster.
type LeftBehind struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	StepID    string `json:"stepId,omitempty"`
	Reason    string `json:"reason"`
}

// ListResponse is a page of operations.
type ListResponse struct {
	UpgradeOperations []Operation `json:"upgradeOperations"`
	NextPageToken     string      `json:"nextPageToken,omitempty"`
}

// DeleteResponse says whether DELETE removed the operation or asked it to
// stop.
type DeleteResponse struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Result string `json:"result"` // Deleted | Cancelling
	// Operation is the operation after the cancel request (Cancelling only).
	Operation *Operation `json:"operation,omitempty"`
}

// NodeGroup is a node group as GET /nodeGroups returns it.
type NodeGroup struct {
	Name          string            `json:"name"`
	Version       string            `json:"version"`
	Status        string            `json:"status,omitempty"`
	DesiredSize   int32             `json:"desiredSize"`
	MinSize       int32             `json:"minSize"`
	MaxSize       int32             `json:"maxSize"`
	InstanceTypes []string          `json:"instanceTypes,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	Taints        []Taint           `json:"taints,omitempty"`
}

// Taint is a node group taint.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// ClusterAddon is an addon as GET /addons returns it.
type ClusterAddon struct {
	Name              string   `json:"name"`
	Version           string   `json:"version"`
	Status            string   `json:"status,omitempty"`
	AvailableVersions []string `json:"availableVersions,omitempty"`
}
