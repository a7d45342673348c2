// Package cloudtest is what the fake cloud servers of the providers'
// tests (`<provider>/<provider>test`) share, each embedding a Fake: the
// HTTP endpoint on 127.0.0.1 (Listen, URL, Close, CloseAtEnd), the order
// every request is answered in (Handle: count the call, the cloud's
// refusals, the injected fault, the handler), the fault injector (the
// next n calls of an API action fail, throttled, unavailable or refused:
// each fake answers them in its cloud's wire format, advertising the wait
// of SetRetryAfter), the count of calls per action, the operations told
// to fail, and the node-group events, recorded (NodeGroupEvents) and told
// to tests mirroring node groups as Node objects (OnNodeGroup); and the
// plumbing of their handlers: the request's cluster (InCluster), lists
// (SortedKeys, Page) and JSON bodies (WriteJSON, ReadJSON). It speaks no
// wire format itself: each fake says its paths, field names and error
// bodies (Wire).
package cloudtest

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// Fault is what an injected failure answers; each fake answers it with
// its cloud's own status, error code and message.
type Fault int

const (
	// Throttle answers 429 with the cloud's throttling error.
	Throttle Fault = iota + 1
	// ServerError answers the cloud's 5xx.
	ServerError
	// Permanent answers 400 with the cloud's invalid-parameter error.
	Permanent
)

// FaultFor is the fault of the conformance suite's Inject: retryable
// (Throttle), or Permanent when permanent is set.
func FaultFor(permanent bool) Fault {
	if permanent {
		return Permanent
	}
	return Throttle
}

// NodeGroupEvent reports that a node group's Nodes changed, for tests that
// mirror node groups as Node objects: the group exists with Size Nodes
// labelled with the provider's node-group label = LabelValue, at Version,
// or it was deleted.
type NodeGroupEvent struct {
	Cluster    string
	Name       string
	LabelValue string
	Version    string
	Size       int32
	Labels     map[string]string
	Deleted    bool
}

// Fake is the state every fake server shares. Its zero value is ready;
// its methods are safe for concurrent use and take their own lock, so a
// fake may call them with its own lock held.
type Fake struct {
	// OnNodeGroup, if set, is called when a node group appears (seeded
	// or created), changes version, or is deleted. It runs with the
	// fake server's lock held: it must not call the server.
	OnNodeGroup func(NodeGroupEvent)
	// PollsToFinish is how many polls finish a running operation
	// (default 3); what counts as a poll is each fake's own (its Server
	// doc says).
	PollsToFinish int
	// URL is the endpoint, http://127.0.0.1:port (https:// over TLS), once
	// Listen has started it.
	URL string

	srv *httptest.Server

	mu         sync.Mutex
	faults     map[string][]fault
	calls      map[string]int
	failOps    int
	retryAfter time.Duration
	events     []NodeGroupEvent
}

type fault struct {
	left int
	kind Fault
}

// Inject makes the next n calls of action fail with f.
func (f *Fake) Inject(action string, n int, kind Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.faults == nil {
		f.faults = map[string][]fault{}
	}
	f.faults[action] = append(f.faults[action], fault{left: n, kind: kind})
}

// FailOperations makes the next n operations started end in failure.
func (f *Fake) FailOperations(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failOps += n
}

// Calls is how many requests of action the server answered (including
// injected failures).
func (f *Fake) Calls(action string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[action]
}

// Called counts a request of action; a fake calls it for every request it
// routes, before checking anything.
func (f *Fake) Called(action string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[action]++
}

// Answer is a fake's answer to an injected fault in its cloud's wire
// format: the HTTP status and the cloud's error code and message.
type Answer struct {
	Status        int
	Code, Message string
	// ForAction appends " for <action>" to Message.
	ForAction bool
}

// Answers is a fake's answer to each kind of fault.
type Answers map[Fault]Answer

// Intercept takes the fault injected for this call of action, if any,
// and returns it with the fake's answer to it.
func (f *Fake) Intercept(action string, answers Answers) (Fault, Answer, bool) {
	kind, ok := f.NextFault(action)
	if !ok {
		return 0, Answer{}, false
	}
	a := answers[kind]
	if a.ForAction {
		a.Message += " for " + action
	}
	return kind, a, true
}

// NextFault takes the fault injected for this call of action, if any.
func (f *Fake) NextFault(action string) (Fault, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.faults[action]
	if len(q) == 0 {
		return 0, false
	}
	kind := q[0].kind
	if q[0].left--; q[0].left <= 0 {
		f.faults[action] = q[1:]
	}
	return kind, true
}

// OperationFails reports whether the operation being started is one that
// FailOperations asked to fail (and counts it).
func (f *Fake) OperationFails() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failOps > 0 {
		f.failOps--
		return true
	}
	return false
}

// Polls is PollsToFinish, or its default 3.
func (f *Fake) Polls() int {
	if f.PollsToFinish > 0 {
		return f.PollsToFinish
	}
	return 3
}

// Notify records e (NodeGroupEvents) and tells OnNodeGroup of it, if set.
func (f *Fake) Notify(e NodeGroupEvent) {
	f.mu.Lock()
	f.events = append(f.events, e)
	f.mu.Unlock()
	if f.OnNodeGroup != nil {
		f.OnNodeGroup(e)
	}
}

// NodeGroupEvents is every node-group event so far, oldest first.
func (f *Fake) NodeGroupEvents() []NodeGroupEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]NodeGroupEvent(nil), f.events...)
}

// SetRetryAfter is the wait a throttled answer advertises from now on,
// each fake in its cloud's way (Wire.Throttled); 0, the fake's default.
func (f *Fake) SetRetryAfter(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.retryAfter = d
}

func (f *Fake) retryAfterWait() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.retryAfter
}

// Listen starts h on 127.0.0.1, over TLS when useTLS, and sets URL.
func (f *Fake) Listen(h http.Handler, useTLS bool) {
	if useTLS {
		f.srv = httptest.NewTLSServer(h)
	} else {
		f.srv = httptest.NewServer(h) // binds 127.0.0.1
	}
	f.URL = f.srv.URL
}

// Client is an HTTP client that trusts the endpoint's certificate.
func (f *Fake) Client() *http.Client { return f.srv.Client() }

// Close stops the endpoint.
func (f *Fake) Close() { f.srv.Close() }

// CloseAtEnd closes fake when the test ends and returns it: a fake
// package's New.
func CloseAtEnd[S interface{ Close() }](tb testing.TB, fake S) S {
	tb.Cleanup(fake.Close)
	return fake
}

// NextMinor reports whether version to is exactly one minor above from
// (cloud.MajorMinor), as the clouds upgrade a control plane.
func NextMinor(from, to string) bool {
	fm, fn, ok1 := cloud.MajorMinor(from)
	tm, tn, ok2 := cloud.MajorMinor(to)
	return ok1 && ok2 && fm == tm && tn == fn+1
}
