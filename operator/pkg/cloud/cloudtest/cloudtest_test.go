package cloudtest_test

import (
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
