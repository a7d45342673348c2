// Package components is the /api/v1/observability-ops/components
// resource: a component is one chart of the administrator's catalog
// (config.CatalogConfig) installed as a Flux HelmRelease labelled as an
// ops-server component, plus the HelmRepository it installs from.
//
// It shares the vmclusters machinery: the store (informer cache reads,
// field-managed writes), the Flux objects' translation, the status
// mapping, etags, pagination and the values check against the chart's
// values.schema.json. What differs (docs/components.md): a component
// names its chart (any catalog chart except the vmcluster chart, which
// is served by /vmclusters only), may go to another allowed namespace,
// has no endpoints and no data-loss guards, and is never the target of
// backups, upgrades or troubleshooting.
package components

import (
	"encoding/json"

	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
)

// CollectionPrefix prefixes the resource name of every component.
const CollectionPrefix = "components/"

// Component is the REST representation.
type Component struct {
	// Name is "components/<name>".
	Name string `json:"name"`
	// ID is the UID of the HelmRelease.
	ID string `json:"id"`
	// Chart is the catalog chart.
	Chart string `json:"chart"`
	// Version is the requested chart version.
	Version string `json:"version"`
	// DeployedVersion is the chart version Helm deployed last.
	DeployedVersion string `json:"deployed_version,omitempty"`
	// Namespace is the namespace the chart is installed into.
	Namespace     string                 `json:"namespace"`
	Status        vmclusters.Status      `json:"status"`
	StatusReason  string                 `json:"status_reason,omitempty"`
	StatusMessage string                 `json:"status_message,omitempty"`
	LastAction    *vmclusters.HelmAction `json:"last_action,omitempty"`
	// Values are the values of the request (what POST and PUT set). Not
	// included in lists.
	Values     json.RawMessage `json:"values,omitempty"`
	CreateTime string          `json:"create_time,omitempty"`
	// ETag changes with every change of the specification, never with a
	// status change.
	ETag string `json:"etag,omitempty"`
}

// ListResponse is the body of a list.
type ListResponse struct {
	Components    []Component `json:"components"`
	NextPageToken string      `json:"next_page_token,omitempty"`
}

// CreateRequest is a validated POST body.
type CreateRequest struct {
	Name  string
	Chart string
	// Version is the chart version; empty: the catalog's default.
	Version string
	// Namespace is the target namespace; empty: the ops-server namespace.
	Namespace string
	// Values is a canonical JSON object.
	Values []byte
	// IdempotencyKey is the Idempotency-Key header (may be empty).
	IdempotencyKey string
}

// UpdateRequest is a validated PUT body: values and optionally a chart
// version; the identity fields a client may echo from a GET are checked
// against the target.
type UpdateRequest struct {
	Values []byte
	// Version is the new chart version; empty keeps the current one.
	Version string

	Name      *string
	ID        *string
	Chart     *string
	Namespace *string

	// ETag is the body's etag (nil when absent).
	ETag         *string
	Precondition vmclusters.Precondition
}
