package eks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/smithy-go"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// throttleCodes are the AWS error codes that mean "slow down".
var throttleCodes = map[string]bool{
	"ThrottlingException":                    true,
	"Throttling":                             true,
	"ThrottledException":                     true,
	"TooManyRequestsException":               true,
	"RequestLimitExceeded":                   true,
	"RequestThrottled":                       true,
	"RequestThrottledException":              true,
	"ProvisionedThroughputExceededException": true,
	"SlowDown":                               true,
}

// classify turns an SDK error into a *cloud.Error: throttling, 5xx,
// timeouts and network failures are retryable (with the cloud's
// Retry-After), 404 / ResourceNotFoundException is NotFound, other 4xx are
// permanent. The message is the AWS error code and message only (never the
// request URL or headers), sanitised.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var already *cloud.Error
	if errors.As(err, &already) {
		return err
	}
	ce := &cloud.Error{Provider: cloud.EKS, Op: op}

	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		ce.StatusCode = re.HTTPStatusCode()
		if re.Response != nil {
			ce.RetryAfter = parseRetryAfter(re.Response.Header.Get("Retry-After"), time.Now())
		}
	}
	var apiErr smithy.APIError
	hasAPI := errors.As(err, &apiErr)

	switch {
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		ce.Kind, ce.Timeout = cloud.Retryable, true
		ce.Message = "request timed out"
		return ce
	case errors.Is(err, context.Canceled):
		ce.Kind, ce.Message = cloud.Retryable, "request cancelled"
		return ce
	}

	if hasAPI {
		code := apiErr.ErrorCode()
		ce.Message = sanitize(code + ": " + apiErr.ErrorMessage())
		var nf *types.ResourceNotFoundException
		var nf2 *types.NotFoundException
		var se *types.ServerException
		var su *types.ServiceUnavailableException
		switch {
		case throttleCodes[code]:
			ce.Kind = cloud.Retryable
		case errors.As(err, &nf) || errors.As(err, &nf2):
			ce.Kind = cloud.NotFound
		case errors.As(err, &se) || errors.As(err, &su):
			ce.Kind = cloud.Retryable
		case ce.StatusCode != 0:
			ce.Kind = cloud.FromHTTPStatus(ce.StatusCode)
		case apiErr.ErrorFault() == smithy.FaultServer:
			ce.Kind = cloud.Retryable
		default:
			ce.Kind = cloud.Permanent
		}
		return ce
	}
	if ce.StatusCode != 0 {
		ce.Kind = cloud.FromHTTPStatus(ce.StatusCode)
		ce.Message = sanitize(fmt.Sprintf("HTTP %d %s", ce.StatusCode, http.StatusText(ce.StatusCode)))
		return ce
	}
	// No HTTP response at all: the endpoint was unreachable, a transient
	// condition from the operator's point of view.
	var netErr net.Error
	if errors.As(err, &netErr) {
		ce.Kind, ce.Message = cloud.Retryable, sanitize("network error: "+netErr.Error())
		return ce
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		ce.Kind, ce.Message = cloud.Retryable, sanitize("network error: "+opErr.Error())
		return ce
	}
	ce.Kind, ce.Message = cloud.Permanent, sanitize(err.Error())
	return ce
}

// The shared helpers of package cloud, under the names this file uses.
var (
	isTimeout       = cloud.IsTimeout
	parseRetryAfter = cloud.ParseRetryAfter
	sanitize        = cloud.Sanitize
)
