package apierror

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// Reasons of the errors of a cloud call (ErrorInfo.reason).
const (
	ReasonClusterNotFound  = "CLUSTER_NOT_FOUND"
	ReasonCloudUnavailable = "CLOUD_UNAVAILABLE"
	ReasonCloudError       = "CLOUD_ERROR"
)

// MetadataRetryAfter is the ErrorInfo metadata key of a CLOUD_UNAVAILABLE
// error: the seconds the cloud asked to wait (its Retry-After rounded to seconds, plus one).
const MetadataRetryAfter = "retryAfterSeconds"

// cloudProviderField is the request field a cloud configuration problem
// is reported on.
const cloudProviderField = "cloudProvider"

// FromCloud maps an error of a cloud call (classified by operator/pkg/cloud)
// to an API error: the cluster missing is a 404 CLUSTER_NOT_FOUND, an
// unsupported call a 400 on cloudProvider, a throttled or failing cloud a
// 503 CLOUD_UNAVAILABLE (with retryAfterSeconds when the cloud gave a
// Retry-After) or a 504 on a timeout, and a refusal a 502 CLOUD_ERROR. An
// unclassified error is a 504 when it is a deadline, else a 502. The
// message is the provider's, which never holds a credential. Errors that
// already are *Error pass through; nil is nil.
func FromCloud(err error) *Error {
	if err == nil {
		return nil
	}
	if e, ok := As(err); ok {
		return e
	}
	var ce *cloud.Error
	if !errors.As(err, &ce) {
		if errors.Is(err, context.DeadlineExceeded) {
			return DeadlineExceeded("the cloud did not answer in time")
		}
		return cloudError("the cloud provider failed: " + err.Error())
	}
	switch ce.Kind {
	case cloud.NotFound:
		return NotFound(ReasonClusterNotFound, "%s", ce.Error())
	case cloud.Unsupported:
		return InvalidArgument("not supported by this provider", Violation(cloudProviderField, "%s", ce.Message))
	case cloud.Retryable:
		if ce.Timeout {
			return DeadlineExceeded("%s", ce.Error())
		}
		e := Unavailable("%s", ce.Error()).WithReason(ReasonCloudUnavailable)
		if ce.RetryAfter > 0 {
			e = e.WithMetadata(MetadataRetryAfter, strconv.Itoa(int(ce.RetryAfter.Round(time.Second)/time.Second)+1))
		}
		return e
	default:
		return cloudError(ce.Error())
	}
}

// FromCloudResolve maps an error of cloud.Registry.Resolve (a provider
// that is not configured, a cluster whose cloud identity is not mapped) to
// a 400 on cloudProvider: the cluster cannot be reached with this server's
// configuration. The violation is the classified error's message, or the
// whole error's for an unclassified one.
func FromCloudResolve(err error) *Error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	var ce *cloud.Error
	if errors.As(err, &ce) {
		msg = ce.Message
	}
	return InvalidArgument("the cluster cannot be reached with this server's configuration", Violation(cloudProviderField, "%s", msg))
}

// FromCloudOrKubernetes maps the error of work that calls both the cloud
// and the Kubernetes API server (the upgrade preflight): a classified
// cloud error as FromCloud, anything else as FromKubernetes.
func FromCloudOrKubernetes(err error) *Error {
	var ce *cloud.Error
	if errors.As(err, &ce) {
		return FromCloud(err)
	}
	return FromKubernetes(err)
}

func cloudError(message string) *Error {
	return &Error{Code: http.StatusBadGateway, Status: StatusForCode(http.StatusBadGateway), Reason: ReasonCloudError, Message: message}
}
