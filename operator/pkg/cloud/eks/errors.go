package eks

import (
	"errors"
	"fmt"
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

// classify turns an SDK error into a *cloud.Error (cloud.Classify, with
// the AWS part in classifyAWS).
func classify(op string, err error) error {
	return cloud.Classify(cloud.EKS, op, err, classifyAWS)
}

// classifyAWS: throttling codes, ServerException and
// ServiceUnavailableException, 429 and 5xx are retryable (with the
// cloud's Retry-After), 404 / ResourceNotFoundException / NotFoundException
// is NotFound, other 4xx are permanent. The message is the AWS error code
// and message only (never the request URL or headers), sanitised.
func classifyAWS(err error, ce *cloud.Error) bool {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		ce.StatusCode = re.HTTPStatusCode()
		if re.Response != nil {
			ce.RetryAfter = cloud.ParseRetryAfter(re.Response.Header.Get("Retry-After"), time.Now())
		}
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		code := apiErr.ErrorCode()
		ce.Message = cloud.Sanitize(code + ": " + apiErr.ErrorMessage())
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
		return true
	}
	if ce.StatusCode != 0 {
		ce.Kind = cloud.FromHTTPStatus(ce.StatusCode)
		ce.Message = cloud.Sanitize(fmt.Sprintf("HTTP %d %s", ce.StatusCode, http.StatusText(ce.StatusCode)))
		return true
	}
	return false
}
