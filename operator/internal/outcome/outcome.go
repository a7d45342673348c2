// Package outcome is the one error policy of ops-operator's reconcilers
// (ClusterUpgradeOperation and ClusterBackup), decided here and nowhere
// else, in the spirit of helm-controller's terminal errors.
//
// An upgrade runs for hours on a production cluster: an error fails its
// step only when waiting cannot fix it. That is a cloud error the provider
// classified as Permanent, NotFound or Unsupported, or an error marked
// Terminal (a spec that can never succeed). Everything else — Kubernetes
// API errors (timeouts, 5xx, 429, conflicts, an etcd leader change, a
// refused connection), an expired context, an error nobody classified —
// is transient: the step keeps running with the error in its message and
// the object goes back to the work queue, whose rate limiter backs off.
// A retryable cloud error with a Retry-After hint waits for that long
// instead.
//
// The default is deliberately "transient": an unknown error retried
// forever shows up in the step's message and the Reconciling condition,
// where a person can act; an unknown error that failed the operation
// would have stopped a half-done upgrade for nothing.
package outcome

import (
	"errors"
	"time"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// Outcome is what an error means for the step it happened in.
type Outcome struct {
	// Terminal: the step (and the operation or replica) fails with the
	// error; nothing retries it.
	Terminal bool
	// RequeueAfter is the cloud's Retry-After hint for a retryable cloud
	// error, 0 otherwise (the work queue's backoff decides).
	RequeueAfter time.Duration
	// Cloud is set when the error is a classified cloud error (any kind).
	Cloud bool
}

// Classify sorts err; nil is neither terminal nor anything else.
func Classify(err error) Outcome {
	if err == nil {
		return Outcome{}
	}
	var te *terminalError
	if errors.As(err, &te) {
		return Outcome{Terminal: true}
	}
	var ce *cloud.Error
	if errors.As(err, &ce) {
		switch ce.Kind {
		case cloud.Permanent, cloud.NotFound, cloud.Unsupported:
			return Outcome{Terminal: true, Cloud: true}
		default:
			return Outcome{RequeueAfter: ce.RetryAfter, Cloud: true}
		}
	}
	return Outcome{}
}

// IsTerminal reports whether err fails the step it happened in.
func IsTerminal(err error) bool { return Classify(err).Terminal }

// terminalError marks an error that retrying will not fix.
type terminalError struct{ err error }

func (e *terminalError) Error() string { return e.err.Error() }
func (e *terminalError) Unwrap() error { return e.err }

// Terminal marks err as one retrying will not fix (a spec that can never
// succeed, a Secret the spec names that is not there); nil stays nil.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return &terminalError{err: err}
}
