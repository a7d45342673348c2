package cloudtest

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxBody bounds the request bodies a fake reads.
const MaxBody = 1 << 20

// Wire is what a fake's cloud says where every fake does the same thing
// (Fake.Handle): which requests it refuses before any action, how it
// answers an injected fault, and its error body.
type Wire struct {
	// Checks refuse, in order, the requests the cloud refuses before
	// acting on them (no credentials, no api-version, ACK's action
	// headers).
	Checks []Check
	// Faults are the answers to injected faults.
	Faults Answers
	// Throttled sets the headers that advertise the wait of a throttled
	// answer (SetRetryAfter; 0 when unset); nil: RetryAfter.
	Throttled func(h http.Header, wait time.Duration)
	// Error answers status with the cloud's error body of code and
	// message.
	Error func(w http.ResponseWriter, status int, code, message string)
}

// Check is one refusal of a cloud: refused reports whether it refuses a
// request of action, answered with refusal (its ForAction is ignored).
type Check func(r *http.Request, action string) (refusal Answer, refused bool)

// Credentials is the check of a cloud's credentials: the Authorization
// header of every request starts with scheme, or the request is answered
// refusal.
func Credentials(scheme string, refusal Answer) Check {
	return func(r *http.Request, _ string) (Answer, bool) {
		return refusal, !strings.HasPrefix(r.Header.Get("Authorization"), scheme)
	}
}

// Handle answers one request of action: it counts the call, lets the
// wire's checks refuse it, answers the fault injected for it, if any, in
// the wire's words, and otherwise calls h. The fake holds its own lock
// around it.
func (f *Fake) Handle(w http.ResponseWriter, r *http.Request, action string, wire *Wire, h http.HandlerFunc) {
	f.Called(action)
	for _, check := range wire.Checks {
		if a, refused := check(r, action); refused {
			wire.Error(w, a.Status, a.Code, a.Message)
			return
		}
	}
	if kind, a, ok := f.Intercept(action, wire.Faults); ok {
		if kind == Throttle {
			throttled := wire.Throttled
			if throttled == nil {
				throttled = RetryAfter
			}
			throttled(w.Header(), f.retryAfterWait())
		}
		wire.Error(w, a.Status, a.Code, a.Message)
		return
	}
	h(w, r)
}

// InCluster is h on the cluster find resolves for a request; when there
// is none, find answers the cloud's not-found error itself and h is not
// called.
func InCluster[C any](find func(http.ResponseWriter, *http.Request) *C, h func(http.ResponseWriter, *http.Request, *C)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if c := find(w, r); c != nil {
			h(w, r, c)
		}
	}
}

// RetryAfter sets the standard Retry-After header to wait in seconds,
// when wait is set.
func RetryAfter(h http.Header, wait time.Duration) {
	if wait > 0 {
		h.Set("Retry-After", strconv.FormatInt(int64(wait/time.Second), 10))
	}
}

// WriteJSON answers status with v as JSON under the cloud's own
// Content-Type.
func WriteJSON(w http.ResponseWriter, status int, contentType string, v any) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// ReadJSON decodes a request body of at most MaxBody bytes into v; on
// failure it calls refuse, which answers in the cloud's error format, and
// reports false.
func ReadJSON(w http.ResponseWriter, r *http.Request, v any, refuse func(err error)) bool {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody)).Decode(v); err != nil {
		refuse(err)
		return false
	}
	return true
}

// SortedKeys is the keys of m in order, never nil (an empty list is
// answered as [], not null), those keep accepts (all when keep is nil).
func SortedKeys[V any](m map[string]V, keep func(V) bool) []string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if keep == nil || keep(v) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// Page cuts the page of all a fake answers to a page token, prefix and
// an offset into all ("": the first page): at most size items (at least
// 1). next is the token of the next page, "" after the last; ok is false
// for a token that is no offset into all (the fake refuses it in its
// cloud's words).
func Page[T any](all []T, token, prefix string, size int) (page []T, next string, ok bool) {
	start := 0
	if token != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(token, prefix))
		if err != nil || n < 0 || n > len(all) {
			return nil, "", false
		}
		start = n
	}
	end := min(start+max(size, 1), len(all))
	if end < len(all) {
		next = prefix + strconv.Itoa(end)
	}
	return all[start:end], next, true
}
