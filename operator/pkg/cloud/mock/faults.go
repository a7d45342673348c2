package mock

import (
	"sync"
	"time"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// FaultKind is what an injected fault does.
type FaultKind string

const (
	// Throttle answers 429 with a Retry-After.
	Throttle FaultKind = "Throttle"
	// ServerError answers 503.
	ServerError FaultKind = "ServerError"
	// PermanentError answers 400 with Message.
	PermanentError FaultKind = "PermanentError"
	// Hang blocks until the caller's context ends.
	Hang FaultKind = "Hang"
	// FailOperation lets a Start call succeed but its operation end Failed.
	FailOperation FaultKind = "FailOperation"
)

// Fault fails the Nth (1-based) call of Op, and the Count-1 calls after it.
type Fault struct {
	Op      string
	Nth     int
	Count   int
	Kind    FaultKind
	Message string
}

// Faults is a set of injected faults, safe for concurrent use.
type Faults struct {
	mu     sync.Mutex
	faults []Fault
	calls  map[string]int
}

// Add injects a fault.
func (f *Faults) Add(fault Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault.Count < 1 {
		fault.Count = 1
	}
	if fault.Nth < 1 {
		fault.Nth = 1
	}
	f.faults = append(f.faults, fault)
}

// Calls is how many calls of op were counted so far.
func (f *Faults) Calls(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// next counts a call of op and returns the fault that applies, if any.
func (f *Faults) next(op string) *Fault {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[op]++
	n := f.calls[op]
	for i := range f.faults {
		ft := f.faults[i]
		if ft.Op == op && n >= ft.Nth && n < ft.Nth+ft.Count {
			return &ft
		}
	}
	return nil
}

func (ft *Fault) err(op string) error {
	msg := ft.Message
	switch ft.Kind {
	case Throttle:
		if msg == "" {
			msg = "Rate exceeded"
		}
		return &cloud.Error{Kind: cloud.Retryable, Provider: cloud.Mock, Op: op, Message: msg, StatusCode: 429, RetryAfter: 100 * time.Millisecond}
	case ServerError:
		if msg == "" {
			msg = "service unavailable"
		}
		return &cloud.Error{Kind: cloud.Retryable, Provider: cloud.Mock, Op: op, Message: msg, StatusCode: 503}
	case PermanentError:
		if msg == "" {
			msg = "invalid request"
		}
		return &cloud.Error{Kind: cloud.Permanent, Provider: cloud.Mock, Op: op, Message: msg, StatusCode: 400}
	}
	return nil
}

// Call is one entry of the call log.
type Call struct {
	Op      string
	Cluster string
	Target  string
	Token   string
	// Deduplicated is set when a mutating call's token had already started
	// an operation: the cloud changed nothing and answered the old id.
	Deduplicated bool
	// Failed is set when the call returned an error (injected or real).
	Failed bool
	Time   time.Time

	failOperation bool
}

// CallLog records every call, for tests. Safe for concurrent use.
type CallLog struct {
	mu    sync.Mutex
	calls []Call
}

func (l *CallLog) add(c Call) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, c)
}

// Calls returns a copy of the log.
func (l *CallLog) Calls() []Call {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Call(nil), l.calls...)
}

// Mutations returns the successful, non-deduplicated mutating calls: the
// ones that changed the cloud.
func (l *CallLog) Mutations() []Call {
	var out []Call
	for _, c := range l.Calls() {
		if IsMutating(c.Op) && !c.Deduplicated && !c.Failed {
			out = append(out, c)
		}
	}
	return out
}
