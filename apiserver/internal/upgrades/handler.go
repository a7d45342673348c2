package upgrades

import (
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"sigs.k8s.io/yaml"

	"github.com/tidbcloud/ops-server/apiserver/internal/events"
	"github.com/tidbcloud/ops-server/apiserver/internal/server"
)

// Permission resources of the routes (see docs/auth.md).
const (
	Resource           = "upgradeoperations"
	NodeGroupsResource = "nodegroups"
	AddonsResource     = "addons"
)

// Handler binds and validates requests and calls the service.
type Handler struct {
	Svc *Service
}

// Routes implements server.API.
func (h *Handler) Routes() []server.Route {
	item := BasePath + "/:id"
	return []server.Route{
		{Method: http.MethodPost, Path: BasePath, Name: "upgradeOperations.create", Handler: h.create, Resource: Resource, Verb: "create"},
		{Method: http.MethodPost, Path: BasePath + "/dry-run", Name: "upgradeOperations.dryRun", Handler: h.dryRun, Resource: Resource + "/dryrun", Verb: "create"},
		{Method: http.MethodPost, Path: BasePath + "/preflight", Name: "upgradeOperations.preflight", Handler: h.preflight, Resource: Resource + "/preflight", Verb: "create"},
		{Method: http.MethodGet, Path: BasePath, Name: "upgradeOperations.list", Handler: h.list, Resource: Resource, Verb: "list", Watch: true},
		{Method: http.MethodGet, Path: item, Name: "upgradeOperations.get", Handler: h.get, Resource: Resource, Verb: "get"},
		{Method: http.MethodGet, Path: item + "/events", Name: "upgradeOperations.events", Handler: h.events, Resource: Resource, Verb: "get"},
		{Method: http.MethodPut, Path: item + "/pause", Name: "upgradeOperations.pause", Handler: h.pause, Resource: Resource + "/pause", Verb: "update"},
		{Method: http.MethodPut, Path: item + "/resume", Name: "upgradeOperations.resume", Handler: h.resume, Resource: Resource + "/resume", Verb: "update"},
		{Method: http.MethodPut, Path: item + "/approve", Name: "upgradeOperations.approve", Handler: h.approve, Resource: Resource, Verb: ApproveVerb},
		{Method: http.MethodDelete, Path: item, Name: "upgradeOperations.delete", Handler: h.delete, Resource: Resource, Verb: "delete"},
		{Method: http.MethodGet, Path: NodeGroupsPath, Name: "nodeGroups.list", Handler: h.nodeGroups, Resource: NodeGroupsResource, Verb: "list"},
		{Method: http.MethodGet, Path: AddonsPath, Name: "addons.list", Handler: h.addons, Resource: AddonsResource, Verb: "list"},
	}
}

// create answers 202: the operator carries the operation out
// asynchronously (200 for a retry with the same Idempotency-Key).
func (h *Handler) create(c echo.Context) error {
	req, key, err := server.DecodeCreate(c, Decode)
	if err != nil {
		return err
	}
	op, created, err := h.Svc.Create(c.Request().Context(), req, key)
	if err != nil {
		return err
	}
	return server.Created(c, http.StatusAccepted, op, created)
}

func (h *Handler) dryRun(c echo.Context) error {
	req, key, err := server.DecodeCreate(c, Decode)
	if err != nil {
		return err
	}
	m, err := h.Svc.DryRun(c.Request().Context(), req, key)
	if err != nil {
		return err
	}
	if wantsYAML(c.Request().Header.Values(echo.HeaderAccept)) {
		b, err := yaml.Marshal(m)
		if err != nil {
			return fmt.Errorf("encoding the dry-run manifest as YAML: %w", err)
		}
		return c.Blob(http.StatusOK, YAMLContentType, b)
	}
	return c.JSON(http.StatusOK, m)
}

// YAMLContentType is the media type of a dry run answered in YAML.
const YAMLContentType = "application/yaml"

// wantsYAML reports whether an Accept header asks for YAML
// (application/yaml, or the older application/x-yaml and text/yaml)
// rather than JSON; JSON is the default, and wins when both are listed
// without a preference.
func wantsYAML(accept []string) bool {
	yamlQ, jsonQ := -1.0, -1.0
	for _, h := range accept {
		for _, part := range strings.Split(h, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			q := 1.0
			if v, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					q = f
				}
			}
			switch mt {
			case YAMLContentType, "application/x-yaml", "text/yaml":
				yamlQ = max(yamlQ, q)
			case echo.MIMEApplicationJSON, "application/*", "*/*":
				jsonQ = max(jsonQ, q)
			}
		}
	}
	return yamlQ > 0 && yamlQ > jsonQ
}

func (h *Handler) list(c echo.Context) error {
	req, verr := ParseList(c.QueryParams())
	if verr != nil {
		return verr
	}
	if req.Watch {
		return h.watchStream(c, req)
	}
	items, next, err := h.Svc.ListEncoded(c.Request().Context(), req)
	if err != nil {
		return err
	}
	return server.WritePage(c, listPage(items, next))
}

// listPage is the answer of a list, its ListResponse written by joining
// the views' kept encodings.
func listPage(items []*server.Encoded[Operation], next string) server.Page[Operation] {
	return server.Page[Operation]{Field: "upgradeOperations", Items: items, TokenField: "nextPageToken", Token: next,
		Value: func() any { return listResponse(items, next) }}
}

func (h *Handler) get(c echo.Context) error {
	e, err := h.Svc.GetEncoded(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return server.WriteEncoded(c, http.StatusOK, e)
}

func (h *Handler) events(c echo.Context) error {
	q, verr := events.Parse(c.QueryParams(), time.Now())
	if verr != nil {
		return verr
	}
	out, err := h.Svc.Events(c.Request().Context(), c.Param("id"), q)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (h *Handler) pause(c echo.Context) error {
	op, err := h.Svc.Pause(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, op)
}

func (h *Handler) resume(c echo.Context) error {
	op, err := h.Svc.Resume(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, op)
}

func (h *Handler) delete(c echo.Context) error {
	out, err := h.Svc.Delete(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	if out.Result == "Deleted" {
		return c.JSON(http.StatusOK, out)
	}
	return c.JSON(http.StatusAccepted, out)
}

func (h *Handler) nodeGroups(c echo.Context) error {
	q, verr := ParseClusterQuery(c.QueryParams(), false)
	if verr != nil {
		return verr
	}
	groups, err := h.Svc.NodeGroups(c.Request().Context(), q)
	if err != nil {
		return err
	}
	if groups == nil {
		groups = []NodeGroup{} // the document's nodeGroups is an array, never null
	}
	return c.JSON(http.StatusOK, map[string]any{"nodeGroups": groups})
}

func (h *Handler) addons(c echo.Context) error {
	q, verr := ParseClusterQuery(c.QueryParams(), true)
	if verr != nil {
		return verr
	}
	addons, err := h.Svc.Addons(c.Request().Context(), q)
	if err != nil {
		return err
	}
	if addons == nil {
		addons = []ClusterAddon{} // an array, never null
	}
	return c.JSON(http.StatusOK, map[string]any{"addons": addons})
}
