package gke

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
	secretKV   = regexp.MustCompile(`(?i)\b(private_?key(_id)?|client_?secret|secret|password|passwd|token|access_?token|refresh_?token|credential|signature|authorization|api_?key)(["']?\s*[:=]\s*["']?)[^\s"',;&]+`)
	bearer     = regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9\-._~+/]+=*`)
	pemBlock   = regexp.MustCompile(`-----BEGIN [A-Z ]+-----[\s\S]*?-----END [A-Z ]+-----`)
	maxMessage = 1024
)

// sanitize strips query strings and user info from URLs and redacts
// anything that looks like a credential, then bounds the length.
func sanitize(s string) string {
	s = pemBlock.ReplaceAllString(s, "[redacted]")
	s = urlUser.ReplaceAllString(s, "$1")
	s = urlQuery.ReplaceAllString(s, "$1")
	s = bearer.ReplaceAllString(s, "$1 [redacted]")
	s = secretKV.ReplaceAllString(s, "$1$3[redacted]")
	if len(s) > maxMessage {
		s = s[:maxMessage] + "…"
	}
	return s
}

func errorf(kind cloud.ErrorKind, op, format string, args ...any) *cloud.Error {
	return &cloud.Error{Kind: kind, Provider: cloud.GKE, Op: op, Message: fmt.Sprintf(format, args...)}
}
