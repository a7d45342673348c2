package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/server"
	"github.com/tidbcloud/ops-server/operator/pkg/buildinfo"
)

type testAPI struct{}

func (testAPI) Routes() []server.Route {
	return []server.Route{
		{Method: http.MethodGet, Path: "/things/:id", Name: "things.get", Public: true, Handler: func(c echo.Context) error {
			switch c.Param("id") {
			case "panic":
				panic("boom")
			case "kube-missing":
				return apierrors.NewNotFound(schema.GroupResource{Resource: "things"}, "x")
			case "kube-conflict":
				return apierrors.NewConflict(schema.GroupResource{Resource: "things"}, "x", errors.New("changed"))
			case "plain":
				return errors.New("something internal with a secret")
			case "invalid":
				return apierror.InvalidArgument("bad", apierror.Violation("name", "too long"))
			}
			return c.JSON(http.StatusOK, map[string]string{"id": c.Param("id"), "requestID": server.RequestID(c.Request().Context())})
		}},
		{Method: http.MethodPost, Path: "/things", Name: "things.create", Public: true, Handler: func(c echo.Context) error {
			b, err := server.ReadBody(c)
			if err != nil {
				return err
			}
			return c.JSON(http.StatusAccepted, map[string]int{"len": len(b)})
		}},
	}
}

func newServer(t *testing.T, ready func(context.Context) error) (http.Handler, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	e, err := server.New(server.Options{Registry: reg, MaxBodyBytes: 1024, Ready: ready}, testAPI{})
	if err != nil {
		t.Fatal(err)
	}
	return e, reg
}

func get(h http.Handler, method, path string, body string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func body(t *testing.T, rec *httptest.ResponseRecorder) apierror.Body {
	t.Helper()
	var b apierror.Body
	if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
		t.Fatalf("not an error body: %s", rec.Body.String())
	}
	return b
}

func TestErrorHandler(t *testing.T) {
	h, _ := newServer(t, nil)
	tests := []struct {
		path, method string
		code         int
		status       string
	}{
		{"/things/panic", http.MethodGet, 500, "INTERNAL"},
		{"/things/kube-missing", http.MethodGet, 404, "NOT_FOUND"},
		{"/things/kube-conflict", http.MethodGet, 409, "ABORTED"},
		{"/things/plain", http.MethodGet, 500, "INTERNAL"},
		{"/things/invalid", http.MethodGet, 400, "INVALID_ARGUMENT"},
		{"/no/such/route", http.MethodGet, 404, "NOT_FOUND"},
		{"/things", http.MethodDelete, 405, "UNIMPLEMENTED"},
	}
	for _, tt := range tests {
		t.Run(tt.method+tt.path, func(t *testing.T) {
			g := NewWithT(t)
			rec := get(h, tt.method, tt.path, "", server.HeaderRequestID, "req-123")
			g.Expect(rec.Code).To(Equal(tt.code))
			g.Expect(rec.Header().Get("Content-Type")).To(HavePrefix("application/json"))
			b := body(t, rec)
			g.Expect(b.Error.Code).To(Equal(tt.code))
			g.Expect(b.Error.Status).To(Equal(tt.status))
			g.Expect(b.Error.Message).NotTo(BeEmpty())
			g.Expect(rec.Body.String()).NotTo(ContainSubstring("secret"), "causes never reach the caller")
			g.Expect(b.Error.Details).To(ContainElement(apierror.Detail{Type: apierror.TypeRequestInfo, RequestID: "req-123"}))
		})
	}

	g := NewWithT(t)
	rec := get(h, http.MethodGet, "/things/invalid", "")
	g.Expect(rec.Body.String()).To(MatchJSON(`{"error":{"code":400,"status":"INVALID_ARGUMENT","message":"bad","details":[
		{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"INVALID_REQUEST","domain":"observability.tidbcloud.com"},
		{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"name","description":"too long"}]},
		{"@type":"type.googleapis.com/google.rpc.RequestInfo","requestId":"` + rec.Header().Get(server.HeaderRequestID) + `"}]}}`))
	rec = get(h, http.MethodDelete, "/things", "")
	g.Expect(rec.Header().Get("Allow")).To(ContainSubstring("POST"))
}

func TestRequestID(t *testing.T) {
	g := NewWithT(t)
	h, _ := newServer(t, nil)
	rec := get(h, http.MethodGet, "/things/a", "", server.HeaderRequestID, "abc-1")
	g.Expect(rec.Header().Get(server.HeaderRequestID)).To(Equal("abc-1"))
	g.Expect(rec.Body.String()).To(ContainSubstring(`"requestID":"abc-1"`))

	rec = get(h, http.MethodGet, "/things/a", "", server.HeaderRequestID, "bad id\x01"+strings.Repeat("x", 200))
	id := rec.Header().Get(server.HeaderRequestID)
	g.Expect(id).To(MatchRegexp(`^[0-9a-f]{32}$`), "a malformed incoming id is replaced")
}

func TestBodyLimit(t *testing.T) {
	g := NewWithT(t)
	h, _ := newServer(t, nil)
	rec := get(h, http.MethodPost, "/things", strings.Repeat("x", 1024))
	g.Expect(rec.Code).To(Equal(http.StatusAccepted))
	rec = get(h, http.MethodPost, "/things", strings.Repeat("x", 1025))
	g.Expect(rec.Code).To(Equal(http.StatusBadRequest))
	g.Expect(body(t, rec).Error.Details).To(ContainElement(HaveField("FieldViolations", ConsistOf(HaveField("Field", "body")))))
}

func TestHealthReadyMetrics(t *testing.T) {
	g := NewWithT(t)
	var notReady error = errors.New("cache not synced")
	h, reg := newServer(t, func(context.Context) error { return notReady })

	g.Expect(get(h, http.MethodGet, server.PathHealthz, "").Code).To(Equal(http.StatusOK))
	rec := get(h, http.MethodGet, server.PathReadyz, "")
	g.Expect(rec.Code).To(Equal(http.StatusServiceUnavailable))
	g.Expect(body(t, rec).Error.Message).To(ContainSubstring("cache not synced"))
	notReady = nil
	g.Expect(get(h, http.MethodGet, server.PathReadyz, "").Code).To(Equal(http.StatusOK))

	get(h, http.MethodGet, "/things/a", "")
	get(h, http.MethodGet, "/things/b", "")
	get(h, http.MethodGet, "/things/kube-missing", "")
	get(h, http.MethodGet, "/random/path/1", "")
	get(h, http.MethodGet, "/random/path/2", "")

	g.Expect(counter(t, reg, "/things/:id", "GET", "200")).To(Equal(2.0))
	g.Expect(counter(t, reg, "/things/:id", "GET", "404")).To(Equal(1.0))
	g.Expect(counter(t, reg, "unmatched", "GET", "404")).To(Equal(2.0))

	rec = get(h, http.MethodGet, server.PathMetrics, "")
	g.Expect(rec.Code).To(Equal(http.StatusOK))
	g.Expect(rec.Body.String()).To(ContainSubstring(`ops_apiserver_http_request_duration_seconds_bucket{method="GET",route="/things/:id"`))
	g.Expect(rec.Body.String()).To(ContainSubstring(`ops_apiserver_http_requests_total{code="200",method="GET",route="/things/:id"} 2`))
}

func TestVersion(t *testing.T) {
	g := NewWithT(t)
	h, _ := newServer(t, nil)
	rec := get(h, http.MethodGet, server.PathVersion, "")
	g.Expect(rec.Code).To(Equal(http.StatusOK))
	var v map[string]string
	g.Expect(json.Unmarshal(rec.Body.Bytes(), &v)).To(Succeed())
	i := buildinfo.Get()
	g.Expect(v).To(Equal(map[string]string{"version": i.Version, "revision": i.Revision, "goVersion": i.GoVersion}))
}

// counter reads the requests counter for the labels from the registry.
func counter(t *testing.T, reg *prometheus.Registry, route, method, code string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "ops_apiserver_http_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["route"] == route && l["method"] == method && l["code"] == code {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func TestDuplicateRoute(t *testing.T) {
	g := NewWithT(t)
	_, err := server.New(server.Options{}, testAPI{}, testAPI{})
	g.Expect(err).To(MatchError(ContainSubstring("registered twice")))
}

type unguarded struct{}

func (unguarded) Routes() []server.Route {
	return []server.Route{{Method: http.MethodGet, Path: "/open", Name: "open", Handler: func(echo.Context) error { return nil }}}
}

// A route that names no permission and is not marked public is a
// programming error caught at start-up, not an unauthenticated route.
func TestRouteWithoutPermissionIsRefused(t *testing.T) {
	_, err := server.New(server.Options{}, unguarded{})
	if err == nil || !strings.Contains(err.Error(), "names no permission") {
		t.Fatalf("err = %v, want a refusal naming the missing permission", err)
	}
}

// deadlineAPI answers whether the request's context has a deadline.
type deadlineAPI struct{}

func (deadlineAPI) Routes() []server.Route {
	h := func(c echo.Context) error {
		_, ok := c.Request().Context().Deadline()
		return c.JSON(http.StatusOK, map[string]bool{"deadline": ok})
	}
	return []server.Route{
		{Method: http.MethodGet, Path: "/watchable", Name: "watchable.list", Public: true, Watch: true, Handler: h},
		{Method: http.MethodGet, Path: "/plain", Name: "plain.list", Public: true, Handler: h},
	}
}

func TestWatchRequestsAreNotBoundByTheRequestTimeout(t *testing.T) {
	for _, tc := range []struct {
		name, path   string
		wantDeadline bool
	}{
		{"a watch of a watchable route", "/watchable?watch=true", false},
		{"watch=1", "/watchable?watch=1", false},
		{"a page of a watchable route", "/watchable", true},
		{"watch=false", "/watchable?watch=false", true},
		{"watch on a route that cannot", "/plain?watch=true", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			e, err := server.New(server.Options{}, deadlineAPI{})
			g.Expect(err).NotTo(HaveOccurred())
			rec := get(e, http.MethodGet, tc.path, "")
			g.Expect(rec.Code).To(Equal(http.StatusOK))
			g.Expect(rec.Body.String()).To(MatchJSON(map[bool]string{true: `{"deadline":true}`, false: `{"deadline":false}`}[tc.wantDeadline]))
		})
	}
}

// TestUnknownQueryParametersAreRefused: a route listed in
// Options.QueryParameters answers a 400 naming every parameter it does not
// declare, and never runs its handler; a route not listed takes any.
func TestUnknownQueryParametersAreRefused(t *testing.T) {
	g := NewWithT(t)
	e, err := server.New(server.Options{QueryParameters: map[string][]string{
		"GET /things/:id": {"view", "page_size"},
		"POST /things":    {},
	}}, guardedThings{})
	g.Expect(err).NotTo(HaveOccurred())

	rec := get(e, http.MethodGet, "/things/a?view=full&page_size=3", "")
	g.Expect(rec.Code).To(Equal(http.StatusOK), rec.Body.String())

	rec = get(e, http.MethodGet, "/things/panic?pagesize=3&view=full&zz=1", "")
	g.Expect(rec.Code).To(Equal(http.StatusBadRequest), "the handler (which panics) never runs")
	b := body(t, rec)
	g.Expect(b.Error.Status).To(Equal("INVALID_ARGUMENT"))
	g.Expect(b.Error.Details).NotTo(BeEmpty())
	g.Expect(rec.Body.String()).To(ContainSubstring(`"field":"pagesize"`))
	g.Expect(rec.Body.String()).To(ContainSubstring(`"field":"zz"`))
	g.Expect(rec.Body.String()).NotTo(ContainSubstring(`"field":"view"`))

	rec = get(e, http.MethodPost, "/things?anything=1", "{}")
	g.Expect(rec.Code).To(Equal(http.StatusBadRequest), rec.Body.String())

	// Public routes (the document, the docs page) take any query.
	e, err = server.New(server.Options{QueryParameters: map[string][]string{"GET /things/:id": {}}}, testAPI{})
	g.Expect(err).NotTo(HaveOccurred())
	rec = get(e, http.MethodGet, "/things/a?anything=1", "")
	g.Expect(rec.Code).To(Equal(http.StatusOK), rec.Body.String())
}

// guardedThings is testAPI's routes as a resource's (not Public).
type guardedThings struct{}

func (guardedThings) Routes() []server.Route {
	rs := testAPI{}.Routes()
	for i := range rs {
		rs[i].Public, rs[i].Resource, rs[i].Verb = false, "things", "get"
	}
	return rs
}
