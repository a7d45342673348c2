// Package watch is the Go client of ops-apiserver's watch streams: the
// list routes of vmclusters, backups and upgrade operations answer
// `?watch=true` with server-sent events (docs/apiserver.md, "Watch
// streams").
//
// Stream follows one stream and reconnects when it ends or the
// connection drops, sending the id of the last event it received as
// Last-Event-ID, so that the consumer sees every change:
//
//	err := watch.Stream(ctx, http.DefaultClient,
//		"https://ops.example/ops/api/v1/upgradeOperations?watch=true",
//		watch.Options{Header: http.Header{"Authorization": {"Bearer " + token}}},
//		func(ev watch.Event) error {
//			switch ev.Type {
//			case watch.Synced: // the initial state is complete
//			case watch.Added, watch.Modified, watch.Deleted:
//				var op struct{ ID, Status string }
//				if err := json.Unmarshal(ev.Data, &op); err != nil {
//					return err
//				}
//				fmt.Println(ev.Type, op.ID, op.Status)
//			}
//			return nil // watch.Stop ends Stream with a nil error
//		})
//
// The events: first the initial state (one ADDED per object the list's
// filters select; after a resume only those changed since the resume
// point, and DELETED for the deletions the server knows of), then SYNCED
// (its data a SyncedData), then one ADDED, MODIFIED or DELETED per
// change, the data the same JSON view the list returns. Every event has
// an id (a resourceVersion); the ids of a stream never decrease. After a
// reconnect the server sends every object whose state changed since the
// last id, its current state, and never a state the client already got;
// SYNCED follows again. Decode parses a stream without reconnecting.
package watch

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// The event types (Event.Type).
const (
	Added    = "ADDED"
	Modified = "MODIFIED"
	Deleted  = "DELETED"
	// Synced ends the initial state of each connection.
	Synced = "SYNCED"
)

// Event is one server-sent event.
type Event struct {
	// ID is the event's id (the last id seen on the stream when the
	// event had none, as the SSE rules say).
	ID string
	// Type is the event name ("message" when the event had none).
	Type string
	// Data is the data, its lines joined by "\n".
	Data []byte
}

// SyncedData is the data of a SYNCED event.
type SyncedData struct {
	// ResourceVersion is the point the initial state is complete at.
	ResourceVersion string `json:"resourceVersion"`
	// Complete is false after a resume when the server may not know of
	// every deletion since the resume point.
	Complete bool `json:"complete"`
}

// Stop, returned by an event callback, ends Stream with a nil error.
var Stop = errors.New("stop watching")

// Options configure Stream.
type Options struct {
	// LastEventID resumes from an earlier stream's last event id; ""
	// starts with the whole initial state.
	LastEventID string
	// Header is added to every request (Authorization).
	Header http.Header
	// MinBackoff and MaxBackoff bound the wait before a reconnect; it
	// doubles after every failed attempt and starts again at MinBackoff
	// after a connection that delivered an event. Defaults 500ms and 30s.
	MinBackoff, MaxBackoff time.Duration
	// MaxAttempts ends Stream after that many connection attempts in a
	// row that delivered no event; 0 retries until ctx ends.
	MaxAttempts int
	// MaxEventBytes bounds one event (default 16 MiB).
	MaxEventBytes int
	// IdleTimeout gives up a connection on which nothing (not even a
	// heartbeat) arrived for this long, and reconnects: a server that
	// vanished without closing the connection. Default 1m (the server's
	// heartbeat is 15s); negative: never. Do not give the http.Client a
	// Timeout: it would bound the whole stream.
	IdleTimeout time.Duration
	// OnReconnect, when set, is told of each reconnect: the error that
	// ended the previous connection (io.EOF when the server ended it)
	// and the wait before the next attempt.
	OnReconnect func(err error, wait time.Duration)
}

// StatusError is an answer other than 200 to a watch request.
type StatusError struct {
	Code int
	// Body is the start of the answer (the API's error body).
	Body []byte
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("watch request answered %d %s: %s", e.Code, http.StatusText(e.Code), bytes.TrimSpace(e.Body))
}

// Retryable reports whether the request may succeed later: a 429 (too
// many streams), 502, 503 or 504.
func (e *StatusError) Retryable() bool {
	switch e.Code {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// Stream watches url (a list route with watch=true) and calls fn for
// every event, in order, until ctx ends (ctx.Err()), fn returns an error
// (that error; nil for Stop), the server refuses the request with a
// status that will not change (a *StatusError: 400, 401, 403, 404) or
// MaxAttempts attempts fail in a row. A stream the server ends (its
// maximum duration, a shutdown, a client that fell behind) or a dropped
// connection is resumed after a backoff with the last event id.
func Stream(ctx context.Context, hc *http.Client, url string, opts Options, fn func(Event) error) error {
	if hc == nil {
		hc = http.DefaultClient
	}
	minB, maxB := opts.MinBackoff, opts.MaxBackoff
	if minB <= 0 {
		minB = 500 * time.Millisecond
	}
	if maxB < minB {
		maxB = max(30*time.Second, minB)
	}
	last := opts.LastEventID
	backoff := minB
	failures := 0
	for {
		got, err := connect(ctx, hc, url, opts, &last, fn)
		switch {
		case errors.Is(err, Stop):
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && isCallbackError(err):
			return errors.Unwrap(err)
		}
		var se *StatusError
		if errors.As(err, &se) && !se.Retryable() {
			return err
		}
		if got {
			failures, backoff = 0, minB
		} else {
			failures++
			if opts.MaxAttempts > 0 && failures >= opts.MaxAttempts {
				if err == nil {
					err = io.EOF
				}
				return fmt.Errorf("watching %s: %d attempts in a row delivered no event: %w", url, failures, err)
			}
		}
		wait := jitter(backoff)
		if opts.OnReconnect != nil {
			reason := err
			if reason == nil {
				reason = io.EOF
			}
			opts.OnReconnect(reason, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		if !got {
			backoff = min(2*backoff, maxB)
		}
	}
}

// callbackError marks an error of fn, which ends Stream.
type callbackError struct{ err error }

func (e callbackError) Error() string { return e.err.Error() }
func (e callbackError) Unwrap() error { return e.err }

func isCallbackError(err error) bool {
	var ce callbackError
	return errors.As(err, &ce)
}

// jitter spreads reconnects of many clients: d ± 20%.
func jitter(d time.Duration) time.Duration {
	return d + time.Duration((rand.Float64()*0.4-0.2)*float64(d))
}

// connect runs one connection; got reports whether it delivered an
// event. *last follows the ids of the events.
func connect(ctx context.Context, hc *http.Client, url string, opts Options, last *string, fn func(Event) error) (got bool, err error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, url, nil)
	if err != nil {
		return false, callbackError{fmt.Errorf("building the watch request: %w", err)}
	}
	for k, vs := range opts.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")
	if *last != "" {
		req.Header.Set("Last-Event-ID", *last)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return false, &StatusError{Code: resp.StatusCode, Body: body}
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return false, &StatusError{Code: resp.StatusCode, Body: []byte("not an event stream: Content-Type " + ct)}
	}
	var body io.Reader = resp.Body
	idle := opts.IdleTimeout
	if idle == 0 {
		idle = time.Minute
	}
	var idled atomic.Bool
	if idle > 0 {
		t := time.AfterFunc(idle, func() { idled.Store(true); cancel() })
		defer t.Stop()
		body = &idleReader{r: resp.Body, t: t, d: idle}
	}
	d := &decoder{max: opts.MaxEventBytes, last: *last}
	defer func() {
		if idled.Load() && ctx.Err() == nil {
			err = fmt.Errorf("nothing arrived for %s: %w", idle, ErrIdle)
		}
	}()
	err = d.decode(body, func(ev Event) error {
		got = true
		*last = ev.ID
		if err := fn(ev); err != nil {
			if errors.Is(err, Stop) {
				return Stop
			}
			return callbackError{err}
		}
		return nil
	})
	return got, err
}

// ErrIdle ends a connection on which nothing arrived for
// Options.IdleTimeout (Stream reconnects).
var ErrIdle = errors.New("the watch connection is idle")

// idleReader restarts the idle timer t at every read that got bytes.
type idleReader struct {
	r io.Reader
	t *time.Timer
	d time.Duration
}

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.t.Reset(r.d)
	}
	return n, err
}

// Decode parses the server-sent events of r and calls fn for each until
// r ends (nil), fn fails (its error) or an event exceeds 16 MiB.
// Comments (heartbeats) are skipped; "retry:" fields are ignored.
func Decode(r io.Reader, fn func(Event) error) error {
	d := &decoder{}
	return d.decode(r, fn)
}

type decoder struct {
	max  int
	last string
}

func (d *decoder) decode(r io.Reader, fn func(Event) error) error {
	limit := d.max
	if limit <= 0 {
		limit = 16 << 20
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), limit)
	sc.Split(scanLines)
	var typ string
	var data bytes.Buffer
	hasData := false
	size := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			// Dispatch; an event without data is none (SSE rules).
			if hasData {
				if typ == "" {
					typ = "message"
				}
				if err := fn(Event{ID: d.last, Type: typ, Data: bytes.Clone(data.Bytes())}); err != nil {
					return err
				}
			}
			typ, hasData, size = "", false, 0
			data.Reset()
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		size += len(line)
		if size > limit {
			return fmt.Errorf("a server-sent event exceeds %d bytes", limit)
		}
		switch field {
		case "event":
			typ = value
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.WriteString(value)
			hasData = true
		case "id":
			if !strings.ContainsRune(value, 0) {
				d.last = value
			}
		}
	}
	return sc.Err()
}

// scanLines splits on LF, CRLF or CR, the line ends of SSE.
func scanLines(data []byte, atEOF bool) (int, []byte, error) {
	for i, b := range data {
		switch b {
		case '\n':
			return i + 1, data[:i], nil
		case '\r':
			if i+1 < len(data) {
				if data[i+1] == '\n' {
					return i + 2, data[:i], nil
				}
				return i + 1, data[:i], nil
			}
			if atEOF {
				return i + 1, data[:i], nil
			}
			// A CR at the end of the buffer: wait for what follows.
			return 0, nil, nil
		}
	}
	if atEOF && len(data) > 0 {
		// An unterminated last line is dropped with its event.
		return len(data), nil, nil
	}
	return 0, nil, nil
}
