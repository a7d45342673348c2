package aks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
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

// The shared helpers of package cloud, under the names this file uses.
var (
	isTimeout       = cloud.IsTimeout
	parseRetryAfter = cloud.ParseRetryAfter
	sanitize        = cloud.Sanitize
)

func errorf(kind cloud.ErrorKind, op, format string, args ...any) *cloud.Error {
	return &cloud.Error{Kind: kind, Provider: cloud.AKS, Op: op, Message: fmt.Sprintf(format, args...)}
}
