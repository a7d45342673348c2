package aks

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// classify turns an SDK error into a *cloud.Error (cloud.Classify, with
// the ARM part in classifyARM).
func classify(op string, err error) error {
	return cloud.Classify(cloud.AKS, op, err, classifyARM)
}

// classifyARM: 429 and 5xx are retryable (with ARM's Retry-After), and so
// are 412 (the resource changed since it was read: read it again) and 409
// "another operation is in progress"; 404 is NotFound; other 4xx are
// permanent. The message is ARM's error code and message only, never the
// request URL.
func classifyARM(err error, ce *cloud.Error) bool {
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return false
	}
	ce.StatusCode = re.StatusCode
	ce.Kind = cloud.FromHTTPStatus(re.StatusCode)
	code, msg := armError(re)
	ce.Message = cloud.Sanitize(strings.TrimPrefix(code+": "+msg, ": "))
	if re.RawResponse != nil {
		ce.RetryAfter = cloud.ParseRetryAfter(re.RawResponse.Header.Get("Retry-After"), time.Now())
	}
	switch {
	case re.StatusCode == http.StatusPreconditionFailed:
		ce.Kind = cloud.Retryable
	case re.StatusCode == http.StatusConflict && inProgress(msg):
		ce.Kind = cloud.Retryable
	}
	return true
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
