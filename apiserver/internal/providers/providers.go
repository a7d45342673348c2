// Package providers serves GET /ops/api/v1/providers: each cloud provider
// this server is configured for, with what it supports, from the one
// table the validation reads (v1alpha1.Capabilities). It also renders
// that table as the Markdown of docs/providers/README.md.
package providers

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tidbcloud/ops-server/apiserver/internal/server"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// Path is the route.
const Path = "/ops/api/v1/providers"

// Resource is the permission resource of the route (docs/auth.md).
const Resource = "providers"

// Provider is one configured provider with its capabilities.
type Provider struct {
	opsv1.ProviderCapabilities
}

// ListResponse is the answer of GET /ops/api/v1/providers.
type ListResponse struct {
	Providers []Provider `json:"providers"`
}

// Handler serves the route. Configured lists the providers this server
// is configured for (cloud.Registry.Names); nil: none.
type Handler struct {
	Configured func() []string
}

// Routes implements server.API.
func (h *Handler) Routes() []server.Route {
	return []server.Route{{Method: http.MethodGet, Path: Path, Name: "providers.list", Handler: h.list, Resource: Resource, Verb: "list"}}
}

func (h *Handler) list(c echo.Context) error {
	return c.JSON(http.StatusOK, List(h.configured()))
}

func (h *Handler) configured() []string {
	if h.Configured == nil {
		return nil
	}
	return h.Configured()
}

// List returns the rows of the configured providers, in the table's
// order.
func List(configured []string) ListResponse {
	on := map[string]bool{}
	for _, n := range configured {
		on[n] = true
	}
	out := ListResponse{Providers: []Provider{}}
	for _, c := range opsv1.Capabilities {
		if on[string(c.Provider)] {
			out.Providers = append(out.Providers, Provider{c})
		}
	}
	return out
}

// Markdown renders the table for docs/providers/README.md.
func Markdown() string {
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	var b strings.Builder
	b.WriteString("| provider | addons | addon resolveConflicts | addon compatibility checked | in-place | blue-green | surge settings | cancel of a running cloud operation | targetVersion |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range opsv1.Capabilities {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s | %s | %s |\n", c.Provider, yes(c.Addons), yes(c.AddonResolveConflicts),
			yes(c.AddonCompatibility), yes(c.InPlace), yes(c.BlueGreen), c.SurgeSettings, c.CancelRunningOperation, c.VersionFormat)
	}
	return b.String()
}

// Markers delimit the generated table in docs/providers/README.md.
const (
	BeginMarker = "<!-- BEGIN capabilities: generated from operator/api/v1alpha1/capabilities.go by `go test ./apiserver/internal/providers -update` -->\n"
	EndMarker   = "<!-- END capabilities -->\n"
)
