package watch_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/apiserver/pkg/client/watch"
)

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []watch.Event
	}{
		{"one event", "id: 1\nevent: ADDED\ndata: {\"a\":1}\n\n",
			[]watch.Event{{ID: "1", Type: "ADDED", Data: []byte(`{"a":1}`)}}},
		{"multi-line data and no space after the colon", "event:X\ndata:a\ndata: b\n\n",
			[]watch.Event{{Type: "X", Data: []byte("a\nb")}}},
		{"comments and heartbeats are skipped", ": heartbeat\n\nid: 2\n: in between\ndata: x\n\n",
			[]watch.Event{{ID: "2", Type: "message", Data: []byte("x")}}},
		{"the id carries over to events without one", "id: 7\nevent: A\ndata: 1\n\nevent: B\ndata: 2\n\n",
			[]watch.Event{{ID: "7", Type: "A", Data: []byte("1")}, {ID: "7", Type: "B", Data: []byte("2")}}},
		{"CRLF and CR line ends", "id: 3\r\nevent: A\r\ndata: 1\r\n\r\nevent: B\rdata: 2\r\r",
			[]watch.Event{{ID: "3", Type: "A", Data: []byte("1")}, {ID: "3", Type: "B", Data: []byte("2")}}},
		{"an event without data is not dispatched, its id is kept", "id: 9\nevent: A\n\ndata: x\n\n",
			[]watch.Event{{ID: "9", Type: "message", Data: []byte("x")}}},
		{"an unterminated event at the end is dropped", "data: a\n\ndata: b\n",
			[]watch.Event{{Type: "message", Data: []byte("a")}}},
		{"unknown fields and retry are ignored", "retry: 10\nfoo: bar\ndata: z\n\n",
			[]watch.Event{{Type: "message", Data: []byte("z")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var got []watch.Event
			g.Expect(watch.Decode(strings.NewReader(tc.in), func(ev watch.Event) error {
				got = append(got, ev)
				return nil
			})).To(Succeed())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestDecodeStopsOnCallbackError(t *testing.T) {
	g := NewWithT(t)
	boom := errors.New("boom")
	n := 0
	err := watch.Decode(strings.NewReader("data: 1\n\ndata: 2\n\n"), func(watch.Event) error {
		n++
		return boom
	})
	g.Expect(err).To(MatchError(boom))
	g.Expect(n).To(Equal(1))
}

// sseServer answers each connection with the next script: a status and
// a body. It records the Last-Event-ID of every request.
type sseServer struct {
	mu      sync.Mutex
	scripts []func(w http.ResponseWriter)
	seen    []string
}

func (s *sseServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seen = append(s.seen, r.Header.Get("Last-Event-ID"))
	i := len(s.seen) - 1
	var script func(http.ResponseWriter)
	if i < len(s.scripts) {
		script = s.scripts[i]
	}
	s.mu.Unlock()
	if script == nil {
		http.Error(w, "no more scripts", http.StatusGone)
		return
	}
	script(w)
}

func (s *sseServer) lastEventIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

func stream(body string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, body)
	}
}

func status(code int) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) { http.Error(w, `{"error":{"code":`+fmt.Sprint(code)+`}}`, code) }
}

func fast() watch.Options {
	return watch.Options{MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
}

func TestStreamResumesWithTheLastEventID(t *testing.T) {
	g := NewWithT(t)
	s := &sseServer{scripts: []func(http.ResponseWriter){
		stream("id: 5\nevent: ADDED\ndata: a\n\nid: 6\nevent: SYNCED\ndata: {}\n\nid: 8\nevent: MODIFIED\ndata: a2\n\n"),
		// Down for a moment: retried.
		status(http.StatusServiceUnavailable),
		status(http.StatusTooManyRequests),
		// A connection that ends without an event.
		stream(": heartbeat\n\n"),
		stream("id: 8\nevent: SYNCED\ndata: {}\n\nid: 9\nevent: DELETED\ndata: a3\n\n"),
	}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	var got []string
	var reconnects int
	opts := fast()
	opts.Header = http.Header{"Authorization": {"Bearer t"}}
	opts.OnReconnect = func(error, time.Duration) { reconnects++ }
	err := watch.Stream(context.Background(), srv.Client(), srv.URL, opts, func(ev watch.Event) error {
		got = append(got, ev.Type+"@"+ev.ID+"="+string(ev.Data))
		if ev.Type == watch.Deleted {
			return watch.Stop
		}
		return nil
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal([]string{"ADDED@5=a", "SYNCED@6={}", "MODIFIED@8=a2", "SYNCED@8={}", "DELETED@9=a3"}))
	g.Expect(s.lastEventIDs()).To(Equal([]string{"", "8", "8", "8", "8"}))
	g.Expect(reconnects).To(Equal(4))
}

func TestStreamStartsFromOptionsLastEventID(t *testing.T) {
	g := NewWithT(t)
	s := &sseServer{scripts: []func(http.ResponseWriter){stream("id: 42\nevent: SYNCED\ndata: {}\n\n")}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	opts := fast()
	opts.LastEventID = "41"
	err := watch.Stream(context.Background(), srv.Client(), srv.URL, opts, func(watch.Event) error { return watch.Stop })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.lastEventIDs()).To(Equal([]string{"41"}))
}

func TestStreamGivesUpOnPermanentRefusals(t *testing.T) {
	for _, code := range []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			g := NewWithT(t)
			s := &sseServer{scripts: []func(http.ResponseWriter){status(code)}}
			srv := httptest.NewServer(s)
			defer srv.Close()
			err := watch.Stream(context.Background(), srv.Client(), srv.URL, fast(), func(watch.Event) error { return nil })
			var se *watch.StatusError
			g.Expect(errors.As(err, &se)).To(BeTrue())
			g.Expect(se.Code).To(Equal(code))
			g.Expect(s.lastEventIDs()).To(HaveLen(1))
		})
	}
}

func TestStreamReturnsTheCallbacksError(t *testing.T) {
	g := NewWithT(t)
	s := &sseServer{scripts: []func(http.ResponseWriter){stream("data: x\n\n")}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	boom := errors.New("boom")
	err := watch.Stream(context.Background(), srv.Client(), srv.URL, fast(), func(watch.Event) error { return boom })
	g.Expect(err).To(MatchError(boom))
}

func TestStreamMaxAttempts(t *testing.T) {
	g := NewWithT(t)
	s := &sseServer{scripts: []func(http.ResponseWriter){
		status(http.StatusServiceUnavailable), status(http.StatusServiceUnavailable), status(http.StatusServiceUnavailable),
	}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	opts := fast()
	opts.MaxAttempts = 3
	err := watch.Stream(context.Background(), srv.Client(), srv.URL, opts, func(watch.Event) error { return nil })
	g.Expect(err).To(MatchError(ContainSubstring("3 attempts in a row delivered no event")))
	var se *watch.StatusError
	g.Expect(errors.As(err, &se)).To(BeTrue())
	g.Expect(se.Code).To(Equal(http.StatusServiceUnavailable))
}

func TestStreamEndsWithTheContext(t *testing.T) {
	g := NewWithT(t)
	// A server that never answers.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- watch.Stream(ctx, srv.Client(), srv.URL, fast(), func(watch.Event) error { return nil })
	}()
	cancel()
	g.Eventually(errc, 10*time.Second).Should(Receive(MatchError(context.Canceled)))
}

func TestStreamRefusesAnAnswerThatIsNoEventStream(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"vmclusters":[]}`)
	}))
	defer srv.Close()
	opts := fast()
	opts.MaxAttempts = 1
	err := watch.Stream(context.Background(), srv.Client(), srv.URL, opts, func(watch.Event) error { return nil })
	g.Expect(err).To(MatchError(ContainSubstring("not an event stream")))
}

func TestStreamReconnectsAnIdleConnection(t *testing.T) {
	g := NewWithT(t)
	var mu sync.Mutex
	calls := 0
	// The first connection sends an event, then nothing, never closing;
	// the second one the next event.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if n == 1 {
			_, _ = io.WriteString(w, "id: 1\nevent: ADDED\ndata: a\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		g.Expect(r.Header.Get("Last-Event-ID")).To(Equal("1"))
		_, _ = io.WriteString(w, "id: 2\nevent: MODIFIED\ndata: b\n\n")
	}))
	defer srv.Close()
	opts := fast()
	opts.IdleTimeout = 200 * time.Millisecond
	var reasons []error
	opts.OnReconnect = func(err error, _ time.Duration) { reasons = append(reasons, err) }
	var got []string
	err := watch.Stream(context.Background(), srv.Client(), srv.URL, opts, func(ev watch.Event) error {
		got = append(got, ev.Type)
		if len(got) == 2 {
			return watch.Stop
		}
		return nil
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal([]string{"ADDED", "MODIFIED"}))
	g.Expect(reasons).To(HaveLen(1))
	g.Expect(reasons[0]).To(MatchError(watch.ErrIdle))
}
