package aks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// classify turns an SDK error into a *cloud.Error: 429, 5xx, timeouts and
// network failures are retryable (with ARM's Retry-After), and so are 412
// (the resource changed since it was read: read it again) and 409 "another
// operation is in progress"; 404 is NotFound; other 4xx are permanent. The
// message is ARM's error code and message only, never the request URL.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var already *cloud.Error
	if errors.As(err, &already) {
		return err
	}
	ce := &cloud.Error{Provider: cloud.AKS, Op: op}
	switch {
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		ce.Kind, ce.Timeout, ce.Message = cloud.Retryable, true, "request timed out"
		return ce
	case errors.Is(err, context.Canceled):
		ce.Kind, ce.Message = cloud.Retryable, "request cancelled"
		return ce
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		ce.StatusCode = re.StatusCode
		ce.Kind = cloud.FromHTTPStatus(re.StatusCode)
		code, msg := armError(re)
		ce.Message = sanitize(strings.TrimPrefix(code+": "+msg, ": "))
		if re.RawResponse != nil {
			ce.RetryAfter = parseRetryAfter(re.RawResponse.Header.Get("Retry-After"), time.Now())
		}
		switch {
		case re.StatusCode == http.StatusPreconditionFailed:
			ce.Kind = cloud.Retryable
		case re.StatusCode == http.StatusConflict && inProgress(msg):
			ce.Kind = cloud.Retryable
		}
		return ce
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		ce.Kind, ce.Message = cloud.Retryable, sanitize("network error: "+netErr.Error())
		return ce
	}
	ce.Kind, ce.Message = cloud.Permanent, sanitize(err.Error())
	return ce
}

// armError reads the ARM error body ({"error": {"code", "message"}}).
func armError(re *azcore.ResponseError) (code, msg string) {
	code = re.ErrorCode
	if re.RawResponse == nil {
		return code, http.StatusText(re.StatusCode)
	}
	raw, err := runtime.Payload(re.RawResponse)
	if err == nil && len(raw) > 0 {
		var body struct {
			Error *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
			Code    string `json:"code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(raw, &body) == nil {
			if body.Error != nil {
				if code == "" {
					code = body.Error.Code
				}
				msg = body.Error.Message
			} else {
				if code == "" {
					code = body.Code
				}
				msg = body.Message
			}
		}
	}
	if msg == "" {
		msg = fmt.Sprintf("HTTP %d %s", re.StatusCode, http.StatusText(re.StatusCode))
	}
	return code, msg
}

func inProgress(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "in progress") || strings.Contains(m, "another operation")
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
	secretKV   = regexp.MustCompile(`(?i)\b(client_?secret|secret|password|passwd|token|access_?token|refresh_?token|credential|signature|sig|authorization|api_?key|account_?key|sharedaccesskey)(["']?\s*[:=]\s*["']?)[^\s"',;&]+`)
	bearer     = regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9\-._~+/]+=*`)
	maxMessage = 1024
)

// sanitize strips query strings and user info from URLs and redacts
// anything that looks like a credential, then bounds the length.
func sanitize(s string) string {
	s = urlUser.ReplaceAllString(s, "$1")
	s = urlQuery.ReplaceAllString(s, "$1")
	s = bearer.ReplaceAllString(s, "$1 [redacted]")
	s = secretKV.ReplaceAllString(s, "$1$2[redacted]")
	if len(s) > maxMessage {
		s = s[:maxMessage] + "…"
	}
	return s
}

func errorf(kind cloud.ErrorKind, op, format string, args ...any) *cloud.Error {
	return &cloud.Error{Kind: kind, Provider: cloud.AKS, Op: op, Message: fmt.Sprintf(format, args...)}
}
