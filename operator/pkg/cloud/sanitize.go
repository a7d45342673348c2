package cloud

import (
	"errors"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Helpers every provider uses to turn its SDK's errors into *Error.

// IsTimeout reports a network timeout.
func IsTimeout(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}

// ParseRetryAfter reads a Retry-After header: delay-seconds or an HTTP
// date.
func ParseRetryAfter(v string, now time.Time) time.Duration {
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

// The credential shapes of every cloud: redacting one cloud's shape in
// another cloud's message costs nothing.
var (
	urlQuery = regexp.MustCompile(`(https?://[^\s"'?#]+)[?#][^\s"']*`)
	urlUser  = regexp.MustCompile(`(https?://)[^/\s"'@]+@`)
	secretKV = regexp.MustCompile(`(?i)\b(aws_?secret_?access_?key|secret_?access_?key|access_?key_?secret|accesskeysecret|access_?key_?id|accesskeyid|` +
		`private_?key(?:_id)?|client_?secret|account_?key|sharedaccesskey|login_?password|security_?token|session_?token|sts_?token|` +
		`access_?token|refresh_?token|x-amz-signature|x-amz-security-token|secret|password|passwd|token|credential|signature|sig|authorization|api_?key)` +
		`(["']?\s*[:=]\s*["']?)[^\s"',;&]+`)
	authHeader = regexp.MustCompile(`(?i)\b(bearer|basic|acs|ACS3-HMAC-SHA256)\s+[^\s"',]+`)
	pemBlock   = regexp.MustCompile(`-----BEGIN [A-Z ]+-----[\s\S]*?-----END [A-Z ]+-----`)
	keyIDs     = regexp.MustCompile(`\b((AKIA|ASIA)[A-Z0-9]{12,}|LTAI[0-9A-Za-z]{8,})\b`)
)

// MaxMessage bounds a sanitised message.
const MaxMessage = 1024

// Sanitize strips query strings and user info from URLs and redacts
// anything that looks like a credential of any cloud, then bounds the
// length.
func Sanitize(s string) string {
	s = pemBlock.ReplaceAllString(s, "[redacted]")
	s = urlUser.ReplaceAllString(s, "$1")
	s = urlQuery.ReplaceAllString(s, "$1")
	s = authHeader.ReplaceAllString(s, "$1 [redacted]")
	s = secretKV.ReplaceAllString(s, "$1$2[redacted]")
	s = keyIDs.ReplaceAllString(s, "[redacted]")
	if len(s) > MaxMessage {
		s = s[:MaxMessage] + "…"
	}
	return s
}
