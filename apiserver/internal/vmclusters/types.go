// Package vmclusters is the /api/v1/observability-ops/vmclusters resource:
// a vmcluster is a Flux HelmRelease labelled as managed by ops-server, in
// the configured namespace, plus the HelmRepository it installs from.
//
// The handler binds and validates requests, the service decides, the store
// talks to Kubernetes (reads from the informer cache, writes to the API
// server under the ops-server field manager). Translation between the REST
// body and the Flux objects and the status mapping are pure functions.
package vmclusters

import "encoding/json"

// CollectionPrefix prefixes the resource name of every vmcluster.
const CollectionPrefix = "vmclusters/"

// VMCluster is the REST representation (snake_case, as the seed shows).
type VMCluster struct {
	// Name is "vmclusters/<name>".
	Name string `json:"name"`
	// ID is the UID of the HelmRelease.
	ID     string `json:"id"`
	Status Status `json:"status"`
	// StatusReason and StatusMessage are Flux's reason and message behind
	// the status (Helm's error for FAILED).
	StatusReason  string `json:"status_reason,omitempty"`
	StatusMessage string `json:"status_message,omitempty"`
	// Endpoints are present once the release is installed.
	Endpoints map[string]string `json:"endpoints"`
	// Values are the values Helm applies: the chart's defaults (of the
	// deployed chart version, else the requested one) coalesced with the
	// overrides, as Helm coalesces them; with a remote chart, whose
	// defaults the server does not hold, the overrides. Not included in
	// lists.
	Values json.RawMessage `json:"values,omitempty"`
	// ValuesOverrides are the values of the request alone (what POST and
	// PUT set). Not included in lists.
	ValuesOverrides json.RawMessage `json:"values_overrides,omitempty"`
	HelmReleaseInfo HelmReleaseInfo `json:"helm_release_info"`
	CreateTime      string          `json:"create_time,omitempty"`
	// ETag changes with every change of the vmcluster's specification
	// (AIP-154), never with a status change; PUT and DELETE take it back
	// in If-Match (or, on PUT, in this field).
	ETag string `json:"etag,omitempty"`
}

// HelmReleaseInfo describes the Helm release behind a vmcluster.
type HelmReleaseInfo struct {
	ReleaseName      string `json:"release_name"`
	ReleaseNamespace string `json:"release_namespace"`
	Chart            string `json:"chart"`
	// Version is the requested chart version (what a PUT's
	// helm_release_info.version sets).
	Version string `json:"version"`
	// DeployedVersion is the chart version Helm deployed last (the newest
	// "deployed" entry of the HelmRelease's history; absent before the
	// first deployment). It differs from Version while an upgrade is
	// pending or after it failed.
	DeployedVersion string `json:"deployed_version,omitempty"`
	// LastAction is helm-controller's last Helm action and its result.
	LastAction *HelmAction `json:"last_action,omitempty"`
}

// HelmAction is a Helm action (install, upgrade, ...) helm-controller
// attempted for the release.
type HelmAction struct {
	Action string `json:"action"`
	// Result is Succeeded, Failed or InProgress.
	Result  string `json:"result"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Time is when the action ended (RFC 3339).
	Time string `json:"time,omitempty"`
}

// ListResponse is the body of a list.
type ListResponse struct {
	VMClusters    []VMCluster `json:"vmclusters"`
	NextPageToken string      `json:"next_page_token,omitempty"`
}

// CreateRequest is a validated POST body.
type CreateRequest struct {
	Name string
	// Values is a canonical JSON object.
	Values []byte
	// Version is the chart version; empty means the configured default.
	Version string
	// RestoreFrom seeds the new vmcluster from a backup; nil: it starts
	// empty.
	RestoreFrom *RestoreFrom
}

// RestoreFrom is restore_from of a create: the backup (its id, the
// ClusterBackup's name or UID) the new vmcluster's vmstorage is restored
// from before it first runs (docs/vmclusters.md).
type RestoreFrom struct {
	Backup string `json:"backup"`
}

// UpdateRequest is a validated PUT body. Besides values and version it
// carries the identity fields a client may echo back from a GET; the
// service checks they match the target.
type UpdateRequest struct {
	Values []byte
	// Version is the new chart version; empty keeps the current one.
	Version string

	Name             *string
	ID               *string
	ReleaseName      *string
	ReleaseNamespace *string
	Chart            *string

	// AllowDataLoss acknowledges a change that deletes data (see
	// CheckDataLoss).
	AllowDataLoss bool
	// ETag is the body's etag field (nil when absent); the handler folds
	// it into Precondition with the If-Match header.
	ETag         *string
	Precondition Precondition
}

// ListRequest is a validated list query.
type ListRequest struct {
	PageSize int
	// After is the name the page starts after (from the page token).
	After string
	// Status filters by status; empty means all.
	Status Status
	// Watch streams changes instead of answering a page.
	Watch bool
}
