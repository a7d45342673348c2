package gke

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"google.golang.org/api/googleapi"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// classify turns an SDK error into a *cloud.Error (cloud.Classify, with
// the Google API part in classifyGoogle).
func classify(op string, err error) error {
	return cloud.Classify(cloud.GKE, op, err, classifyGoogle)
}

// classifyGoogle: 429 and 5xx are retryable (with the server's
// Retry-After), as is GKE's "another operation is running on the cluster"
// (400 FAILED_PRECONDITION); 404 is NotFound; other 4xx are permanent.
// The message is GKE's own message, sanitised.
func classifyGoogle(err error, ce *cloud.Error) bool {
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		return false
	}
	ce.StatusCode = ge.Code
	ce.Kind = cloud.FromHTTPStatus(ge.Code)
	ce.RetryAfter = cloud.ParseRetryAfter(ge.Header.Get("Retry-After"), time.Now())
	msg := ge.Message
	if msg == "" {
		msg = http.StatusText(ge.Code)
	}
	if status := statusOf(ge); status != "" {
		msg = status + ": " + msg
	}
	ce.Message = cloud.Sanitize(msg)
	if ge.Code == http.StatusBadRequest && operationConflict(ge.Message) {
		ce.Kind = cloud.Retryable
	}
	return true
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
