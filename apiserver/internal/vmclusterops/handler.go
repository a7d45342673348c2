package vmclusterops

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/server"
)

// Resource is the permission resource of the routes (see docs/auth.md).
const Resource = "vmclusteroperations"

// Handler binds and validates requests and calls the service.
type Handler struct {
	Svc *Service
}

// Routes implements server.API.
func (h *Handler) Routes() []server.Route {
	item := BasePath + "/:opId"
	return []server.Route{
		{Method: http.MethodPost, Path: BasePath, Name: "vmclusterOperations.create", Handler: h.create, Resource: Resource, Verb: "create"},
		{Method: http.MethodGet, Path: BasePath, Name: "vmclusterOperations.list", Handler: h.list, Resource: Resource, Verb: "list"},
		{Method: http.MethodGet, Path: item, Name: "vmclusterOperations.get", Handler: h.get, Resource: Resource, Verb: "get"},
		{Method: http.MethodPut, Path: item + "/pause", Name: "vmclusterOperations.pause", Handler: h.pause, Resource: Resource + "/pause", Verb: "update"},
		{Method: http.MethodPut, Path: item + "/resume", Name: "vmclusterOperations.resume", Handler: h.resume, Resource: Resource + "/resume", Verb: "update"},
		{Method: http.MethodDelete, Path: item, Name: "vmclusterOperations.cancel", Handler: h.cancel, Resource: Resource, Verb: "delete"},
	}
}

// create answers 202: the operator carries the operation out (200 for a
// retry with the same Idempotency-Key, and for a dry run).
func (h *Handler) create(c echo.Context) error {
	dryRun := false
	req, key, err := server.DecodeCreate(c, func(body []byte) (*Request, *apierror.Error) {
		// dry_run is checked after the key, before the body.
		switch c.QueryParam("dry_run") {
		case "", "false":
		case "true":
			dryRun = true
		default:
			return nil, apierror.InvalidArgument("invalid query", apierror.Violation("dry_run", "must be true or false"))
		}
		return Decode(body)
	})
	if err != nil {
		return err
	}
	out, created, err := h.Svc.Create(c.Request().Context(), c.Param("vmclusterId"), req, key, dryRun)
	if err != nil {
		return err
	}
	return server.Created(c, http.StatusAccepted, out, created)
}

func (h *Handler) list(c echo.Context) error {
	req, verr := ParseList(c.QueryParams())
	if verr != nil {
		return verr
	}
	out, err := h.Svc.List(c.Request().Context(), c.Param("vmclusterId"), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (h *Handler) get(c echo.Context) error {
	out, err := h.Svc.Get(c.Request().Context(), c.Param("vmclusterId"), c.Param("opId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (h *Handler) pause(c echo.Context) error {
	out, err := h.Svc.Pause(c.Request().Context(), c.Param("vmclusterId"), c.Param("opId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (h *Handler) resume(c echo.Context) error {
	out, err := h.Svc.Resume(c.Request().Context(), c.Param("vmclusterId"), c.Param("opId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// cancel is DELETE: the operation stops at the next safe point (202); the
// object stays as the record of what was done.
func (h *Handler) cancel(c echo.Context) error {
	out, err := h.Svc.Cancel(c.Request().Context(), c.Param("vmclusterId"), c.Param("opId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, out)
}
