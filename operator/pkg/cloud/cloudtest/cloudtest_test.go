package cloudtest_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud/cloudtest"
)

func TestFaultsAreTakenInOrder(t *testing.T) {
	g := NewWithT(t)
	var f cloudtest.Fake
	f.Inject("Get", 2, cloudtest.Throttle)
	f.Inject("Get", 1, cloudtest.Permanent)
	var got []cloudtest.Fault
	for range 4 {
		if kind, ok := f.NextFault("Get"); ok {
			got = append(got, kind)
		}
	}
	g.Expect(got).To(Equal([]cloudtest.Fault{cloudtest.Throttle, cloudtest.Throttle, cloudtest.Permanent}))
	_, ok := f.NextFault("Put")
	g.Expect(ok).To(BeFalse(), "faults are per action")
}

func TestCallsAreCountedPerAction(t *testing.T) {
	g := NewWithT(t)
	var f cloudtest.Fake
	f.Called("Get")
	f.Called("Get")
	f.Called("Put")
	g.Expect(f.Calls("Get")).To(Equal(2))
	g.Expect(f.Calls("Put")).To(Equal(1))
	g.Expect(f.Calls("Delete")).To(Equal(0))
}

func TestFailOperations(t *testing.T) {
	g := NewWithT(t)
	var f cloudtest.Fake
	g.Expect(f.OperationFails()).To(BeFalse())
	f.FailOperations(2)
	g.Expect([]bool{f.OperationFails(), f.OperationFails(), f.OperationFails()}).To(Equal([]bool{true, true, false}))
}

func TestNotify(t *testing.T) {
	g := NewWithT(t)
	var f cloudtest.Fake
	f.Notify(cloudtest.NodeGroupEvent{Name: "dropped"}) // no listener: nothing happens
	var events []cloudtest.NodeGroupEvent
	f.OnNodeGroup = func(e cloudtest.NodeGroupEvent) { events = append(events, e) }
	f.Notify(cloudtest.NodeGroupEvent{Cluster: "prod", Name: "ng-a", LabelValue: "ng-a", Version: "1.30", Size: 2})
	f.Notify(cloudtest.NodeGroupEvent{Cluster: "prod", Name: "ng-a", Deleted: true})
	g.Expect(events).To(HaveLen(2))
	g.Expect(events[0].Size).To(Equal(int32(2)))
	g.Expect(events[1].Deleted).To(BeTrue())
}

func TestFaultFor(t *testing.T) {
	g := NewWithT(t)
	g.Expect(cloudtest.FaultFor(false)).To(Equal(cloudtest.Throttle))
	g.Expect(cloudtest.FaultFor(true)).To(Equal(cloudtest.Permanent))
}

func TestInterceptAnswersInTheCloudsWords(t *testing.T) {
	g := NewWithT(t)
	answers := cloudtest.Answers{
		cloudtest.Throttle:  {Status: 429, Code: "Throttled", Message: "slow down"},
		cloudtest.Permanent: {Status: 400, Code: "Invalid", Message: "injected invalid parameter", ForAction: true},
	}
	var f cloudtest.Fake
	_, _, ok := f.Intercept("Get", answers)
	g.Expect(ok).To(BeFalse(), "nothing injected")
	f.Inject("Get", 1, cloudtest.Throttle)
	f.Inject("Get", 1, cloudtest.Permanent)
	kind, a, ok := f.Intercept("Get", answers)
	g.Expect(ok).To(BeTrue())
	g.Expect(kind).To(Equal(cloudtest.Throttle))
	g.Expect(a).To(Equal(cloudtest.Answer{Status: 429, Code: "Throttled", Message: "slow down"}))
	kind, a, ok = f.Intercept("Get", answers)
	g.Expect(ok).To(BeTrue())
	g.Expect(kind).To(Equal(cloudtest.Permanent))
	g.Expect(a.Message).To(Equal("injected invalid parameter for Get"))
}

func TestWireHelpers(t *testing.T) {
	g := NewWithT(t)
	rec := httptest.NewRecorder()
	cloudtest.WriteJSON(rec, 201, "application/json; charset=UTF-8", map[string]int{"a": 1})
	g.Expect(rec.Code).To(Equal(201))
	g.Expect(rec.Header().Get("Content-Type")).To(Equal("application/json; charset=UTF-8"))
	g.Expect(rec.Body.String()).To(MatchJSON(`{"a": 1}`))

	var v struct{ A int }
	ok := cloudtest.ReadJSON(httptest.NewRecorder(), httptest.NewRequest("POST", "/", strings.NewReader(`{"A": 2}`)), &v, func(error) { t.Fatal("refused") })
	g.Expect(ok).To(BeTrue())
	g.Expect(v.A).To(Equal(2))
	var refused error
	big := `{"A": "` + strings.Repeat("x", cloudtest.MaxBody) + `"}`
	ok = cloudtest.ReadJSON(httptest.NewRecorder(), httptest.NewRequest("POST", "/", strings.NewReader(big)), &v, func(err error) { refused = err })
	g.Expect(ok).To(BeFalse())
	g.Expect(refused).To(HaveOccurred(), "a body over MaxBody is refused")
}

func TestNextMinor(t *testing.T) {
	g := NewWithT(t)
	g.Expect(cloudtest.NextMinor("1.29", "1.30")).To(BeTrue())
	g.Expect(cloudtest.NextMinor("1.29.3-aliyun.1", "1.30.1-aliyun.1")).To(BeTrue())
	g.Expect(cloudtest.NextMinor("1.29", "1.29")).To(BeFalse())
	g.Expect(cloudtest.NextMinor("1.29", "1.31")).To(BeFalse())
	g.Expect(cloudtest.NextMinor("1.29", "2.30")).To(BeFalse())
	g.Expect(cloudtest.NextMinor("1.29", "latest")).To(BeFalse())
}

func TestPolls(t *testing.T) {
	g := NewWithT(t)
	var f cloudtest.Fake
	g.Expect(f.Polls()).To(Equal(3), "the default")
	f.PollsToFinish = 1
	g.Expect(f.Polls()).To(Equal(1))
}

func TestNotifyRecordsEvents(t *testing.T) {
	g := NewWithT(t)
	var f cloudtest.Fake
	g.Expect(f.NodeGroupEvents()).To(BeEmpty())
	f.Notify(cloudtest.NodeGroupEvent{Name: "ng-a"})
	f.Notify(cloudtest.NodeGroupEvent{Name: "ng-a", Deleted: true})
	events := f.NodeGroupEvents()
	g.Expect(events).To(Equal([]cloudtest.NodeGroupEvent{{Name: "ng-a"}, {Name: "ng-a", Deleted: true}}))
	events[0].Name = "changed"
	g.Expect(f.NodeGroupEvents()[0].Name).To(Equal("ng-a"), "a copy")
}

func TestSortedKeys(t *testing.T) {
	g := NewWithT(t)
	m := map[string]int{"b": 2, "a": 1, "c": 3}
	g.Expect(cloudtest.SortedKeys(m, nil)).To(Equal([]string{"a", "b", "c"}))
	g.Expect(cloudtest.SortedKeys(m, func(v int) bool { return v != 2 })).To(Equal([]string{"a", "c"}))
	none := cloudtest.SortedKeys(map[string]int{}, nil)
	g.Expect(none).NotTo(BeNil(), "answered as [], not null")
	g.Expect(none).To(BeEmpty())
}

func TestPage(t *testing.T) {
	all := []string{"a", "b", "c"}
	cases := []struct {
		name, token string
		size        int
		want        []string
		next        string
		refused     bool
	}{
		{name: "first page", size: 2, want: []string{"a", "b"}, next: "page-2"},
		{name: "last page", token: "page-2", size: 2, want: []string{"c"}},
		{name: "size at least 1", want: []string{"a"}, next: "page-1"},
		{name: "the whole list", size: 5, want: all},
		{name: "offset without the prefix", token: "1", size: 1, want: []string{"b"}, next: "page-2"},
		{name: "at the end", token: "page-3", size: 1, want: []string{}},
		{name: "past the end", token: "page-4", refused: true},
		{name: "not a number", token: "page-x", refused: true},
		{name: "only the prefix", token: "page-", refused: true},
		{name: "negative", token: "page--1", refused: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			page, next, ok := cloudtest.Page(all, tc.token, "page-", tc.size)
			g.Expect(ok).To(Equal(!tc.refused))
			if tc.refused {
				return
			}
			g.Expect(page).To(Equal(tc.want))
			g.Expect(next).To(Equal(tc.next))
		})
	}
}

func TestHandle(t *testing.T) {
	answers := cloudtest.Answers{
		cloudtest.Throttle:  {Status: 429, Code: "Throttled", Message: "slow down"},
		cloudtest.Permanent: {Status: 400, Code: "Invalid", Message: "injected invalid parameter", ForAction: true},
	}
	errorBody := func(w http.ResponseWriter, status int, code, message string) {
		cloudtest.WriteJSON(w, status, "application/json", map[string]string{"code": code, "message": message})
	}
	wire := &cloudtest.Wire{
		Checks: []cloudtest.Check{
			cloudtest.Credentials("Bearer ", cloudtest.Answer{Status: 401, Code: "Unauthenticated", Message: "no token"}),
			func(r *http.Request, action string) (cloudtest.Answer, bool) {
				return cloudtest.Answer{Status: 400, Code: "NoVersion", Message: "no version for " + action}, r.URL.Query().Get("v") == ""
			},
		},
		Faults: answers,
		Error:  errorBody,
	}
	serve := func(f *cloudtest.Fake, wire *cloudtest.Wire, auth, target string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest("GET", target, nil)
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		f.Handle(rec, r, "Get", wire, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) })
		return rec
	}

	t.Run("refusals in order, then the handler", func(t *testing.T) {
		g := NewWithT(t)
		var f cloudtest.Fake
		rec := serve(&f, wire, "", "/")
		g.Expect(rec.Code).To(Equal(401), "credentials first")
		g.Expect(rec.Body.String()).To(MatchJSON(`{"code": "Unauthenticated", "message": "no token"}`))
		rec = serve(&f, wire, "Bearer x", "/")
		g.Expect(rec.Code).To(Equal(400))
		g.Expect(rec.Body.String()).To(MatchJSON(`{"code": "NoVersion", "message": "no version for Get"}`))
		g.Expect(serve(&f, wire, "Bearer x", "/?v=1").Code).To(Equal(204))
		g.Expect(f.Calls("Get")).To(Equal(3), "refused calls count too")
	})

	t.Run("injected faults", func(t *testing.T) {
		g := NewWithT(t)
		var f cloudtest.Fake
		f.Inject("Get", 1, cloudtest.Throttle)
		rec := serve(&f, wire, "Bearer x", "/?v=1")
		g.Expect(rec.Code).To(Equal(429))
		g.Expect(rec.Header().Get("Retry-After")).To(BeEmpty(), "no wait set")
		f.SetRetryAfter(7 * time.Second)
		f.Inject("Get", 1, cloudtest.Throttle)
		g.Expect(serve(&f, wire, "Bearer x", "/?v=1").Header().Get("Retry-After")).To(Equal("7"))
		f.Inject("Get", 1, cloudtest.Permanent)
		rec = serve(&f, wire, "Bearer x", "/?v=1")
		g.Expect(rec.Code).To(Equal(400))
		g.Expect(rec.Body.String()).To(MatchJSON(`{"code": "Invalid", "message": "injected invalid parameter for Get"}`))
		g.Expect(serve(&f, wire, "Bearer x", "/?v=1").Code).To(Equal(204))
	})

	t.Run("the cloud's own throttling headers", func(t *testing.T) {
		g := NewWithT(t)
		var f cloudtest.Fake
		own := *wire
		own.Throttled = func(h http.Header, wait time.Duration) {
			h.Set("X-Wait-Ms", strconv.FormatInt(wait.Milliseconds(), 10))
		}
		f.SetRetryAfter(1500 * time.Millisecond)
		f.Inject("Get", 1, cloudtest.Throttle)
		rec := serve(&f, &own, "Bearer x", "/?v=1")
		g.Expect(rec.Header().Get("X-Wait-Ms")).To(Equal("1500"))
		g.Expect(rec.Header().Get("Retry-After")).To(BeEmpty())
	})
}

func TestInCluster(t *testing.T) {
	g := NewWithT(t)
	clusters := map[string]*string{"prod": new(string)}
	find := func(w http.ResponseWriter, r *http.Request) *string {
		c := clusters[r.URL.Query().Get("cluster")]
		if c == nil {
			w.WriteHeader(404)
		}
		return c
	}
	var got *string
	h := cloudtest.InCluster(find, func(w http.ResponseWriter, _ *http.Request, c *string) { got = c })
	rec := httptest.NewRecorder()
	h(rec, httptest.NewRequest("GET", "/?cluster=prod", nil))
	g.Expect(got).To(BeIdenticalTo(clusters["prod"]))
	rec = httptest.NewRecorder()
	got = nil
	h(rec, httptest.NewRequest("GET", "/?cluster=other", nil))
	g.Expect(rec.Code).To(Equal(404))
	g.Expect(got).To(BeNil(), "not called")
}

func TestEndpoint(t *testing.T) {
	g := NewWithT(t)
	for _, useTLS := range []bool{false, true} {
		var f cloudtest.Fake
		f.Listen(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }), useTLS)
		cloudtest.CloseAtEnd(t, &f)
		g.Expect(f.URL).To(HavePrefix(map[bool]string{false: "http://127.0.0.1:", true: "https://127.0.0.1:"}[useTLS]))
		resp, err := f.Client().Get(f.URL)
		g.Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(204))
	}
}
