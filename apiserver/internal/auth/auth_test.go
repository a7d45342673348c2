package auth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/labstack/echo/v4"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/tidbcloud/ops-server/apiserver/internal/server"
)

func TestTokenFileHashedAndReloaded(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens.csv")
	write := func(content string, mod time.Time) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now().Add(-time.Hour)
	write("# dev tokens\n"+HashToken("s3cret")+`,alice,u-1,"team-a,team-b"`+"\n", t0)
	f, err := NewTokenFile(path, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	f.now = func() time.Time { return now }

	u, ok, err := f.AuthenticateToken(context.Background(), "s3cret")
	if err != nil || !ok || u.Name != "alice" || u.UID != "u-1" || strings.Join(u.Groups, "|") != "team-a|team-b" {
		t.Fatalf("s3cret = %+v, %v, %v; want alice in team-a and team-b", u, ok, err)
	}
	if _, ok, _ := f.AuthenticateToken(context.Background(), "other"); ok {
		t.Fatal("an unlisted token was accepted")
	}
	// The hash itself is not a token.
	if _, ok, _ := f.AuthenticateToken(context.Background(), HashToken("s3cret")); ok {
		t.Fatal("the stored hash was accepted as a token")
	}

	// Replace the token: picked up at the next check (at most once a second).
	write(HashToken("new-one")+",bob\n", t0.Add(time.Minute))
	now = now.Add(2 * time.Second)
	if _, ok, _ := f.AuthenticateToken(context.Background(), "s3cret"); ok {
		t.Fatal("a removed token still works after the file changed")
	}
	if u, ok, _ := f.AuthenticateToken(context.Background(), "new-one"); !ok || u.Name != "bob" {
		t.Fatalf("new-one = %+v, %v; want bob", u, ok)
	}

	// A broken file keeps the previous tokens.
	write("not-a-hash,carol\n", t0.Add(2*time.Minute))
	now = now.Add(2 * time.Second)
	if u, ok, _ := f.AuthenticateToken(context.Background(), "new-one"); !ok || u.Name != "bob" {
		t.Fatalf("after a broken edit new-one = %+v, %v; want the previous tokens kept", u, ok)
	}
}

func TestParseTokenFileRejectsClearTokens(t *testing.T) {
	for _, bad := range []string{
		"s3cret,alice\n",
		"sha256:abcd,alice\n",
		HashToken("x") + ",\n",
		HashToken("x") + ",a\n" + HashToken("x") + ",b\n",
	} {
		if _, err := ParseTokenFile([]byte(bad)); err == nil {
			t.Errorf("ParseTokenFile(%q) succeeded; want an error", bad)
		}
	}
}

func TestRateLimiterPerCaller(t *testing.T) {
	l := NewRateLimiter(1, 2)
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	for i := range 2 {
		if ok, _ := l.Allow("alice"); !ok {
			t.Fatalf("request %d of the burst refused", i+1)
		}
	}
	ok, wait := l.Allow("alice")
	if ok || wait <= 0 || wait > time.Second {
		t.Fatalf("third request = %v, wait %s; want refused with a wait of at most 1s", ok, wait)
	}
	if ok, _ := l.Allow("bob"); !ok {
		t.Fatal("another caller was limited by alice's requests")
	}
	now = now.Add(time.Second)
	if ok, _ := l.Allow("alice"); !ok {
		t.Fatal("alice still refused after the bucket refilled")
	}
	if NewRateLimiter(0, 10) != nil {
		t.Fatal("qps 0 must disable the limit")
	}
	if retryAfterSeconds(300*time.Millisecond) != 1 || retryAfterSeconds(1500*time.Millisecond) != 2 {
		t.Fatal("Retry-After must round up to whole seconds, at least 1")
	}
}

func TestTTLCacheExpires(t *testing.T) {
	c := newTTLCache[int](time.Second, 2)
	now := time.Unix(0, 0)
	c.now = func() time.Time { return now }
	c.put("a", 1)
	if v, ok := c.get("a"); !ok || v != 1 {
		t.Fatal("fresh entry missing")
	}
	now = now.Add(time.Second)
	if _, ok := c.get("a"); ok {
		t.Fatal("expired entry returned")
	}
	c.put("a", 1)
	c.put("b", 2)
	c.put("c", 3) // full: cleared
	if _, ok := c.get("a"); ok {
		t.Fatal("the cache grew past its bound")
	}
	if v, ok := c.get("c"); !ok || v != 3 {
		t.Fatal("latest entry missing")
	}
}

type fakeAuthn map[string]*User

func (f fakeAuthn) AuthenticateToken(_ context.Context, token string) (*User, bool, error) {
	if token == "broken" {
		return nil, false, errors.New("TokenReview unavailable")
	}
	u, ok := f[token]
	return u, ok, nil
}

type fakeAuthz struct{ grants map[string]bool }

func (f fakeAuthz) Authorize(_ context.Context, u *User, p Permission) (Decision, error) {
	return Decision{Allowed: f.grants[u.Name+" "+p.Verb+" "+p.Resource]}, nil
}

type api struct{ calls *int }

func (a api) Routes() []server.Route {
	return []server.Route{
		{Method: http.MethodGet, Path: "/things/:id", Name: "things.get", Resource: "things", Verb: "get", Handler: func(c echo.Context) error {
			*a.calls++
			if c.Param("id") != "exists" {
				return echo.NewHTTPError(http.StatusNotFound, "no such thing")
			}
			return c.JSON(http.StatusOK, map[string]string{"by": CallerName(c.Request().Context())})
		}},
		{Method: http.MethodPost, Path: "/things", Name: "things.create", Resource: "things", Verb: "create", Handler: func(c echo.Context) error {
			*a.calls++
			RecordTarget(c.Request().Context(), corev1.ObjectReference{Kind: "Thing", Namespace: "ns", Name: "t1"}, "CreatedThroughAPI", "Created")
			return c.JSON(http.StatusAccepted, map[string]string{"by": CallerName(c.Request().Context())})
		}},
		{Method: http.MethodGet, Path: "/doc", Name: "doc", Public: true, Handler: func(c echo.Context) error {
			return c.String(http.StatusOK, "doc")
		}},
	}
}

func TestGuard(t *testing.T) {
	var calls int
	var audit []string
	rec := record.NewFakeRecorder(10)
	g := &Guard{
		Authenticator: fakeAuthn{"alice-token": {Name: "alice"}, "bob-token": {Name: "bob"}},
		Authorizer:    fakeAuthz{grants: map[string]bool{"alice get things": true, "alice create things": true}},
		Namespace:     "observability",
		Limiter:       NewRateLimiter(0.001, 5),
		Audit:         funcr.New(func(_, args string) { audit = append(audit, args) }, funcr.Options{}),
		Recorder:      rec,
	}
	e, err := server.New(server.Options{Guard: g.Middleware}, api{calls: &calls})
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, nil)
		req.Header.Set(server.HeaderRequestID, "req-1")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		e.ServeHTTP(w, req)
		return w
	}

	w := do(http.MethodGet, "/things/exists", "")
	if w.Code != http.StatusUnauthorized || !strings.HasPrefix(w.Header().Get(HeaderWWWAuthenticate), "Bearer") {
		t.Fatalf("no token: %d %q; want 401 with WWW-Authenticate: Bearer", w.Code, w.Header().Get(HeaderWWWAuthenticate))
	}
	w = do(http.MethodGet, "/things/exists", "nope")
	if w.Code != http.StatusUnauthorized || !strings.Contains(w.Header().Get(HeaderWWWAuthenticate), "invalid_token") {
		t.Fatalf("bad token: %d %q; want 401 invalid_token", w.Code, w.Header().Get(HeaderWWWAuthenticate))
	}
	if w = do(http.MethodGet, "/things/exists", "broken"); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("TokenReview down: %d; want 503", w.Code)
	}
	// bob may not: the same 403 whether the thing exists or not, and the
	// handler never runs.
	w1, w2 := do(http.MethodGet, "/things/exists", "bob-token"), do(http.MethodGet, "/things/missing", "bob-token")
	if w1.Code != http.StatusForbidden || w2.Code != http.StatusForbidden || w1.Body.String() != w2.Body.String() {
		t.Fatalf("forbidden: %d %s / %d %s; want identical 403s", w1.Code, w1.Body, w2.Code, w2.Body)
	}
	if !strings.Contains(w1.Body.String(), `cannot get resource \"things\" in API group \"ops.observability.tidbcloud.com\" in the namespace \"observability\"`) {
		t.Fatalf("403 body %s does not name the missing permission", w1.Body)
	}
	if calls != 0 {
		t.Fatalf("handlers ran %d times for rejected requests", calls)
	}
	if w = do(http.MethodGet, "/doc", ""); w.Code != http.StatusOK {
		t.Fatalf("public route: %d; want 200 without a token", w.Code)
	}

	if w = do(http.MethodGet, "/things/exists", "alice-token"); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"by":"alice"`) {
		t.Fatalf("alice get: %d %s", w.Code, w.Body)
	}
	if len(audit) != 0 {
		t.Fatalf("a read was audited: %v", audit)
	}
	if w = do(http.MethodPost, "/things", "alice-token"); w.Code != http.StatusAccepted {
		t.Fatalf("alice create: %d %s", w.Code, w.Body)
	}
	if len(audit) != 1 || !strings.Contains(audit[0], `"user"="alice"`) || !strings.Contains(audit[0], `"operation"="things.create"`) ||
		!strings.Contains(audit[0], `"status"=202`) || !strings.Contains(audit[0], `"target"="Thing ns/t1"`) || !strings.Contains(audit[0], `"requestID"=`) {
		t.Fatalf("audit lines = %v; want one naming alice, the operation, the status, the target and the request id", audit)
	}
	select {
	case ev := <-rec.Events:
		if !strings.Contains(ev, "CreatedThroughAPI") || !strings.Contains(ev, `"alice"`) {
			t.Fatalf("event %q does not name the caller", ev)
		}
	default:
		t.Fatal("no Event recorded for the create")
	}

	// The burst of 5 is spent (2 gets + 1 create + ... ): the next ones are 429.
	var limited *httptest.ResponseRecorder
	for range 5 {
		if w := do(http.MethodGet, "/things/exists", "alice-token"); w.Code == http.StatusTooManyRequests {
			limited = w
			break
		}
	}
	if limited == nil || limited.Header().Get(HeaderRetryAfter) == "" {
		t.Fatal("no 429 with Retry-After after the burst")
	}
	if w = do(http.MethodGet, "/things/missing", "bob-token"); w.Code != http.StatusForbidden {
		t.Fatalf("bob was limited by alice's requests: %d", w.Code)
	}
}

func TestGuardDisabled(t *testing.T) {
	var calls int
	g := &Guard{Disabled: true, Audit: logr.Discard()}
	e, err := server.New(server.Options{Guard: g.Middleware}, api{calls: &calls})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	e.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/things", nil))
	if w.Code != http.StatusAccepted || !strings.Contains(w.Body.String(), `"by":"anonymous"`) {
		t.Fatalf("auth disabled: %d %s; want 202 as anonymous", w.Code, w.Body)
	}
}
