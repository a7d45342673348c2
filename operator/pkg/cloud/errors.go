package cloud

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrorKind classifies a cloud error for the caller's retry decision.
type ErrorKind string

const (
	// Retryable: throttling, 5xx, timeouts. Try again later.
	Retryable ErrorKind = "Retryable"
	// Permanent: bad request, forbidden, conflict that waiting won't fix.
	Permanent ErrorKind = "Permanent"
	// NotFound: the cluster, node group, addon or operation is not there.
	NotFound ErrorKind = "NotFound"
	// Unsupported: the provider has no such operation (addons on GKE/AKS).
	Unsupported ErrorKind = "Unsupported"
)

// Error is a classified cloud error. Message is safe to show to users: it
// never holds a credential.
type Error struct {
	Kind     ErrorKind
	Provider string
	// Op is the provider call, e.g. "UpdateClusterVersion".
	Op      string
	Message string
	// StatusCode is the HTTP status the cloud answered, if any.
	StatusCode int
	// RetryAfter is the cloud's Retry-After hint, if any.
	RetryAfter time.Duration
	// Timeout is set for retryable errors that were timeouts.
	Timeout bool
}

func (e *Error) Error() string {
	if e.Op != "" {
		return fmt.Sprintf("%s %s: %s", e.Provider, e.Op, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Provider, e.Message)
}

// Errorf builds a classified error.
func Errorf(kind ErrorKind, provider, op, format string, args ...any) *Error {
	return &Error{Kind: kind, Provider: provider, Op: op, Message: fmt.Sprintf(format, args...)}
}

// KindOf classifies any error: a *Error keeps its kind; context deadline
// errors are retryable; everything else is permanent.
func KindOf(err error) ErrorKind {
	var ce *Error
	if errors.As(err, &ce) {
		return ce.Kind
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return Retryable
	}
	return Permanent
}

// IsRetryable reports whether err is worth retrying later.
func IsRetryable(err error) bool { return err != nil && KindOf(err) == Retryable }

// IsNotFound reports whether err says the thing does not exist.
func IsNotFound(err error) bool { return err != nil && KindOf(err) == NotFound }

// RetryAfter returns the cloud's hint, or 0.
func RetryAfter(err error) time.Duration {
	var ce *Error
	if errors.As(err, &ce) {
		return ce.RetryAfter
	}
	return 0
}

// FromHTTPStatus classifies an HTTP status code: 429 and 5xx are
// retryable, 404 is not found, other 4xx are permanent.
func FromHTTPStatus(code int) ErrorKind {
	switch {
	case code == 429 || code >= 500:
		return Retryable
	case code == 404:
		return NotFound
	default:
		return Permanent
	}
}
