// Package servertest holds what the handler tests share about answers
// written from kept encodings (server.Encoded).
package servertest

import (
	"errors"
	"net/http"
	"net/http/httptest"

	"github.com/labstack/echo/v4"

	"github.com/tidbcloud/ops-server/apiserver/internal/server"
)

// PageBodies returns the body server.WritePage writes of the page that
// page builds from views (each encoded with server.Encode) and next, and
// the body c.JSON writes of want. A handler's list answers as the struct
// want when the two are equal.
func PageBodies[V any](views []V, next string, page func([]*server.Encoded[V], string) server.Page[V], want any) (got, wantBody string, err error) {
	items := make([]*server.Encoded[V], 0, len(views))
	for _, v := range views {
		items = append(items, server.Encode(v))
	}
	e := echo.New()
	w, g := httptest.NewRecorder(), httptest.NewRecorder()
	err = errors.Join(
		e.NewContext(httptest.NewRequest(http.MethodGet, "/", nil), w).JSON(http.StatusOK, want),
		server.WritePage(e.NewContext(httptest.NewRequest(http.MethodGet, "/", nil), g), page(items, next)),
	)
	return g.Body.String(), w.Body.String(), err
}
