package gke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"google.golang.org/api/googleapi"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// classify turns an SDK error into a *cloud.Error: 429, 5xx, timeouts and
// network failures are retryable (with the server's Retry-After), as is
// GKE's "another operation is running on the cluster" (400
// FAILED_PRECONDITION); 404 is NotFound; other 4xx are permanent. The
// message is GKE's own message, sanitised.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var already *cloud.Error
	if errors.As(err, &already) {
		return err
	}
	ce := &cloud.Error{Provider: cloud.GKE, Op: op}
	switch {
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		ce.Kind, ce.Timeout, ce.Message = cloud.Retryable, true, "request timed out"
		return ce
	case errors.Is(err, context.Canceled):
		ce.Kind, ce.Message = cloud.Retryable, "request cancelled"
		return ce
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		ce.StatusCode = ge.Code
		ce.Kind = cloud.FromHTTPStatus(ge.Code)
		ce.RetryAfter = parseRetryAfter(ge.Header.Get("Retry-After"), time.Now())
		msg := ge.Message
		if msg == "" {
			msg = http.StatusText(ge.Code)
		}
		if status := statusOf(ge); status != "" {
			msg = status + ": " + msg
		}
		ce.Message = sanitize(msg)
		if ge.Code == http.StatusBadRequest && operationConflict(ge.Message) {
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

// statusOf digs the canonical status (NOT_FOUND, FAILED_PRECONDITION, ...)
// out of the error body.
func statusOf(ge *googleapi.Error) string {
	if ge.Body == "" {
		return ""
	}
	var body struct {
		Error struct {
			Status string `json:"status"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(ge.Body), &body); err != nil {
		return ""
	}
	return body.Error.Status
}

// operationConflict recognises GKE's answer when another operation holds
// the cluster or node pool ("Cluster is running incompatible operation
// operation-...", "... please wait and try again once it is done").
func operationConflict(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "incompatible operation") || strings.Contains(m, "try again once it is done") ||
		(strings.Contains(m, "operation") && strings.Contains(m, "in progress"))
}

// The shared helpers of package cloud, under the names this file uses.
var (
	isTimeout       = cloud.IsTimeout
	parseRetryAfter = cloud.ParseRetryAfter
	sanitize        = cloud.Sanitize
)

func errorf(kind cloud.ErrorKind, op, format string, args ...any) *cloud.Error {
	return &cloud.Error{Kind: kind, Provider: cloud.GKE, Op: op, Message: fmt.Sprintf(format, args...)}
}
