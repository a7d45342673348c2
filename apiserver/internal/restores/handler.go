package restores

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tidbcloud/ops-server/apiserver/internal/server"
)

// Handler binds and validates requests and calls the service.
type Handler struct {
	Svc *Service
}

// Routes implements server.API.
func (h *Handler) Routes() []server.Route {
	return []server.Route{
		{Method: http.MethodPost, Path: BasePath, Name: "restores.create", Handler: h.create, Resource: Resource, Verb: "create"},
		{Method: http.MethodGet, Path: BasePath, Name: "restores.list", Handler: h.list, Resource: Resource, Verb: "list"},
		{Method: http.MethodGet, Path: BasePath + "/:restoreId", Name: "restores.get", Handler: h.get, Resource: Resource, Verb: "get"},
	}
}

func (h *Handler) create(c echo.Context) error {
	req, key, err := server.DecodeCreate(c, Decode)
	if err != nil {
		return err
	}
	r, created, err := h.Svc.Create(c.Request().Context(), c.Param("vmclusterId"), req, key)
	if err != nil {
		return err
	}
	return server.Created(c, http.StatusAccepted, r, created)
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
	r, err := h.Svc.Get(c.Request().Context(), c.Param("vmclusterId"), c.Param("restoreId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}
