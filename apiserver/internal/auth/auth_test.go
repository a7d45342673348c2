package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/labstack/echo/v4"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
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

func TestLRUCacheIsBoundedAndExpires(t *testing.T) {
	c := newLRUCache[int](time.Second, 2)
	now := time.Unix(0, 0)
	c.now = func() time.Time { return now }
	a, b, d := cacheKey("a"), cacheKey("b"), cacheKey("d")
	c.put(a, 1)
	c.put(b, 2)
	if v, ok := c.get(a); !ok || v != 1 { // a is now the most recently used
		t.Fatal("fresh entry missing")
	}
	c.put(d, 3) // full: evicts b, the least recently used, and only b
	if _, ok := c.get(b); ok {
		t.Fatal("the least recently used entry was kept past the bound")
	}
	if v, ok := c.get(a); !ok || v != 1 {
		t.Fatal("a recently used entry was evicted instead of the oldest")
	}
	if v, ok := c.get(d); !ok || v != 3 {
		t.Fatal("latest entry missing")
	}
	for i := range 1000 {
		c.put(cacheKey(fmt.Sprint(i)), i)
		if c.len() > 2 {
			t.Fatalf("the cache holds %d entries; bound 2", c.len())
		}
	}
	c.put(a, 1)
	now = now.Add(time.Second)
	if _, ok := c.get(a); ok {
		t.Fatal("expired entry returned")
	}
	if cacheKey("ab", "c") == cacheKey("a", "bc") {
		t.Fatal("cache keys of different parts collide")
	}
}

// fakeTokenReviews answers TokenReviews like kube-apiserver does for
// ServiceAccount tokens: a token "aud:<x>" is valid for audience x only,
// "legacy" is valid but its authenticator is not audience-aware.
func fakeTokenReviews(calls *int) *fake.Clientset {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "tokenreviews", func(action clienttesting.Action) (bool, runtime.Object, error) {
		*calls++
		tr := action.(clienttesting.CreateAction).GetObject().(*authnv1.TokenReview).DeepCopy()
		token := tr.Spec.Token
		switch {
		case token == "legacy":
			tr.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: "legacy"}}
		case strings.HasPrefix(token, "aud:"):
			aud := strings.TrimPrefix(token, "aud:")
			if len(tr.Spec.Audiences) > 0 && !slices.Contains(tr.Spec.Audiences, aud) {
				tr.Status = authnv1.TokenReviewStatus{Error: "[invalid bearer token, token audiences [" + aud + "] is invalid for the target audiences]"}
				break
			}
			tr.Status = authnv1.TokenReviewStatus{Authenticated: true, Audiences: []string{aud}, User: authnv1.UserInfo{Username: "sa-" + aud}}
		default:
			tr.Status = authnv1.TokenReviewStatus{Error: "invalid bearer token"}
		}
		return true, tr, nil
	})
	return cs
}

func TestTokenReviewAudiences(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		audiences []string
		token     string
		want      string // user name; "" means refused
	}{
		{"minted for ops-server", []string{"ops-server"}, "aud:ops-server", "sa-ops-server"},
		{"one of several audiences", []string{"other", "ops-server"}, "aud:ops-server", "sa-ops-server"},
		{"minted for the API server", []string{"ops-server"}, "aud:https://kubernetes.default.svc", ""},
		{"minted for another service", []string{"ops-server"}, "aud:vault", ""},
		{"authenticator not audience-aware", []string{"ops-server"}, "legacy", ""},
		{"no audience configured: the API server's", nil, "aud:https://kubernetes.default.svc", "sa-https://kubernetes.default.svc"},
		{"garbage", []string{"ops-server"}, "garbage", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls int
			a := NewTokenReviewAuthenticator(fakeTokenReviews(&calls).AuthenticationV1().TokenReviews(), tc.audiences, time.Minute, 10)
			u, ok, err := a.AuthenticateToken(ctx, tc.token)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if ok || u != nil {
					t.Fatalf("accepted as %+v; want refused", u)
				}
			} else if !ok || u.Name != tc.want {
				t.Fatalf("= %+v, %v; want %s", u, ok, tc.want)
			}
			// The answer, either way, is cached.
			if _, ok2, _ := a.AuthenticateToken(ctx, tc.token); ok2 != ok || calls != 1 {
				t.Fatalf("second call: ok %v, %d TokenReviews; want the cached answer and 1 review", ok2, calls)
			}
		})
	}
}

func TestTokenReviewCacheRefusedTokensCannotEvictAccepted(t *testing.T) {
	ctx := context.Background()
	var calls int
	a := NewTokenReviewAuthenticator(fakeTokenReviews(&calls).AuthenticationV1().TokenReviews(), []string{"ops-server"}, time.Minute, 4)
	if _, ok, _ := a.AuthenticateToken(ctx, "aud:ops-server"); !ok {
		t.Fatal("valid token refused")
	}
	for i := range 100 {
		if _, ok, _ := a.AuthenticateToken(ctx, fmt.Sprintf("bad-%d", i)); ok {
			t.Fatal("bad token accepted")
		}
	}
	if a.valid.len() != 1 || a.invalid.len() > 4 {
		t.Fatalf("caches hold %d accepted and %d refused; want 1 and at most 4", a.valid.len(), a.invalid.len())
	}
	before := calls
	if _, ok, _ := a.AuthenticateToken(ctx, "aud:ops-server"); !ok || calls != before {
		t.Fatalf("after a flood of bad tokens the valid one needed %d new TokenReviews; want 0", calls-before)
	}
}

func TestRateLimiterBoundsKeys(t *testing.T) {
	l := NewRateLimiter(1, 1)
	l.maxKeys = 3
	for i := range 100 {
		l.Allow(fmt.Sprintf("10.0.0.%d", i))
		if l.keys() > 3 {
			t.Fatalf("the limiter tracks %d keys; bound 3", l.keys())
		}
	}
	// The most recent key is still limited.
	if ok, _ := l.Allow("10.0.0.99"); ok {
		t.Fatal("the most recent key lost its bucket")
	}
}

func TestClientKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7":              "192.0.2.7",
		"::ffff:192.0.2.7":       "192.0.2.7",
		"2001:db8:1:2:3:4:5:6":   "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::1":   "2001:db8:1:2::/64",
		"not-an-ip":              "not-an-ip",
		"2001:db8:1:3::1":        "2001:db8:1:3::/64",
		"fe80::1234:5678:9abc:1": "fe80::/64",
	} {
		if got := ClientKey(in); got != want {
			t.Errorf("ClientKey(%q) = %q; want %q", in, got, want)
		}
	}
}

type fakeAuthn map[string]*User

func (f fakeAuthn) AuthenticateToken(_ context.Context, token string) (*User, bool, error) {
	if token == "broken" {
		return nil, false, errors.New("TokenReview: Post https://10.0.0.1/apis: connection refused")
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
	if w = do(http.MethodGet, "/things/exists", "broken"); w.Code != http.StatusServiceUnavailable || strings.Contains(w.Body.String(), "10.0.0.1") || strings.Contains(w.Body.String(), "TokenReview") {
		t.Fatalf("TokenReview down: %d %s; want 503 that does not echo the TokenReview error", w.Code, w.Body)
	}
	// bob may not: the same 403 whether the thing exists or not, and the
	// handler never runs.
	w1, w2 := do(http.MethodGet, "/things/exists", "bob-token"), do(http.MethodGet, "/things/missing", "bob-token")
	if w1.Code != http.StatusForbidden || w2.Code != http.StatusForbidden || w1.Body.String() != w2.Body.String() {
		t.Fatalf("forbidden: %d %s / %d %s; want identical 403s", w1.Code, w1.Body, w2.Code, w2.Body)
	}
	if !strings.Contains(w1.Body.String(), `cannot get resource \"things\" in API group \"api.ops.observability.tidbcloud.com\" in the namespace \"observability\"`) {
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
	// The refused requests (no token, bad token, TokenReview down, two
	// 403s) each left an audit line; the successful read did not.
	if len(audit) != 5 || !strings.Contains(audit[0], `"result"="unauthenticated"`) || !strings.Contains(audit[0], `"user"=""`) ||
		!strings.Contains(audit[3], `"result"="forbidden"`) || !strings.Contains(audit[3], `"user"="bob"`) || !strings.Contains(audit[3], `"status"=403`) ||
		!strings.Contains(audit[3], `"operation"="things.get"`) || !strings.Contains(audit[3], `"requestID"="req-1"`) {
		t.Fatalf("audit lines = %v; want one per refused request naming the result, the user when known, the route and the request id", audit)
	}
	audit = nil
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
	if last := audit[len(audit)-1]; !strings.Contains(last, `"result"="rate_limited"`) || !strings.Contains(last, `"user"="alice"`) || !strings.Contains(last, `"status"=429`) {
		t.Fatalf("last audit line %s; want alice's 429", last)
	}
	if w = do(http.MethodGet, "/things/missing", "bob-token"); w.Code != http.StatusForbidden {
		t.Fatalf("bob was limited by alice's requests: %d", w.Code)
	}
}

// countingAuthn counts the tokens it is asked about and accepts none.
type countingAuthn struct{ calls *int }

func (a countingAuthn) AuthenticateToken(context.Context, string) (*User, bool, error) {
	*a.calls++
	return nil, false, nil
}

func TestGuardClientLimitRunsBeforeAuthentication(t *testing.T) {
	var calls, reviews int
	var audit []string
	g := &Guard{
		Authenticator: countingAuthn{calls: &reviews},
		Authorizer:    fakeAuthz{},
		Namespace:     "observability",
		ClientLimiter: NewRateLimiter(0.001, 3),
		Audit:         funcr.New(func(_, args string) { audit = append(audit, args) }, funcr.Options{}),
	}
	e, err := server.New(server.Options{Guard: g.Middleware}, api{calls: &calls})
	if err != nil {
		t.Fatal(err)
	}
	do := func(remote string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/things/exists", nil)
		req.RemoteAddr = remote
		req.Header.Set("Authorization", "Bearer flood")
		// A forged forwarding header must not give a new bucket.
		req.Header.Set("X-Forwarded-For", remote+"0")
		w := httptest.NewRecorder()
		e.ServeHTTP(w, req)
		return w
	}
	codes := map[int]int{}
	for range 20 {
		codes[do("192.0.2.1:4000").Code]++
	}
	if codes[http.StatusUnauthorized] != 3 || codes[http.StatusTooManyRequests] != 17 || reviews != 3 {
		t.Fatalf("20 requests from one address: %v with %d token checks; want 3 x 401, 17 x 429 and 3 checks", codes, reviews)
	}
	w := do("192.0.2.1:4001")
	if w.Code != http.StatusTooManyRequests || w.Header().Get(HeaderRetryAfter) == "" || reviews != 3 {
		t.Fatalf("another port of the same address: %d (Retry-After %q), %d checks; want 429 before authentication", w.Code, w.Header().Get(HeaderRetryAfter), reviews)
	}
	if w := do("192.0.2.2:4000"); w.Code != http.StatusUnauthorized || reviews != 4 {
		t.Fatalf("another address: %d; want its own bucket (401)", w.Code)
	}
	if last := audit[len(audit)-2]; !strings.Contains(last, `"result"="rate_limited"`) || !strings.Contains(last, `"remote"="192.0.2.1"`) || !strings.Contains(last, `"user"=""`) {
		t.Fatalf("audit line of a 429: %s", last)
	}
	if calls != 0 {
		t.Fatal("a handler ran")
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
