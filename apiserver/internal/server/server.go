// Package server builds the ops-apiserver HTTP handler: echo with the
// request id, request logging, Prometheus metrics, panic recovery, request
// timeout and body limit middleware, the one central error handler that
// writes every error as the AIP-193 body, /healthz, /readyz and /metrics.
//
// Resources plug in as APIs: each lists its routes with the permission
// they need, so authentication and authorization wrap every route
// (Options.Guard, package auth) without touching the resources. A route
// must either name its permission or say it is public.
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"runtime/debug"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/operator/pkg/buildinfo"
)

// Route is one REST operation.
type Route struct {
	// Method and Path as echo takes them (":param" for path parameters).
	Method string
	Path   string
	// Name is the operation id ("vmclusters.create"), as in the OpenAPI
	// document, used in logs.
	Name    string
	Handler echo.HandlerFunc
	// Resource and Verb are the permission the route needs (for example
	// "vmclusters", "create"); authorization maps them to a Kubernetes
	// SubjectAccessReview. Required unless Public.
	Resource string
	Verb     string
	// Public routes (the OpenAPI document) are served to anyone.
	Public bool
	// LongRunning routes (log streams, exec) are not bounded by
	// Options.RequestTimeout: their handlers bound themselves.
	LongRunning bool
	// Watch list routes stream changes when asked with ?watch=true
	// (package watch); those requests are long running, the others not.
	Watch bool
}

// API is a set of routes (one resource, or the OpenAPI document).
type API interface {
	Routes() []Route
}

// Options configure New.
type Options struct {
	Logger logr.Logger
	// Registry receives the HTTP metrics and is served on /metrics.
	Registry *prometheus.Registry
	// MaxBodyBytes bounds request bodies.
	MaxBodyBytes int64
	// RequestTimeout bounds the context of each request.
	RequestTimeout time.Duration
	// Ready reports readiness for /readyz; nil error means ready.
	Ready func(context.Context) error
	// Guard, when set, wraps the handler of every route that is not
	// Public (authentication, rate limit, authorization, audit). It runs
	// after the request id, logging, metrics and recovery.
	Guard func(Route) echo.MiddlewareFunc
	// QueryParameters, when set, lists the query parameters of each
	// route ("METHOD path", as the OpenAPI document declares them:
	// openapi.QueryParameters). A request to a listed route that is not
	// Public with any other query parameter is a 400 naming it, after the
	// Guard and before the handler: one policy for every resource's route,
	// the document its only list.
	QueryParameters map[string][]string
}

// Paths of the operational endpoints.
const (
	PathHealthz = "/healthz"
	PathReadyz  = "/readyz"
	PathMetrics = "/metrics"
	// PathVersion answers the build (buildinfo), without a token.
	PathVersion = "/version"
)

// New builds the echo instance with every API's routes.
func New(opts Options, apis ...API) (*echo.Echo, error) {
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 1 << 20
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = 30 * time.Second
	}
	m, err := newMetrics(opts.Registry)
	if err != nil {
		return nil, err
	}

	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = ErrorHandler
	// The peer address, not X-Forwarded-For: logs must not be spoofable.
	e.IPExtractor = echo.ExtractIPDirect()
	// Metrics are labelled by route template; anything else is "unmatched",
	// so that the label set stays bounded whatever paths clients send.
	known := map[string]bool{}
	longRunning := map[string]bool{}
	watchable := map[string]bool{}
	e.Use(requestID, observe(opts.Logger, m, known), recoverPanic, timeout(opts.RequestTimeout, longRunning, watchable), bodyLimit(opts.MaxBodyBytes))

	e.GET(PathHealthz, func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
	}).Name = "healthz"
	e.GET(PathReadyz, func(c echo.Context) error {
		if opts.Ready != nil {
			if err := opts.Ready(c.Request().Context()); err != nil {
				return apierror.Unavailable("not ready: %v", err)
			}
		}
		return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
	}).Name = "readyz"
	e.GET(PathVersion, func(c echo.Context) error {
		i := buildinfo.Get()
		return c.JSON(http.StatusOK, map[string]string{"version": i.Version, "revision": i.Revision, "goVersion": i.GoVersion})
	}).Name = "version"
	e.GET(PathMetrics, echo.WrapHandler(promhttp.HandlerFor(opts.Registry, promhttp.HandlerOpts{}))).Name = "metrics"
	known[PathHealthz], known[PathReadyz], known[PathMetrics], known[PathVersion] = true, true, true, true

	seen := map[string]bool{}
	for _, api := range apis {
		for _, r := range api.Routes() {
			key := r.Method + " " + r.Path
			if seen[key] {
				return nil, fmt.Errorf("route %s registered twice", key)
			}
			seen[key] = true
			if !r.Public && (r.Resource == "" || r.Verb == "") {
				return nil, fmt.Errorf("route %s (%s) names no permission (Resource and Verb) and is not Public", key, r.Name)
			}
			known[r.Path] = true
			longRunning[key] = r.LongRunning
			watchable[key] = r.Watch
			var mw []echo.MiddlewareFunc
			if opts.Guard != nil && !r.Public {
				mw = append(mw, opts.Guard(r))
			}
			if names, ok := opts.QueryParameters[key]; ok && !r.Public {
				mw = append(mw, onlyQuery(names))
			}
			e.Add(r.Method, r.Path, r.Handler, mw...).Name = r.Name
		}
	}
	return e, nil
}

// NewHTTPServer wraps h in an http.Server whose every read and write is
// bounded.
func NewHTTPServer(h http.Handler, log logr.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      90 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          newStdLogger(log),
	}
}

// Serve serves srv on ln until ctx ends, then shuts it down gracefully
// within timeout.
func Serve(ctx context.Context, srv *http.Server, ln net.Listener, timeout time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutting down %s: %w", ln.Addr(), err)
	}
	return nil
}

// ---- request id ----

type requestIDKey struct{}

// HeaderRequestID carries the request id in and out.
const HeaderRequestID = "X-Request-Id"

var requestIDRE = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// RequestID returns the request id stored in ctx.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// requestID keeps a well-formed incoming X-Request-Id, or makes one, and
// echoes it in the response.
func requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get(HeaderRequestID)
		if !requestIDRE.MatchString(id) {
			id = newRequestID()
		}
		c.Response().Header().Set(HeaderRequestID, id)
		c.SetRequest(c.Request().WithContext(context.WithValue(c.Request().Context(), requestIDKey{}, id)))
		return next(c)
	}
}

func newRequestID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Sprintf("t%d", time.Now().UnixNano())
	}
	return hex.EncodeToString(b[:])
}

// ---- logging and metrics ----

// observe writes errors through the central handler (so the final status
// is known), then logs the request and records its metrics. The logger,
// with the request id, is put into the request context for the handlers.
func observe(log logr.Logger, m *metrics, known map[string]bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			req := c.Request()
			rlog := log.WithValues("requestID", RequestID(req.Context()))
			c.SetRequest(req.WithContext(logr.NewContext(req.Context(), rlog)))

			err := next(c)
			if err != nil {
				c.Error(err)
			}

			route := c.Path()
			if !known[route] {
				route = "unmatched"
			}
			status := c.Response().Status
			elapsed := time.Since(start)
			m.observe(route, req.Method, status, elapsed)

			kv := []any{
				"method", req.Method, "route", route, "path", req.URL.Path,
				"status", status, "durationMs", elapsed.Milliseconds(), "bytesOut", c.Response().Size,
				"remote", c.RealIP(),
			}
			switch {
			case status >= 500:
				rlog.Error(err, "Request failed", kv...)
			case status >= 400:
				msg := ""
				if ae, ok := apierror.As(err); ok {
					msg = ae.Message
				} else if err != nil {
					msg = err.Error()
				}
				rlog.Info("Request rejected", append(kv, "error", msg)...)
			case route == PathHealthz || route == PathReadyz || route == PathMetrics || route == PathVersion:
				rlog.V(1).Info("Request handled", kv...)
			default:
				rlog.Info("Request handled", kv...)
			}
			return nil
		}
	}
}

type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ops_apiserver_http_requests_total",
			Help: "HTTP requests by route template, method and status code.",
		}, []string{"route", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ops_apiserver_http_request_duration_seconds",
			Help:    "HTTP request latency by route template and method.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route", "method"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering HTTP metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) observe(route, method string, code int, d time.Duration) {
	m.requests.WithLabelValues(route, method, fmt.Sprint(code)).Inc()
	m.latency.WithLabelValues(route, method).Observe(d.Seconds())
}

// ---- recovery, timeout, body limit ----

// recoverPanic turns a panic in a handler into a 500; the stack goes to
// the log through the returned error.
func recoverPanic(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				err = apierror.Internal(fmt.Errorf("panic: %v\n%s", r, debug.Stack()))
			}
		}()
		return next(c)
	}
}

// timeout bounds the context of every request but those of the
// longRunning routes ("METHOD path") and the watches (?watch=true) of the
// watchable ones.
func timeout(d time.Duration, longRunning, watchable map[string]bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			key := c.Request().Method + " " + c.Path()
			if longRunning[key] || watchable[key] && isWatch(c.QueryParam("watch")) {
				return next(c)
			}
			ctx, cancel := context.WithTimeout(c.Request().Context(), d)
			defer cancel()
			c.SetRequest(c.Request().WithContext(ctx))
			return next(c)
		}
	}
}

// isWatch is the "yes" of watch.ParseWatch (the same values).
func isWatch(v string) bool { return v == "true" || v == "1" }

// bodyLimit rejects bodies declared larger than limit at once and bounds
// the reading of the others (ReadBody turns the overflow into a 400).
func bodyLimit(limit int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			if req.ContentLength > limit {
				return tooLarge(limit)
			}
			if req.Body != nil {
				req.Body = http.MaxBytesReader(c.Response(), req.Body, limit)
			}
			return next(c)
		}
	}
}

func tooLarge(limit int64) *apierror.Error {
	return apierror.InvalidArgument("the request body is too large",
		apierror.Violation("body", "the request body exceeds the limit of %d bytes", limit))
}

// ReadBody reads the whole (already bounded) request body. An oversized
// body is a 400 with a field violation on "body".
func ReadBody(c echo.Context) ([]byte, error) {
	req := c.Request()
	if req.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(req.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge(mbe.Limit)
		}
		return nil, apierror.InvalidArgument("the request body could not be read",
			apierror.Violation("body", "reading the request body failed"))
	}
	return b, nil
}

// onlyQuery refuses a request with a query parameter that is not one of
// names: a 400 INVALID_ARGUMENT with one field violation per unknown
// parameter, so that a misspelt filter is never silently ignored.
func onlyQuery(names []string) echo.MiddlewareFunc {
	known := make(map[string]bool, len(names))
	for _, n := range names {
		known[n] = true
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if c.Request().URL.RawQuery == "" {
				return next(c)
			}
			var unknown []string
			for k := range c.QueryParams() {
				if !known[k] {
					unknown = append(unknown, k)
				}
			}
			if len(unknown) == 0 {
				return next(c)
			}
			slices.Sort(unknown)
			v := make([]apierror.FieldViolation, 0, len(unknown))
			for _, k := range unknown {
				v = append(v, apierror.Violation(k, "unknown query parameter"))
			}
			return apierror.InvalidArgument("unknown query parameter", v...)
		}
	}
}
