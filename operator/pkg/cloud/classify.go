package cloud

import (
	"context"
	"errors"
	"net"
)

// SDKClassifier is a provider's own part of classification: it recognises
// its SDK's error types in err and fills ce's Kind, Message (sanitised),
// StatusCode and RetryAfter from them. It reports false when err is none
// of them; Classify then ends as for any other error.
type SDKClassifier func(err error, ce *Error) bool

// Classify turns the error of a provider's SDK call into a *Error, the
// same way for every provider: nil stays nil and a *Error passes through;
// a deadline or network timeout is Retryable with Timeout set ("request
// timed out") and a cancelled request Retryable; then the provider's
// sdk classifier reads its SDK's error types; an error it does not
// recognise is Retryable when it is a network error (the endpoint was
// unreachable: transient from the operator's point of view) and
// Permanent otherwise. Every message is sanitised: never a credential,
// a URL's query or user info.
func Classify(provider, op string, err error, sdk SDKClassifier) error {
	if err == nil {
		return nil
	}
	var already *Error
	if errors.As(err, &already) {
		return err
	}
	ce := &Error{Provider: provider, Op: op}
	switch {
	case errors.Is(err, context.DeadlineExceeded) || IsTimeout(err):
		ce.Kind, ce.Timeout, ce.Message = Retryable, true, "request timed out"
		return ce
	case errors.Is(err, context.Canceled):
		ce.Kind, ce.Message = Retryable, "request cancelled"
		return ce
	}
	if sdk != nil && sdk(err, ce) {
		return ce
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		ce.Kind, ce.Message = Retryable, Sanitize("network error: "+netErr.Error())
		return ce
	}
	ce.Kind, ce.Message = Permanent, Sanitize(err.Error())
	return ce
}
