// Package vmsnapshot is a client of vmstorage's instant snapshot API
// (/snapshot/create, /snapshot/list, /snapshot/delete on vmstorage's HTTP
// port, 8482 by default).
//
// The API as vmstorage v1.100.0-cluster serves it: every path accepts any
// method; create answers {"status":"ok","snapshot":"<name>"} once the
// snapshot exists (it is synchronous); list answers
// {"status":"ok","snapshots":[...]}; delete takes ?snapshot=<name> and
// answers {"status":"ok"}, or 500 with {"status":"error","msg":"cannot find
// snapshot ..."} for an unknown name. With -snapshotAuthKey set, every call
// needs authKey (401 otherwise).
//
// The client sends its parameters, authKey included, as a POST form body,
// never in the URL: the key cannot leak through a URL in an error, a log
// line or a proxy's access log. Every response is read through a size
// limit, and no error message carries the key or a query string.
//
// The client follows no redirect: a vmstorage never answers with one, and
// following it would send the form, the auth key included, to wherever the
// answer points (and let a pod that answers on the vmstorage port steer the
// operator's requests anywhere its network reaches). A redirect is an
// error naming its status.
package vmsnapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// DefaultPort is vmstorage's default HTTP port (-httpListenAddr=:8482).
const DefaultPort = 8482

const (
	// maxBody bounds every response body read; a snapshot list of a
	// thousand names is ~35 KiB.
	maxBody = 1 << 20
	// maxErrorBody bounds the part of an error body kept in a message.
	maxErrorBody = 512
	// DefaultTimeout bounds one call when the context has no earlier
	// deadline. Creating a snapshot flushes in-memory data first, which
	// can take seconds on a busy vmstorage.
	DefaultTimeout = time.Minute
)

// nameRe is vmstorage's snapshot name: the UTC creation time and a
// counter, e.g. 20261201041006-18ED05CB8B1B6538.
var nameRe = regexp.MustCompile(`^[0-9]{14}-[0-9A-Fa-f]+$`)

// ValidName reports whether name looks like a vmstorage snapshot name.
func ValidName(name string) bool { return nameRe.MatchString(name) }

// NameTime returns the creation time encoded in a snapshot name (UTC, to
// the second).
func NameTime(name string) (time.Time, error) {
	if !ValidName(name) {
		return time.Time{}, fmt.Errorf("%q is not a vmstorage snapshot name", name)
	}
	t, err := time.Parse("20060102150405", name[:14])
	if err != nil {
		return time.Time{}, fmt.Errorf("snapshot name %q: %w", name, err)
	}
	return t.UTC(), nil
}

// ErrNotFound is returned by Delete for a snapshot vmstorage does not have.
var ErrNotFound = errors.New("snapshot not found")

// Error is a failed call: vmstorage answered with an error, or could not be
// reached. Its message never contains the auth key.
type Error struct {
	// Op is create, list or delete.
	Op string
	// Endpoint is the vmstorage base URL, without credentials or query.
	Endpoint string
	// StatusCode is the HTTP status, 0 when there was no answer.
	StatusCode int
	// Message is what vmstorage said, or why there was no answer.
	Message string
	err     error
	temp    bool
}

func (e *Error) Error() string {
	if e.StatusCode == 0 {
		return fmt.Sprintf("%s snapshot on %s: %s", e.Op, e.Endpoint, e.Message)
	}
	return fmt.Sprintf("%s snapshot on %s: %d %s: %s", e.Op, e.Endpoint, e.StatusCode, http.StatusText(e.StatusCode), e.Message)
}

// Unwrap returns the sanitised cause (ErrNotFound, a network error).
func (e *Error) Unwrap() error { return e.err }

// Temporary reports whether retrying may help: no answer (connection
// refused, timeout) or a 502/503/504 from something in between. A 4xx or a
// 500 from vmstorage itself (no space left, bad auth key) is permanent.
func (e *Error) Temporary() bool { return e.temp }

// IsTemporary reports whether err is an *Error worth retrying.
func IsTemporary(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Temporary()
}

// Client calls one vmstorage's snapshot API.
type Client struct {
	base    *url.URL
	authKey string
	hc      *http.Client
}

// New returns a client of the vmstorage at baseURL (http or https, e.g.
// http://10.0.0.12:8482; a path prefix is kept). authKey is vmstorage's
// -snapshotAuthKey, empty when it has none. hc may be nil; the client uses
// a copy of it that follows no redirect, whatever hc's CheckRedirect says.
func New(baseURL, authKey string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("vmstorage endpoint %q is not a URL", Redact(baseURL))
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("vmstorage endpoint %q: want http(s)://host:port", Redact(baseURL))
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("vmstorage endpoint %q: credentials, query or fragment not allowed", Redact(baseURL))
	}
	noRedirects := http.Client{}
	if hc != nil {
		noRedirects = *hc
	}
	noRedirects.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Client{base: u, authKey: authKey, hc: &noRedirects}, nil
}

// Endpoint is the base URL the client calls.
func (c *Client) Endpoint() string { return c.base.String() }

// Create takes an instant snapshot and returns its name.
func (c *Client) Create(ctx context.Context) (string, error) {
	var out struct {
		Snapshot string `json:"snapshot"`
	}
	if err := c.call(ctx, "create", "/snapshot/create", nil, &out); err != nil {
		return "", err
	}
	if !ValidName(out.Snapshot) {
		return "", c.errorf("create", 0, "unexpected snapshot name %.64q in the answer", out.Snapshot)
	}
	return out.Snapshot, nil
}

// List returns the names of the snapshots vmstorage has.
func (c *Client) List(ctx context.Context) ([]string, error) {
	var out struct {
		Snapshots []string `json:"snapshots"`
	}
	if err := c.call(ctx, "list", "/snapshot/list", nil, &out); err != nil {
		return nil, err
	}
	return out.Snapshots, nil
}

// Delete deletes a snapshot; an unknown name gives an error wrapping
// ErrNotFound.
func (c *Client) Delete(ctx context.Context, name string) error {
	if !ValidName(name) {
		return c.errorf("delete", 0, "refusing to delete %.64q: not a snapshot name", name)
	}
	return c.call(ctx, "delete", "/snapshot/delete", url.Values{"snapshot": {name}}, nil)
}

func (c *Client) errorf(op string, code int, format string, args ...any) *Error {
	e := &Error{Op: op, Endpoint: c.Endpoint(), StatusCode: code, Message: c.scrub(fmt.Sprintf(format, args...))}
	switch code {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, http.StatusTooManyRequests:
		e.temp = true
	}
	return e
}

// call POSTs form to path and decodes a {"status":"ok",...} answer into
// out.
func (c *Client) call(ctx context.Context, op, path string, form url.Values, out any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	if form == nil {
		form = url.Values{}
	}
	if c.authKey != "" {
		form.Set("authKey", c.authKey)
	}
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return c.errorf(op, 0, "building request: %v", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		// *url.Error repeats the URL; keep only the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		e := c.errorf(op, 0, "%v", err)
		e.err, e.temp = errors.New(e.Message), true
		return e
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		e := c.errorf(op, 0, "reading the answer: %v", err)
		e.temp = true
		return e
	}
	if len(body) > maxBody {
		return c.errorf(op, resp.StatusCode, "answer larger than %d bytes", maxBody)
	}
	var status struct {
		Status string `json:"status"`
		Msg    string `json:"msg"`
	}
	jsonErr := json.Unmarshal(body, &status)
	if resp.StatusCode != http.StatusOK || status.Status != "ok" {
		msg := status.Msg
		if jsonErr != nil || msg == "" {
			msg = strings.TrimSpace(string(body))
		}
		if len(msg) > maxErrorBody {
			msg = msg[:maxErrorBody] + "..."
		}
		if msg == "" {
			msg = "empty answer"
		}
		e := c.errorf(op, resp.StatusCode, "%s", msg)
		if op == "delete" && strings.Contains(msg, "cannot find snapshot") {
			e.err = ErrNotFound
		}
		return e
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			return c.errorf(op, resp.StatusCode, "decoding the answer: %v", err)
		}
	}
	return nil
}

// scrub removes the auth key from a message, wherever it came from.
func (c *Client) scrub(msg string) string {
	if c.authKey != "" {
		msg = strings.ReplaceAll(msg, c.authKey, "<redacted>")
		msg = strings.ReplaceAll(msg, url.QueryEscape(c.authKey), "<redacted>")
	}
	return msg
}

// Redact returns rawURL without user info, query string and fragment, for
// messages. An unparseable URL gives a placeholder.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "<unparseable URL>"
	}
	u.User, u.RawQuery, u.Fragment, u.ForceQuery = nil, "", "", false
	return u.String()
}
