package apierror

import (
	"context"
	"errors"
	"net"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// FromKubernetes maps an error from the Kubernetes API server (or from
// talking to it) to an API error. The Kubernetes message is kept as the
// cause for logs; the caller sees a message about the API's own resource,
// never the internal object names or credentials. Errors that already are
// *Error pass through.
func FromKubernetes(err error) *Error {
	if err == nil {
		return nil
	}
	if e, ok := As(err); ok {
		return e
	}
	switch {
	case apierrors.IsNotFound(err):
		return NotFound(ReasonNotFound, "the resource does not exist").WithCause(err)
	case apierrors.IsAlreadyExists(err):
		return AlreadyExists(ReasonAlreadyExists, "the resource already exists").WithCause(err)
	case apierrors.IsConflict(err):
		return Aborted(ReasonConflict, "the resource was modified concurrently; retry the request").WithCause(err)
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsRequestEntityTooLargeError(err):
		return invalidFromStatus(err)
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		// Our own credentials were refused: a deployment problem, not the
		// caller's. Never echo the Kubernetes identity back.
		return newError(http.StatusInternalServerError, StatusInternal, "BACKEND_PERMISSION_DENIED",
			"ops-apiserver is not permitted to perform this operation in Kubernetes; check its RBAC").WithCause(err)
	case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err), errors.Is(err, context.DeadlineExceeded):
		return DeadlineExceeded("the Kubernetes API server did not answer in time; retry the request").WithCause(err)
	case apierrors.IsTooManyRequests(err), apierrors.IsServiceUnavailable(err), apierrors.IsInternalError(err),
		errors.Is(err, context.Canceled), isNetError(err):
		return Unavailable("the Kubernetes API server is unavailable; retry the request").WithCause(err)
	default:
		return Internal(err)
	}
}

func isNetError(err error) bool {
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &ne) || errors.As(err, &oe)
}

// invalidFromStatus turns the causes of a 422/400 from Kubernetes into
// field violations. It only happens when a request passed our own
// validation but not the API server's (for example a CRD rule we do not
// mirror), so the fields are the Kubernetes object's.
func invalidFromStatus(err error) *Error {
	var violations []FieldViolation
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		if d := se.Status().Details; d != nil {
			for _, c := range d.Causes {
				violations = append(violations, FieldViolation{Field: c.Field, Description: c.Message})
			}
		}
	}
	if len(violations) == 0 {
		violations = []FieldViolation{{Field: "body", Description: "the Kubernetes API server rejected the resulting object"}}
	}
	return InvalidArgument("the request was rejected by the Kubernetes API server", violations...).WithCause(err)
}
