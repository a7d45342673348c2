package backups

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tidbcloud/ops-server/apiserver/internal/server"
)

// Resource is the permission resource of the routes (see docs/auth.md).
const Resource = "clusterbackups"

// Handler binds and validates requests and calls the service.
type Handler struct {
	Svc *Service
}

// Routes implements server.API.
func (h *Handler) Routes() []server.Route {
	item := BasePath + "/:backupId"
	return []server.Route{
		{Method: http.MethodPost, Path: BasePath, Name: "backups.create", Handler: h.create, Resource: Resource, Verb: "create"},
		{Method: http.MethodGet, Path: BasePath, Name: "backups.list", Handler: h.list, Resource: Resource, Verb: "list", Watch: true},
		{Method: http.MethodGet, Path: item, Name: "backups.get", Handler: h.get, Resource: Resource, Verb: "get"},
		{Method: http.MethodDelete, Path: item, Name: "backups.delete", Handler: h.delete, Resource: Resource, Verb: "delete"},
	}
}

// create answers 202: the operator carries the backup out
// asynchronously (200 for a retry with the same Idempotency-Key).
func (h *Handler) create(c echo.Context) error {
	req, key, err := server.DecodeCreate(c, Decode)
	if err != nil {
		return err
	}
	b, created, err := h.Svc.Create(c.Request().Context(), c.Param("vmclusterId"), req, key)
	if err != nil {
		return err
	}
	return server.Created(c, http.StatusAccepted, b, created)
}

func (h *Handler) list(c echo.Context) error {
	req, verr := ParseList(c.QueryParams())
	if verr != nil {
		return verr
	}
	if req.Watch {
		return h.watchStream(c, c.Param("vmclusterId"))
	}
	out, err := h.Svc.List(c.Request().Context(), c.Param("vmclusterId"), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (h *Handler) get(c echo.Context) error {
	b, err := h.Svc.Get(c.Request().Context(), c.Param("vmclusterId"), c.Param("backupId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, b)
}

func (h *Handler) delete(c echo.Context) error {
	out, err := h.Svc.Delete(c.Request().Context(), c.Param("vmclusterId"), c.Param("backupId"))
	if err != nil {
		return err
	}
	if out.Result == ResultDeleted {
		return c.JSON(http.StatusOK, out)
	}
	return c.JSON(http.StatusAccepted, out)
}
