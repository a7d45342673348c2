package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/idempotency"
)

// DecodeCreate reads a create request (or one with a create's body, such
// as a dry run): its body (ReadBody), its Idempotency-Key
// (idempotency.KeyFrom: a 400 when too long), then the body decoded and
// validated by decode, in that order.
func DecodeCreate[R any](c echo.Context, decode func(body []byte) (R, *apierror.Error)) (req R, key string, err error) {
	body, err := ReadBody(c)
	if err != nil {
		return req, "", err
	}
	key, verr := idempotency.KeyFrom(c.Request())
	if verr != nil {
		return req, "", verr
	}
	r, verr := decode(body)
	if verr != nil {
		return req, "", verr
	}
	return r, key, nil
}

// Created answers a create: v with code (201, or 202 when the operator
// carries it out) when created, or 200 when the create found what an
// earlier attempt with its Idempotency-Key created (a replay).
func Created(c echo.Context, code int, v any, created bool) error {
	if !created {
		return c.JSON(http.StatusOK, v)
	}
	return c.JSON(code, v)
}
