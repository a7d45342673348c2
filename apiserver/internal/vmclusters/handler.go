package vmclusters

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tidbcloud/ops-server/apiserver/internal/server"
)

// BasePath is the collection path.
const BasePath = "/api/v1/observability-ops/vmclusters"

// Handler binds and validates HTTP requests and calls the service.
type Handler struct {
	Svc *Service
}

// Resource is the permission resource of the routes.
const Resource = "vmclusters"

// Routes implements server.API.
func (h *Handler) Routes() []server.Route {
	item := BasePath + "/:vmclusterId"
	return []server.Route{
		{Method: http.MethodPost, Path: BasePath, Name: "vmclusters.create", Handler: h.create, Resource: Resource, Verb: "create"},
		{Method: http.MethodGet, Path: BasePath, Name: "vmclusters.list", Handler: h.list, Resource: Resource, Verb: "list", Watch: true},
		{Method: http.MethodGet, Path: item, Name: "vmclusters.get", Handler: h.get, Resource: Resource, Verb: "get"},
		{Method: http.MethodPut, Path: item, Name: "vmclusters.update", Handler: h.update, Resource: Resource, Verb: "update"},
		{Method: http.MethodDelete, Path: item, Name: "vmclusters.delete", Handler: h.delete, Resource: Resource, Verb: "delete"},
	}
}

func (h *Handler) create(c echo.Context) error {
	body, err := server.ReadBody(c)
	if err != nil {
		return err
	}
	req, verr := DecodeCreate(body)
	if verr != nil {
		return verr
	}
	v, err := h.Svc.Create(c.Request().Context(), req)
	if err != nil {
		return err
	}
	return respond(c, http.StatusAccepted, v)
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
func listPage(items []*server.Encoded[VMCluster], next string) server.Page[VMCluster] {
	return server.Page[VMCluster]{Field: "vmclusters", Items: items, TokenField: "next_page_token", Token: next,
		Value: func() any { return listResponse(items, next) }}
}

func (h *Handler) get(c echo.Context) error {
	e, err := h.Svc.GetEncoded(c.Request().Context(), c.Param("vmclusterId"))
	if err != nil {
		return err
	}
	setETag(c, e.View)
	return server.WriteEncoded(c, http.StatusOK, e)
}

func (h *Handler) update(c echo.Context) error {
	body, err := server.ReadBody(c)
	if err != nil {
		return err
	}
	req, verr := DecodeUpdate(body)
	if verr != nil {
		return verr
	}
	req.Precondition, verr = ParseIfMatch(c.Request().Header.Values("If-Match"), req.ETag)
	if verr != nil {
		return verr
	}
	v, err := h.Svc.Update(c.Request().Context(), c.Param("vmclusterId"), req)
	if err != nil {
		return err
	}
	return respond(c, http.StatusAccepted, v)
}

func (h *Handler) delete(c echo.Context) error {
	pre, verr := ParseIfMatch(c.Request().Header.Values("If-Match"), nil)
	if verr != nil {
		return verr
	}
	v, err := h.Svc.Delete(c.Request().Context(), c.Param("vmclusterId"), pre)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, v)
}

// respond writes one vmcluster with its ETag header.
func respond(c echo.Context, code int, v VMCluster) error {
	setETag(c, v)
	return c.JSON(code, v)
}

// setETag sets v's ETag header.
func setETag(c echo.Context, v VMCluster) {
	if v.ETag != "" {
		c.Response().Header().Set("ETag", HeaderETag(v.ETag))
	}
}
