package server

import (
	"context"
	"errors"
	"log"
	"net/http"
	"strings"

	"github.com/go-logr/logr"
	"github.com/labstack/echo/v4"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
)

// ErrorHandler is the central echo error handler: every error of every
// route, whatever its origin, leaves as the one AIP-193 body.
func ErrorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	ae := ToAPIError(err)
	if ae.Code == http.StatusMethodNotAllowed {
		if allow, ok := c.Get(echo.ContextKeyHeaderAllow).(string); ok && allow != "" {
			c.Response().Header().Set(echo.HeaderAllow, allow)
		}
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(ae.Code)
		return
	}
	_ = c.JSON(ae.Code, ae.ToBody(RequestID(c.Request().Context())))
}

// ToAPIError maps any error to an API error.
func ToAPIError(err error) *apierror.Error {
	if ae, ok := apierror.As(err); ok {
		return ae
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return fromEchoError(he)
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return tooLarge(mbe.Limit)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return apierror.DeadlineExceeded("the request did not complete in time").WithCause(err)
	}
	return apierror.FromKubernetes(err)
}

func fromEchoError(he *echo.HTTPError) *apierror.Error {
	msg := http.StatusText(he.Code)
	if s, ok := he.Message.(string); ok && s != "" {
		msg = s
	}
	switch he.Code {
	case http.StatusNotFound:
		return apierror.NotFound(apierror.ReasonRouteNotFound, "no such route").WithCause(he)
	case http.StatusMethodNotAllowed:
		return &apierror.Error{Code: he.Code, Status: apierror.StatusUnimplemented, Reason: apierror.ReasonMethod,
			Message: "the method is not allowed on this route"}
	case http.StatusRequestEntityTooLarge:
		return apierror.InvalidArgument("the request body is too large", apierror.Violation("body", "%s", strings.ToLower(msg)))
	}
	if he.Code >= 400 && he.Code < 500 {
		return apierror.InvalidArgument(msg, apierror.Violation("body", "%s", msg)).WithCause(he)
	}
	return apierror.Internal(he)
}

// newStdLogger adapts logr for http.Server's error log.
func newStdLogger(l logr.Logger) *log.Logger {
	return log.New(logWriter{l}, "", 0)
}

type logWriter struct{ l logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.l.Info("HTTP server error", "message", strings.TrimSpace(string(p)))
	return len(p), nil
}
