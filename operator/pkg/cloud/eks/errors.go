package eks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
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

func isTimeout(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP
// date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

var (
	urlQuery   = regexp.MustCompile(`(https?://[^\s"'?#]+)[?#][^\s"']*`)
	urlUser    = regexp.MustCompile(`(https?://)[^/\s"'@]+@`)
	secretKV   = regexp.MustCompile(`(?i)\b(aws_?secret_?access_?key|secret_?access_?key|secret|password|passwd|token|session_?token|security_?token|credential|signature|x-amz-signature|x-amz-security-token|authorization|api_?key|access_?key_?id|accesskeysecret|client_?secret)(["']?\s*[:=]\s*["']?)[^\s"',;&]+`)
	bearer     = regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9\-._~+/]+=*`)
	awsKeyID   = regexp.MustCompile(`\b(AKIA|ASIA)[A-Z0-9]{12,}\b`)
	maxMessage = 1024
)

// sanitize strips query strings and user info from URLs and redacts
// anything that looks like a credential, then bounds the length.
func sanitize(s string) string {
	s = urlUser.ReplaceAllString(s, "$1")
	s = urlQuery.ReplaceAllString(s, "$1")
	s = bearer.ReplaceAllString(s, "$1 [redacted]")
	s = secretKV.ReplaceAllString(s, "$1$2[redacted]")
	s = awsKeyID.ReplaceAllString(s, "[redacted]")
	if len(s) > maxMessage {
		s = s[:maxMessage] + "…"
	}
	return s
}
