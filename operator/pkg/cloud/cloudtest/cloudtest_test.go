package cloudtest_test

import (
	"net/http/httptest"
	"strings"
	"testing"

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
