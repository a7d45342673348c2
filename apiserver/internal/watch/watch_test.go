package watch_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/server"
	"github.com/tidbcloud/ops-server/apiserver/internal/watch"
	clientwatch "github.com/tidbcloud/ops-server/apiserver/pkg/client/watch"
)

// cm is a ConfigMap standing for any object: name, resourceVersion and
// a "team" label the test filters on.
func cm(name, rv, team string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: rv,
		Labels: map[string]string{"team": team},
	}}
}

type view struct {
	Name string            `json:"name"`
	RV   string            `json:"rv"`
	Team string            `json:"team"`
	Data map[string]string `json:"data,omitempty"`
}

// serve runs the hub's stream for ?team=<team> behind the real server
// middleware (request timeout, write path).
func serve(t *testing.T, h *watch.Hub, opts ...func(*server.Options)) *httptest.Server {
	t.Helper()
	o := server.Options{RequestTimeout: time.Minute}
	for _, f := range opts {
		f(&o)
	}
	e, err := server.New(o, api{h})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return srv
}

type api struct{ h *watch.Hub }

func (a api) Routes() []server.Route {
	return []server.Route{{Method: http.MethodGet, Path: "/things", Name: "things.list", Resource: "things", Verb: "list", Watch: true,
		Handler: func(c echo.Context) error {
			since, resumed, v := watch.ParseResume(c.Request(), "resource_version")
			if v != nil {
				return echo.NewHTTPError(http.StatusBadRequest, v.Description)
			}
			team := c.QueryParam("team")
			return a.h.Serve(c, watch.Stream{
				Match: func(o client.Object) bool { return team == "" || o.GetLabels()["team"] == team },
				View: func(o client.Object) any {
					return view{Name: o.GetName(), RV: o.GetResourceVersion(), Team: o.GetLabels()["team"], Data: o.(*corev1.ConfigMap).Data}
				},
				Since: since, Resumed: resumed,
			})
		}}}
}

// events reads the stream of url into a channel.
func events(t *testing.T, ctx context.Context, url string, header http.Header) (<-chan clientwatch.Event, *http.Response) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan clientwatch.Event, 100)
	if resp.StatusCode != http.StatusOK {
		close(ch)
		return ch, resp
	}
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		_ = clientwatch.Decode(resp.Body, func(ev clientwatch.Event) error {
			ch <- ev
			return nil
		})
	}()
	return ch, resp
}

// next is the next event, within 10s.
func next(t *testing.T, ch <-chan clientwatch.Event) clientwatch.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return clientwatch.Event{}
}

type got struct {
	ID, Type, Name, RV string
}

func summary(t *testing.T, ev clientwatch.Event) got {
	t.Helper()
	if ev.Type == string(watch.Synced) {
		var s watch.SyncedData
		if err := json.Unmarshal(ev.Data, &s); err != nil {
			t.Fatal(err)
		}
		return got{ID: ev.ID, Type: ev.Type, RV: s.ResourceVersion}
	}
	var v view
	if err := json.Unmarshal(ev.Data, &v); err != nil {
		t.Fatal(err)
	}
	return got{ID: ev.ID, Type: ev.Type, Name: v.Name, RV: v.RV}
}

func newBroker(t *testing.T, opts watch.Options) *watch.Broker {
	t.Helper()
	b := watch.NewBroker(opts)
	t.Cleanup(b.Stop)
	return b
}

func TestStreamInitialStateThenOneEventPerChange(t *testing.T) {
	g := NewWithT(t)
	h := newBroker(t, watch.Options{}).NewTestHub("things")
	h.OnAdd(cm("b", "12", "red"), true)
	h.OnAdd(cm("a", "10", "red"), true)
	h.OnAdd(cm("c", "11", "blue"), true)
	srv := serve(t, h)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, resp := events(t, ctx, srv.URL+"/things?watch=true&team=red", nil)
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(resp.Header.Get("Content-Type")).To(Equal("text/event-stream"))

	// The initial state in resourceVersion order, then SYNCED at the
	// hub's last resourceVersion.
	g.Expect(summary(t, next(t, ch))).To(Equal(got{ID: "10", Type: "ADDED", Name: "a", RV: "10"}))
	g.Expect(summary(t, next(t, ch))).To(Equal(got{ID: "12", Type: "ADDED", Name: "b", RV: "12"}))
	g.Expect(summary(t, next(t, ch))).To(Equal(got{ID: "12", Type: "SYNCED", RV: "12"}))

	h.OnUpdate(cm("a", "10", "red"), cm("a", "13", "red"))
	g.Expect(summary(t, next(t, ch))).To(Equal(got{ID: "13", Type: "MODIFIED", Name: "a", RV: "13"}))
	// A resync (same resourceVersion) and a change outside the filter
	// send nothing; a new object that matches is ADDED.
	h.OnUpdate(cm("a", "13", "red"), cm("a", "13", "red"))
	h.OnUpdate(cm("c", "11", "blue"), cm("c", "14", "blue"))
	h.OnAdd(cm("d", "15", "red"), false)
	g.Expect(summary(t, next(t, ch))).To(Equal(got{ID: "15", Type: "ADDED", Name: "d", RV: "15"}))
	// Leaving the filter is a DELETED; entering it an ADDED.
	h.OnUpdate(cm("b", "12", "red"), cm("b", "16", "blue"))
	g.Expect(summary(t, next(t, ch))).To(Equal(got{ID: "16", Type: "DELETED", Name: "b", RV: "16"}))
	h.OnUpdate(cm("c", "14", "blue"), cm("c", "17", "red"))
	g.Expect(summary(t, next(t, ch))).To(Equal(got{ID: "17", Type: "ADDED", Name: "c", RV: "17"}))
	// A deletion, also one the informer only found by a relist.
	h.OnDelete(cm("a", "18", "red"))
	g.Expect(summary(t, next(t, ch))).To(Equal(got{ID: "18", Type: "DELETED", Name: "a", RV: "18"}))
	h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "ns/d", Obj: cm("d", "15", "red")})
	g.Expect(summary(t, next(t, ch))).To(Equal(got{ID: "18", Type: "DELETED", Name: "d", RV: "15"}))
	g.Consistently(ch, 200*time.Millisecond).ShouldNot(Receive())
}

func TestStreamResumesWithLastEventID(t *testing.T) {
	g := NewWithT(t)
	h := newBroker(t, watch.Options{}).NewTestHub("things")
	h.OnAdd(cm("a", "10", "red"), true)
	h.OnAdd(cm("b", "11", "red"), true)
	h.OnAdd(cm("gone", "12", "red"), true)
	h.OnAdd(cm("other", "13", "blue"), true)
	// Changes after the client's last event (id 12).
	h.OnUpdate(cm("b", "11", "red"), cm("b", "14", "red"))
	h.OnDelete(cm("gone", "15", "red"))
	h.OnUpdate(cm("other", "13", "blue"), cm("other", "16", "blue"))
	srv := serve(t, h)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	ch, _ := events(t, ctx, srv.URL+"/things?watch=true&team=red", http.Header{"Last-Event-ID": {"12"}})
	// Only what changed since 12, never a state the client had; the hub
	// saw every deletion since it started, so the resume is complete.
	g.Expect(summary(t, next(t, ch))).To(Equal(got{ID: "14", Type: "ADDED", Name: "b", RV: "14"}))
	g.Expect(summary(t, next(t, ch))).To(Equal(got{ID: "15", Type: "DELETED", Name: "gone", RV: "15"}))
	ev := next(t, ch)
	g.Expect(summary(t, ev)).To(Equal(got{ID: "16", Type: "SYNCED", RV: "16"}))
	var s watch.SyncedData
	g.Expect(json.Unmarshal(ev.Data, &s)).To(Succeed())
	g.Expect(s.Complete).To(BeTrue())
	// a, unchanged and not resent, is still known to the stream: its
	// deletion is sent.
	h.OnDelete(cm("a", "17", "red"))
	g.Expect(summary(t, next(t, ch))).To(Equal(got{ID: "17", Type: "DELETED", Name: "a", RV: "17"}))

	// The query parameter resumes too; the header wins over it.
	ch2, _ := events(t, ctx, srv.URL+"/things?watch=true&team=red&resource_version=1", http.Header{"Last-Event-ID": {"16"}})
	g.Expect(summary(t, next(t, ch2))).To(Equal(got{ID: "17", Type: "DELETED", Name: "a", RV: "17"}))
	g.Expect(next(t, ch2).Type).To(Equal("SYNCED"))
	ch3, _ := events(t, ctx, srv.URL+"/things?watch=true&team=red&resource_version=16", nil)
	g.Expect(summary(t, next(t, ch3))).To(Equal(got{ID: "17", Type: "DELETED", Name: "a", RV: "17"}))

	// A resume point ahead of this server (another replica saw more):
	// SYNCED stays at it and nothing older is sent again.
	ch4, _ := events(t, ctx, srv.URL+"/things?watch=true&team=red", http.Header{"Last-Event-ID": {"30"}})
	g.Expect(summary(t, next(t, ch4))).To(Equal(got{ID: "30", Type: "SYNCED", RV: "30"}))
	h.OnUpdate(cm("b", "14", "red"), cm("b", "25", "red"))
	h.OnUpdate(cm("b", "25", "red"), cm("b", "31", "red"))
	g.Expect(summary(t, next(t, ch4))).To(Equal(got{ID: "31", Type: "MODIFIED", Name: "b", RV: "31"}))

	// Not an id: 400.
	_, resp := events(t, ctx, srv.URL+"/things?watch=true", http.Header{"Last-Event-ID": {"abc"}})
	g.Expect(resp.StatusCode).To(Equal(http.StatusBadRequest))
}

func TestResumeIsIncompleteWhenDeletionsWereForgotten(t *testing.T) {
	g := NewWithT(t)
	h := newBroker(t, watch.Options{}).NewTestHub("things")
	h.MaxDeletions = 1
	h.OnAdd(cm("a", "10", "red"), true)
	h.OnAdd(cm("b", "11", "red"), true)
	h.OnAdd(cm("c", "12", "red"), true)
	srv := serve(t, h)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The hub's horizon is set by its first stream.
	first, _ := events(t, ctx, srv.URL+"/things?watch=true", nil)
	for range 4 {
		next(t, first)
	}
	h.OnDelete(cm("a", "13", "red"))
	h.OnDelete(cm("b", "14", "red"))

	synced := func(last string) watch.SyncedData {
		ch, _ := events(t, ctx, srv.URL+"/things?watch=true", http.Header{"Last-Event-ID": {last}})
		for {
			ev := next(t, ch)
			if ev.Type == "SYNCED" {
				var s watch.SyncedData
				g.Expect(json.Unmarshal(ev.Data, &s)).To(Succeed())
				return s
			}
		}
	}
	// The deletion at 13 was forgotten: a resume from before it is not
	// complete, one from after it is.
	g.Expect(synced("12").Complete).To(BeFalse())
	g.Expect(synced("13").Complete).To(BeTrue())
}

func TestWatchCaps(t *testing.T) {
	g := NewWithT(t)
	callerHeader := "X-Test-Caller"
	b := newBroker(t, watch.Options{MaxPerCaller: 1, MaxTotal: 2, Caller: func(ctx context.Context) string {
		return ctx.Value(callerKey{}).(string)
	}})
	h := b.NewTestHub("things")
	srv := serve(t, h, func(o *server.Options) {
		o.Guard = func(server.Route) echo.MiddlewareFunc {
			return func(next echo.HandlerFunc) echo.HandlerFunc {
				return func(c echo.Context) error {
					r := c.Request()
					c.SetRequest(r.WithContext(context.WithValue(r.Context(), callerKey{}, r.Header.Get(callerHeader))))
					return next(c)
				}
			}
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open := func(caller string) int {
		_, resp := events(t, ctx, srv.URL+"/things?watch=true", http.Header{callerHeader: {caller}})
		return resp.StatusCode
	}
	g.Expect(open("alice")).To(Equal(http.StatusOK))
	g.Eventually(h.Subscribers).Should(Equal(1))
	g.Expect(open("alice")).To(Equal(http.StatusTooManyRequests))
	g.Expect(open("bob")).To(Equal(http.StatusOK))
	g.Eventually(h.Subscribers).Should(Equal(2))
	g.Expect(open("carol")).To(Equal(http.StatusTooManyRequests))
	// Closing a stream frees its slot.
	cancel()
	g.Eventually(h.Subscribers).Should(BeZero())
	g.Eventually(func() int {
		ctx2, cancel2 := context.WithCancel(context.Background())
		defer cancel2()
		_, resp := events(t, ctx2, srv.URL+"/things?watch=true", http.Header{callerHeader: {"carol"}})
		return resp.StatusCode
	}).Should(Equal(http.StatusOK))
}

type callerKey struct{}

func TestSlowClientIsDroppedNotWaitedFor(t *testing.T) {
	g := NewWithT(t)
	h := newBroker(t, watch.Options{Buffer: 2}).NewTestHub("things")
	h.OnAdd(cm("a", "1", "red"), true)
	srv := serve(t, h)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/things?watch=true", nil)
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Eventually(h.Subscribers).Should(Equal(1))
	// The client reads nothing: large objects fill the connection's
	// buffers, the stream's queue fills, and the hub drops it instead
	// of blocking (the informer's handler returns every time).
	big := strings.Repeat("x", 1<<20)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 2; i < 200 && h.Subscribers() > 0; i++ {
			o := cm("a", "", "red")
			o.ResourceVersion = watch.FormatID(uint64(i))
			o.Data = map[string]string{"big": big}
			h.OnUpdate(cm("a", watch.FormatID(uint64(i-1)), "red"), o)
		}
	}()
	g.Eventually(done, 30*time.Second).Should(BeClosed())
	g.Expect(h.Subscribers()).To(BeZero())
}

func TestStreamEndsAfterMaxDurationAndSendsHeartbeats(t *testing.T) {
	g := NewWithT(t)
	h := newBroker(t, watch.Options{Heartbeat: 20 * time.Millisecond, MaxDuration: 300 * time.Millisecond}).NewTestHub("things")
	srv := serve(t, h)
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/things?watch=true", nil)
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	// The body ended (the server closed the stream) cleanly.
	g.Expect(sc.Err()).NotTo(HaveOccurred())
	g.Expect(lines).To(ContainElement("event: SYNCED"))
	g.Expect(lines).To(ContainElement(": heartbeat"))
	g.Expect(lines[len(lines)-2]).To(HavePrefix(": the stream reached its maximum duration"))
}

func TestServerShutdownEndsStreams(t *testing.T) {
	g := NewWithT(t)
	b := newBroker(t, watch.Options{})
	h := b.NewTestHub("things")
	srv := serve(t, h)
	resp, err := http.Get(srv.URL + "/things?watch=true")
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Eventually(h.Subscribers).Should(Equal(1))
	b.Stop()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(body)).To(HaveSuffix(": the server is shutting down; reconnect with Last-Event-ID\n\n"))
}

func TestParseWatch(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want, bad   bool
	}{
		{"absent", "", false, false},
		{"true", "true", true, false},
		{"one", "1", true, false},
		{"false", "false", false, false},
		{"zero", "0", false, false},
		{"other", "yes", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			q := map[string][]string{}
			if tc.value != "" {
				q["watch"] = []string{tc.value}
			}
			w, v := watch.ParseWatch(q)
			g.Expect(w).To(Equal(tc.want))
			g.Expect(v != nil).To(Equal(tc.bad))
		})
	}
}

func TestUnsyncedHubIsUnavailable(t *testing.T) {
	g := NewWithT(t)
	var h *watch.Hub
	srv := serve(t, h)
	resp, err := http.Get(srv.URL + "/things?watch=true")
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusServiceUnavailable))
}

// The HTTP server's read and write timeouts would cut a stream; the
// stream moves its deadlines, so it outlives them and ends only at its
// maximum duration, with the events sent in between delivered at once.
func TestStreamOutlivesTheServerTimeouts(t *testing.T) {
	g := NewWithT(t)
	h := newBroker(t, watch.Options{Heartbeat: 50 * time.Millisecond, MaxDuration: 1500 * time.Millisecond}).NewTestHub("things")
	e, err := server.New(server.Options{RequestTimeout: 100 * time.Millisecond}, api{h})
	g.Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewUnstartedServer(e)
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = 200*time.Millisecond, 200*time.Millisecond
	srv.Start()
	defer srv.Close()

	start := time.Now()
	resp, err := http.Get(srv.URL + "/things?watch=true")
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	ch := make(chan clientwatch.Event, 10)
	errc := make(chan error, 1)
	go func() {
		errc <- clientwatch.Decode(resp.Body, func(ev clientwatch.Event) error { ch <- ev; return nil })
		close(ch)
	}()
	g.Expect(next(t, ch).Type).To(Equal("SYNCED"))
	// Past both server timeouts and the request timeout.
	g.Eventually(func() time.Duration { return time.Since(start) }).Should(BeNumerically(">", 600*time.Millisecond))
	h.OnAdd(cm("late", "5", "red"), false)
	g.Expect(summary(t, next(t, ch))).To(Equal(got{ID: "5", Type: "ADDED", Name: "late", RV: "5"}))
	// The stream then ends cleanly (no error reading it).
	g.Eventually(errc, 10*time.Second).Should(Receive(BeNil()))
	g.Expect(time.Since(start)).To(BeNumerically(">=", 1500*time.Millisecond))
}
