package troubleshoot

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/auth"
	"github.com/tidbcloud/ops-server/apiserver/internal/events"
	"github.com/tidbcloud/ops-server/apiserver/internal/jsonbody"
	"github.com/tidbcloud/ops-server/apiserver/internal/listing"
	"github.com/tidbcloud/ops-server/apiserver/internal/server"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
)

// Permission resources of the routes (docs/auth.md): the tree and the
// Pods are part of reading a vmcluster; logs and exec each have their
// own, so that they can be granted apart (exec only to admin).
const (
	ResourceLogs = "vmclusters/logs"
	ResourceExec = "vmclusters/exec"
)

// Handler binds and validates HTTP requests and calls the service.
type Handler struct {
	Svc *Service
}

// Routes implements server.API.
func (h *Handler) Routes() []server.Route {
	item := vmclusters.BasePath + "/:vmclusterId"
	return []server.Route{
		{Method: http.MethodGet, Path: item + "/resources", Name: "vmclusters.resources", Handler: h.tree, Resource: vmclusters.Resource, Verb: "get"},
		{Method: http.MethodGet, Path: item + "/pods", Name: "vmclusters.pods.list", Handler: h.pods, Resource: vmclusters.Resource, Verb: "get"},
		{Method: http.MethodGet, Path: item + "/events", Name: "vmclusters.events", Handler: h.events, Resource: vmclusters.Resource, Verb: "get"},
		{Method: http.MethodGet, Path: item + "/pods/:pod/logs", Name: "vmclusters.pods.logs", Handler: h.logs, Resource: ResourceLogs, Verb: "get", LongRunning: true},
		{Method: http.MethodGet, Path: item + "/diagnostics", Name: "vmclusters.diagnostics", Handler: h.diagnostics, Resource: ResourceLogs, Verb: "get", LongRunning: true},
		{Method: http.MethodPost, Path: item + "/pods/:pod/exec", Name: "vmclusters.pods.exec", Handler: h.exec, Resource: ResourceExec, Verb: "create", LongRunning: true},
	}
}

func (h *Handler) tree(c echo.Context) error {
	t, err := h.Svc.Tree(c.Request().Context(), c.Param("vmclusterId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}

func (h *Handler) events(c echo.Context) error {
	q, verr := events.Parse(c.QueryParams(), h.Svc.now())
	if verr != nil {
		return verr
	}
	out, err := h.Svc.Events(c.Request().Context(), c.Param("vmclusterId"), q)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// diagnostics streams the bundle (application/gzip, a tar): the
// vmcluster is resolved first (an error is an ordinary error body); once
// the status is sent a failure only ends the body (the archive is then
// incomplete and does not open). Bounded by twice the request timeout.
func (h *Handler) diagnostics(c echo.Context) error {
	deadline := time.Now().Add(2 * h.Svc.RequestTimeout())
	ctx, cancel := context.WithDeadline(c.Request().Context(), deadline)
	defer cancel()
	extendDeadlines(c.Response().Writer, deadline.Add(5*time.Second))
	b, err := h.Svc.Diagnostics(ctx, c.Param("vmclusterId"))
	if err != nil {
		return err
	}
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "application/gzip")
	w.Header().Set(echo.HeaderContentDisposition, fmt.Sprintf("attachment; filename=%q", "diagnostics-"+b.o.vm.HelmReleaseInfo.ReleaseName+".tar.gz"))
	w.WriteHeader(http.StatusOK)
	_ = b.WriteTo(ctx, w)
	return nil
}

// podsPageToken is the cursor of a Pods page: the name it starts after.
type podsPageToken struct {
	After string `json:"a"`
}

func encodePageToken(after string) string { return listing.Encode(podsPageToken{After: after}) }

func (h *Handler) pods(c echo.Context) error {
	q := c.QueryParams()
	after := ""
	size, vs := listing.SnakeCase.Parse(q, func(tok string) error {
		var t podsPageToken
		err := listing.Decode(tok, &t)
		after = t.After
		if err != nil || t.After == "" {
			return listing.ErrInvalid
		}
		return nil
	})
	if len(vs) > 0 {
		return apierror.InvalidArgument("the list request is invalid", vs...)
	}
	out, err := h.Svc.Pods(c.Request().Context(), c.Param("vmclusterId"), size, after)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// ParseLogs validates the logs query (one violation per bad parameter).
// limitBytes defaults to, and may not exceed, max.
func ParseLogs(q url.Values, max int64) (LogRequest, *apierror.Error) {
	req := LogRequest{Container: q.Get("container"), LimitBytes: max}
	var vs []apierror.FieldViolation
	positive := func(name string, limit int64) *int64 {
		s := q.Get(name)
		if s == "" {
			return nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 || n > limit {
			vs = append(vs, apierror.Violation(name, "must be an integer between 1 and %d", limit))
			return nil
		}
		return &n
	}
	boolean := func(name string) bool {
		s := q.Get(name)
		if s == "" {
			return false
		}
		b, err := strconv.ParseBool(s)
		if err != nil {
			vs = append(vs, apierror.Violation(name, "must be true or false"))
		}
		return b
	}
	req.TailLines = positive("tailLines", 1_000_000)
	req.SinceSeconds = positive("sinceSeconds", 366*24*3600)
	if n := positive("limitBytes", max); n != nil {
		req.LimitBytes = *n
	}
	req.Previous, req.Timestamps, req.Follow = boolean("previous"), boolean("timestamps"), boolean("follow")
	if len(vs) > 0 {
		return LogRequest{}, apierror.InvalidArgument("the logs request is invalid", vs...)
	}
	return req, nil
}

// logs answers text/plain. Without follow the log is read first, so an
// error is an ordinary error body. With follow=true the body is streamed
// (chunked transfer encoding, flushed as lines arrive) until the
// container's log ends, limitBytes is reached, the client goes away or
// the server's --log-follow-max-duration passes; the response is a 200
// whose body simply ends then.
func (h *Handler) logs(c echo.Context) error {
	req, verr := ParseLogs(c.QueryParams(), h.Svc.MaxLogBytes)
	if verr != nil {
		return verr
	}
	ctx := c.Request().Context()
	var cancel func()
	if req.Follow {
		deadline := time.Now().Add(h.Svc.FollowMaxDuration)
		ctx, cancel = context.WithDeadline(ctx, deadline)
		extendDeadlines(c.Response().Writer, deadline.Add(5*time.Second))
	} else {
		ctx, cancel = context.WithDeadline(ctx, time.Now().Add(h.Svc.RequestTimeout()))
	}
	defer cancel()
	rc, err := h.Svc.Logs(ctx, c.Param("vmclusterId"), c.Param("pod"), req)
	if err != nil {
		return err
	}
	defer rc.Close()
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, echo.MIMETextPlainCharsetUTF8)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if !req.Follow {
		body, err := io.ReadAll(rc)
		if err != nil {
			return apierror.Unavailable("reading the log failed; retry the request").WithCause(err)
		}
		return c.Blob(http.StatusOK, echo.MIMETextPlainCharsetUTF8, body)
	}
	w.WriteHeader(http.StatusOK)
	w.Flush()
	// The status is sent: a failure now only ends the body.
	_ = copyFlushing(w, w.Flush, rc)
	return nil
}

func (h *Handler) exec(c echo.Context) error {
	body, err := server.ReadBody(c)
	if err != nil {
		return err
	}
	var req ExecRequest
	if verr := jsonbody.Decode(body, &req); verr != nil {
		return verr
	}
	ctx := c.Request().Context()
	// The audit line records the command, allowed or not.
	auth.RecordDetail(ctx, "command", req.Command)
	if verr := ValidateExec(&req, h.Svc.ExecAllowed); verr != nil {
		return verr
	}
	auth.RecordDetail(ctx, "container", req.Container)
	timeout := time.Duration(req.TimeoutSeconds)*time.Second + 10*time.Second
	extendDeadlines(c.Response().Writer, time.Now().Add(timeout+5*time.Second))
	ctx, cancel := context.WithDeadline(ctx, time.Now().Add(timeout))
	defer cancel()
	res, err := h.Svc.Exec(ctx, c.Param("vmclusterId"), c.Param("pod"), req)
	if err != nil {
		return err
	}
	auth.RecordDetail(ctx, "exitCode", res.ExitCode)
	return c.JSON(http.StatusOK, res)
}
