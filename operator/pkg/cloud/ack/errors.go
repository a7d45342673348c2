package ack

import (
	"errors"
	"net/http"
	"strings"
	"time"

	openapi "github.com/alibabacloud-go/darabonba-openapi/v2/client"
	"github.com/alibabacloud-go/tea/tea"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// classify turns an SDK error into a *cloud.Error (cloud.Classify, with
// the Alibaba Cloud part in classifyTea).
func classify(op string, err error) error {
	return cloud.Classify(cloud.ACK, op, err, classifyTea)
}

// classifyTea: throttling (Throttling* codes, 429, with the x-ratelimit
// TimeLeft the SDK reads), 5xx and answers without a status are
// retryable, and so are ACK's "the cluster has a task running" conflicts;
// 404 and *NotFound codes are NotFound; other 4xx are permanent. The
// message is ACK's code and message, without the request id or any
// credential.
func classifyTea(err error, ce *cloud.Error) bool {
	var (
		code, msg string
		status    int
		retry     *int64
		throttled bool
	)
	var te *openapi.ThrottlingError
	var se *openapi.ServerError
	var cle *openapi.ClientError
	var sdk *tea.SDKError
	switch {
	case errors.As(err, &te):
		code, msg, status, retry, throttled = tea.StringValue(te.Code), dataMessage(te.Data, te.Message), tea.IntValue(te.StatusCode), te.RetryAfter, true
	case errors.As(err, &se):
		code, msg, status, retry = tea.StringValue(se.Code), dataMessage(se.Data, se.Message), tea.IntValue(se.StatusCode), se.RetryAfter
	case errors.As(err, &cle):
		code, msg, status, retry = tea.StringValue(cle.Code), dataMessage(cle.Data, cle.Message), tea.IntValue(cle.StatusCode), cle.RetryAfter
	case errors.As(err, &sdk):
		code, msg, status = tea.StringValue(sdk.Code), tea.StringValue(sdk.Message), tea.IntValue(sdk.StatusCode)
	default:
		return false
	}
	ce.StatusCode = status
	if retry != nil && *retry > 0 {
		ce.RetryAfter = time.Duration(*retry) * time.Millisecond
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	ce.Message = cloud.Sanitize(strings.TrimPrefix(code+": "+msg, ": "))
	lc := strings.ToLower(code)
	switch {
	case throttled || strings.HasPrefix(code, "Throttling") || status == http.StatusTooManyRequests:
		ce.Kind = cloud.Retryable
	case status == http.StatusNotFound || strings.Contains(lc, "notfound") || strings.Contains(lc, "not_found"):
		ce.Kind = cloud.NotFound
	case status >= 500:
		ce.Kind = cloud.Retryable
	case strings.Contains(lc, "conflict") || strings.Contains(lc, "taskrunning") || strings.Contains(lc, "busy") ||
		strings.Contains(strings.ToLower(msg), "task is running"):
		ce.Kind = cloud.Retryable
	case status == 0:
		ce.Kind = cloud.Retryable
	default:
		ce.Kind = cloud.FromHTTPStatus(status)
	}
	return true
}

// dataMessage is the "message" of the error body, or the SDK's message
// with its "code: N, " prefix and " request id: ..." suffix removed.
func dataMessage(data map[string]any, fallback *string) string {
	if m, ok := data["message"].(string); ok && m != "" {
		return m
	}
	if m, ok := data["Message"].(string); ok && m != "" {
		return m
	}
	s := tea.StringValue(fallback)
	if i := strings.Index(s, ", "); strings.HasPrefix(s, "code: ") && i > 0 {
		s = s[i+2:]
	}
	if i := strings.LastIndex(s, " request id: "); i >= 0 {
		s = s[:i]
	}
	return s
}
