package auth

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"github.com/labstack/echo/v4"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/server"
)

// Reasons (ErrorInfo.reason) of the errors of this package.
const (
	ReasonNoCredentials    = "NO_CREDENTIALS"
	ReasonInvalidToken     = "INVALID_TOKEN"
	ReasonForbidden        = "FORBIDDEN"
	ReasonRateLimited      = "RATE_LIMITED"
	ReasonAuthUnavailable  = "AUTH_UNAVAILABLE"
	HeaderWWWAuthenticate  = "WWW-Authenticate"
	HeaderRetryAfter       = "Retry-After"
	realm                  = `Bearer realm="ops-apiserver"`
	anonymousWhenAuthIsOff = "anonymous"
)

// Guard rate-limits, authenticates, authorizes and audits the requests of
// every non-public route (server.Options.Guard), in this order:
//
//  1. the per-client-address limit (ClientLimiter), before anything else,
//     so that a flood of requests with bad or no tokens from one address
//     is refused without a TokenReview and cannot starve other callers;
//  2. authentication (a bearer token, checked with TokenReview);
//  3. the per-user limit (Limiter);
//  4. authorization (a SubjectAccessReview), before any lookup.
//
// A request refused by any of them (401, 403, 429, 503) leaves an audit
// line, and so does every mutating request. Error bodies say what the
// caller must do; what TokenReview or SubjectAccessReview answered or
// failed with goes to the log only.
type Guard struct {
	// Authenticator checks bearer tokens. Required unless Disabled.
	Authenticator Authenticator
	// Authorizer checks each route's permission. Required unless
	// Disabled.
	Authorizer Authorizer
	// Namespace is the namespace permissions are checked in (a RoleBinding
	// there grants access).
	Namespace string
	// ClientLimiter limits each client address's request rate (see
	// ClientKey), before authentication; nil: no limit.
	ClientLimiter *RateLimiter
	// Limiter limits each caller's request rate; nil: no limit.
	Limiter *RateLimiter
	// Audit receives one line per mutating or refused request.
	Audit logr.Logger
	// Recorder, when set, records an Event naming the caller on the object
	// a mutating request changed (see RecordTarget).
	Recorder record.EventRecorder
	// Disabled serves every request without authentication or
	// authorization (explicit local use only). Rate limits and audit still
	// apply, with every caller named "anonymous".
	Disabled bool
}

// Middleware implements server.Options.Guard.
func (g *Guard) Middleware(r server.Route) echo.MiddlewareFunc {
	perm := Permission{Verb: r.Verb, Resource: r.Resource, Namespace: g.Namespace}
	mutating := r.Method != http.MethodGet && r.Method != http.MethodHead
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			u, err := g.check(c, perm)
			if err != nil {
				g.auditRefusal(c, r, u, err)
				return err
			}
			rec := &auditRecord{}
			ctx := context.WithValue(WithUser(c.Request().Context(), u), auditKey{}, rec)
			ctx = context.WithValue(ctx, requireKey{}, func(ctx context.Context, verb, resource string) error {
				return g.authorize(ctx, u, Permission{Verb: verb, Resource: resource, Namespace: g.Namespace})
			})
			c.SetRequest(c.Request().WithContext(ctx))
			if !mutating {
				return next(c)
			}
			if err := next(c); err != nil {
				c.Error(err)
			}
			g.audit(c, r, u, rec)
			return nil
		}
	}
}

// check runs the limits, authentication and authorization of a request.
// It returns the user whenever it is known, with the error that refuses
// the request, if any.
func (g *Guard) check(c echo.Context, perm Permission) (*User, error) {
	if ok, wait := g.ClientLimiter.Allow(ClientKey(c.RealIP())); !ok {
		c.Response().Header().Set(HeaderRetryAfter, strconv.Itoa(retryAfterSeconds(wait)))
		return nil, apierror.ResourceExhausted(ReasonRateLimited, "too many requests from this client address; retry after %s", wait.Round(1e6))
	}
	u, err := g.authenticate(c)
	if err != nil {
		return nil, err
	}
	if ok, wait := g.Limiter.Allow(u.Name); !ok {
		c.Response().Header().Set(HeaderRetryAfter, strconv.Itoa(retryAfterSeconds(wait)))
		return u, apierror.ResourceExhausted(ReasonRateLimited, "too many requests from %q; retry after %s", u.Name, wait.Round(1e6))
	}
	if g.Disabled {
		return u, nil
	}
	// Authorize before any lookup: a forbidden caller learns nothing
	// about which objects exist.
	return u, g.authorize(c.Request().Context(), u, perm)
}

// authorize refuses a user without perm (nothing when auth is off).
func (g *Guard) authorize(ctx context.Context, u *User, perm Permission) error {
	if g.Disabled {
		return nil
	}
	d, err := g.Authorizer.Authorize(ctx, u, perm)
	if err != nil {
		// The cause is logged with the request, never shown.
		return apierror.Unavailable("cannot check permissions now; retry later").WithReason(ReasonAuthUnavailable).WithCause(err)
	}
	if !d.Allowed {
		return apierror.PermissionDenied(ReasonForbidden, "user %q cannot %s", u.Name, perm).
			WithMetadata("verb", perm.Verb).WithMetadata("resource", perm.Resource).
			WithMetadata("apiGroup", Group).WithMetadata("namespace", perm.Namespace)
	}
	return nil
}

type requireKey struct{}

// Require refuses (403, as the Guard does) a request whose caller lacks a
// further permission that a part of its body needs (restore_from on a
// vmcluster create needs clusterrestores create). Outside a guarded
// request (tests of a service alone) it allows.
func Require(ctx context.Context, verb, resource string) error {
	if f, ok := ctx.Value(requireKey{}).(func(context.Context, string, string) error); ok {
		return f(ctx, verb, resource)
	}
	return nil
}

func (g *Guard) authenticate(c echo.Context) (*User, error) {
	if g.Disabled {
		return &User{Name: anonymousWhenAuthIsOff}, nil
	}
	h := c.Request().Header.Get(echo.HeaderAuthorization)
	scheme, token, _ := strings.Cut(h, " ")
	token = strings.TrimSpace(token)
	if h == "" || !strings.EqualFold(scheme, "Bearer") || token == "" {
		c.Response().Header().Set(HeaderWWWAuthenticate, realm)
		return nil, apierror.Unauthenticated(ReasonNoCredentials, "authentication required: send a bearer token (Authorization: Bearer <token>)")
	}
	u, ok, err := g.Authenticator.AuthenticateToken(c.Request().Context(), token)
	if err != nil && !ok {
		// The cause is logged with the request, never shown.
		return nil, apierror.Unavailable("cannot check credentials now; retry later").WithReason(ReasonAuthUnavailable).WithCause(err)
	}
	if !ok {
		c.Response().Header().Set(HeaderWWWAuthenticate, realm+`, error="invalid_token"`)
		return nil, apierror.Unauthenticated(ReasonInvalidToken, "the bearer token is not valid (expired, revoked, unknown, or minted for another audience)")
	}
	return u, nil
}

// auditRefusal writes the audit line of a request the guard refused: the
// user when it is known, the route, the status and reason, the client
// address and the request id.
func (g *Guard) auditRefusal(c echo.Context, r server.Route, u *User, err error) {
	ae, _ := apierror.As(err)
	status, reason := http.StatusInternalServerError, ""
	if ae != nil {
		status, reason = ae.Code, ae.Reason
	}
	result := "error"
	switch status {
	case http.StatusUnauthorized:
		result = "unauthenticated"
	case http.StatusForbidden:
		result = "forbidden"
	case http.StatusTooManyRequests:
		result = "rate_limited"
	}
	user := ""
	var groups []string
	if u != nil {
		user, groups = u.Name, u.Groups
	}
	g.Audit.Info("Audit",
		"audit", true,
		"user", user, "groups", groups,
		"operation", r.Name, "verb", r.Verb, "resource", r.Resource,
		"method", c.Request().Method, "path", c.Request().URL.Path,
		"status", status, "result", result, "reason", reason,
		"remote", c.RealIP(),
		"requestID", server.RequestID(c.Request().Context()),
	)
}

// audit writes the audit line of a mutating request and, when the
// handler named the object it changed, an Event on it.
func (g *Guard) audit(c echo.Context, r server.Route, u *User, rec *auditRecord) {
	status := c.Response().Status
	result := "success"
	if status >= 400 {
		result = "failure"
	}
	params := map[string]string{}
	for _, n := range c.ParamNames() {
		params[n] = c.Param(n)
	}
	kv := []any{
		"audit", true,
		"user", u.Name, "groups", u.Groups,
		"operation", r.Name, "verb", r.Verb, "resource", r.Resource,
		"method", c.Request().Method, "path", c.Request().URL.Path, "params", params,
		"status", status, "result", result,
		"requestID", server.RequestID(c.Request().Context()),
	}
	targets, details := rec.get()
	kv = append(kv, details...)
	for _, t := range targets {
		kv = append(kv, "target", fmt.Sprintf("%s %s/%s", t.ref.Kind, t.ref.Namespace, t.ref.Name))
	}
	g.Audit.Info("Audit", kv...)
	if g.Recorder == nil || status >= 400 {
		return
	}
	for _, t := range targets {
		ref := t.ref
		g.Recorder.Eventf(&ref, corev1.EventTypeNormal, t.reason, "%s by %q through the REST API (%s, request %s)",
			t.action, u.Name, r.Name, server.RequestID(c.Request().Context()))
	}
}

type auditKey struct{}

type auditRecord struct {
	mu      sync.Mutex
	targets []auditTarget
	details []any
}

type auditTarget struct {
	ref    corev1.ObjectReference
	reason string
	action string
}

func (a *auditRecord) get() ([]auditTarget, []any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]auditTarget(nil), a.targets...), append([]any(nil), a.details...)
}

// RecordDetail adds a key and value to the audit line of a mutating
// request (the command of an exec). Outside a guarded request it does
// nothing.
func RecordDetail(ctx context.Context, key string, value any) {
	rec, _ := ctx.Value(auditKey{}).(*auditRecord)
	if rec == nil {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.details = append(rec.details, key, value)
}

// RecordTarget names the object a mutating request changed, for the audit
// line and the Event recorded on it: reason is the Event reason
// ("CreatedThroughAPI"), action what happened ("Created", "Paused").
// Outside a guarded request it does nothing.
func RecordTarget(ctx context.Context, ref corev1.ObjectReference, reason, action string) {
	rec, _ := ctx.Value(auditKey{}).(*auditRecord)
	if rec == nil {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.targets = append(rec.targets, auditTarget{ref: ref, reason: reason, action: action})
}
