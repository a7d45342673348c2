// Package apierror holds the typed errors of the REST API and their wire
// form, the error body of Google AIP-193:
//
//	{"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": "...",
//	  "details": [
//	    {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "...", "domain": "..."},
//	    {"@type": "type.googleapis.com/google.rpc.BadRequest",
//	     "fieldViolations": [{"field": "name", "description": "..."}]}]}}
//
// Handlers and services return these errors; the central echo error handler
// (package server) is the only place that writes them.
package apierror

import (
	"errors"
	"fmt"
	"net/http"
)

// Domain is the ErrorInfo domain of every error of the API.
const Domain = "observability.tidbcloud.com"

// Canonical status names (google.rpc.Code) used by the API.
const (
	StatusInvalidArgument    = "INVALID_ARGUMENT"
	StatusFailedPrecondition = "FAILED_PRECONDITION"
	StatusUnauthenticated    = "UNAUTHENTICATED"
	StatusPermissionDenied   = "PERMISSION_DENIED"
	StatusNotFound           = "NOT_FOUND"
	StatusAlreadyExists      = "ALREADY_EXISTS"
	StatusAborted            = "ABORTED"
	StatusResourceExhausted  = "RESOURCE_EXHAUSTED"
	StatusUnimplemented      = "UNIMPLEMENTED"
	StatusInternal           = "INTERNAL"
	StatusUnavailable        = "UNAVAILABLE"
	StatusDeadlineExceeded   = "DEADLINE_EXCEEDED"
)

// Reasons (ErrorInfo.reason) shared by several resources.
const (
	ReasonInvalidRequest = "INVALID_REQUEST"
	ReasonNotFound       = "NOT_FOUND"
	ReasonAlreadyExists  = "ALREADY_EXISTS"
	ReasonConflict       = "CONFLICT"
	ReasonUnavailable    = "BACKEND_UNAVAILABLE"
	ReasonInternal       = "INTERNAL"
	ReasonRouteNotFound  = "ROUTE_NOT_FOUND"
	ReasonMethod         = "METHOD_NOT_ALLOWED"
)

// FieldViolation names one bad field of a request. Field is a dotted path
// into the request ("values", "helm_release_info.version", "page_token");
// "body" stands for the request body as a whole (for example malformed JSON).
type FieldViolation struct {
	Field       string `json:"field"`
	Description string `json:"description"`
}

// Error is an API error: an HTTP code, its canonical status, a message safe
// to show to the caller, and the details of AIP-193. The wrapped cause is
// for logs only and never reaches the caller.
type Error struct {
	Code       int
	Status     string
	Message    string
	Reason     string
	Metadata   map[string]string
	Violations []FieldViolation
	cause      error
}

// Error implements error.
func (e *Error) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Status, e.Message, e.cause)
	}
	return fmt.Sprintf("%s: %s", e.Status, e.Message)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.cause }

// WithCause records the underlying error (logged, never shown).
func (e *Error) WithCause(err error) *Error {
	e.cause = err
	return e
}

// WithReason sets the ErrorInfo reason.
func (e *Error) WithReason(reason string) *Error {
	e.Reason = reason
	return e
}

// WithMetadata adds an ErrorInfo metadata entry.
func (e *Error) WithMetadata(key, value string) *Error {
	if e.Metadata == nil {
		e.Metadata = map[string]string{}
	}
	e.Metadata[key] = value
	return e
}

func newError(code int, status, reason, format string, args ...any) *Error {
	return &Error{Code: code, Status: status, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// InvalidArgument is a 400 with one field violation per bad field. Callers
// always pass at least one violation.
func InvalidArgument(message string, violations ...FieldViolation) *Error {
	e := newError(http.StatusBadRequest, StatusInvalidArgument, ReasonInvalidRequest, "%s", message)
	e.Violations = violations
	return e
}

// Violation is a shorthand for a FieldViolation.
func Violation(field, format string, args ...any) FieldViolation {
	return FieldViolation{Field: field, Description: fmt.Sprintf(format, args...)}
}

// FailedPrecondition is a 400: the request is valid but the resource is in a
// state that does not allow it (for example it is being deleted).
func FailedPrecondition(reason, format string, args ...any) *Error {
	return newError(http.StatusBadRequest, StatusFailedPrecondition, reason, format, args...)
}

// NotFound is a 404.
func NotFound(reason, format string, args ...any) *Error {
	return newError(http.StatusNotFound, StatusNotFound, reason, format, args...)
}

// AlreadyExists is a 409 for a create whose name is taken.
func AlreadyExists(reason, format string, args ...any) *Error {
	return newError(http.StatusConflict, StatusAlreadyExists, reason, format, args...)
}

// Aborted is a 409 for a concurrency conflict; the caller may retry.
func Aborted(reason, format string, args ...any) *Error {
	return newError(http.StatusConflict, StatusAborted, reason, format, args...)
}

// Unavailable is a 503: a backend (the Kubernetes API server, the informer
// cache) cannot serve the request now; the caller may retry.
func Unavailable(format string, args ...any) *Error {
	return newError(http.StatusServiceUnavailable, StatusUnavailable, ReasonUnavailable, format, args...)
}

// DeadlineExceeded is a 504.
func DeadlineExceeded(format string, args ...any) *Error {
	return newError(http.StatusGatewayTimeout, StatusDeadlineExceeded, ReasonUnavailable, format, args...)
}

// Unauthenticated is a 401: no credentials, or credentials that are not
// valid.
func Unauthenticated(reason, format string, args ...any) *Error {
	return newError(http.StatusUnauthorized, StatusUnauthenticated, reason, format, args...)
}

// PermissionDenied is a 403: the caller is known but lacks the permission
// the message names.
func PermissionDenied(reason, format string, args ...any) *Error {
	return newError(http.StatusForbidden, StatusPermissionDenied, reason, format, args...)
}

// ResourceExhausted is a 429: the caller exceeded its request rate.
func ResourceExhausted(reason, format string, args ...any) *Error {
	return newError(http.StatusTooManyRequests, StatusResourceExhausted, reason, format, args...)
}

// Internal is a 500. The message is generic; the cause is logged.
func Internal(cause error) *Error {
	return newError(http.StatusInternalServerError, StatusInternal, ReasonInternal, "internal error").WithCause(cause)
}

// As returns err as an *Error if it is one (anywhere in its chain).
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// StatusForCode is the canonical status of an HTTP code, for errors that
// do not come from this package (echo's 404/405, http.MaxBytesError, ...).
func StatusForCode(code int) string {
	switch code {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
		return StatusInvalidArgument
	case http.StatusUnauthorized:
		return StatusUnauthenticated
	case http.StatusForbidden:
		return StatusPermissionDenied
	case http.StatusNotFound:
		return StatusNotFound
	case http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return StatusUnimplemented
	case http.StatusConflict:
		return StatusAborted
	case http.StatusTooManyRequests:
		return StatusResourceExhausted
	case http.StatusServiceUnavailable:
		return StatusUnavailable
	case http.StatusGatewayTimeout:
		return StatusDeadlineExceeded
	default:
		if code >= 500 {
			return StatusInternal
		}
		return StatusInvalidArgument
	}
}

// Body is the JSON error body.
type Body struct {
	Error Status `json:"error"`
}

// Status is the google.rpc.Status of AIP-193.
type Status struct {
	Code    int      `json:"code"`
	Status  string   `json:"status"`
	Message string   `json:"message"`
	Details []Detail `json:"details,omitempty"`
}

// Detail is one google.rpc detail message. Only the fields of the types the
// API uses are present: ErrorInfo, BadRequest and RequestInfo.
type Detail struct {
	Type string `json:"@type"`
	// ErrorInfo
	Reason   string            `json:"reason,omitempty"`
	Domain   string            `json:"domain,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// BadRequest
	FieldViolations []FieldViolation `json:"fieldViolations,omitempty"`
	// RequestInfo
	RequestID string `json:"requestId,omitempty"`
}

// Detail type URLs.
const (
	TypeErrorInfo   = "type.googleapis.com/google.rpc.ErrorInfo"
	TypeBadRequest  = "type.googleapis.com/google.rpc.BadRequest"
	TypeRequestInfo = "type.googleapis.com/google.rpc.RequestInfo"
)

// ToBody renders the error as the AIP-193 body; requestID (when set) goes
// into a RequestInfo detail.
func (e *Error) ToBody(requestID string) Body {
	s := Status{Code: e.Code, Status: e.Status, Message: e.Message}
	if e.Reason != "" {
		s.Details = append(s.Details, Detail{Type: TypeErrorInfo, Reason: e.Reason, Domain: Domain, Metadata: e.Metadata})
	}
	if len(e.Violations) > 0 {
		s.Details = append(s.Details, Detail{Type: TypeBadRequest, FieldViolations: e.Violations})
	}
	if requestID != "" {
		s.Details = append(s.Details, Detail{Type: TypeRequestInfo, RequestID: requestID})
	}
	return Body{Error: s}
}
