package upgrade_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/manager"
	"github.com/tidbcloud/ops-server/operator/pkg/maintenancewindows"
)

// fakeClock is the clock of the operator and of the simulated cloud in a
// test that moves time by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// startedAt lists the operations the simulated cloud started, by "Op
// target", with the (fake) time each started.
func startedAt(g Gomega, f *cloudFixture) map[string][]time.Time {
	st, err := f.provider.State(context.Background(), f.ref)
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string][]time.Time{}
	for _, op := range st.Operations {
		out[op.Kind+" "+op.Target] = append(out[op.Kind+" "+op.Target], op.Started.UTC())
	}
	return out
}

func TestMaintenanceWindow(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		g.Expect(err).NotTo(HaveOccurred())
		return v
	}
	// Saturday 02:00-03:00 UTC; 2026-12-05 and 2026-12-12 are Saturdays.
	// Every cloud operation takes 30 minutes of the fake clock.
	clock := &fakeClock{t: at("2026-12-04T23:00:00Z")}
	f := newCloud(t, "window", 30*time.Minute, seed("ng-a"))
	f.provider.Now = clock.Now
	startOperator(t, ns, f, func(o *manager.Options) {
		o.Upgrade.Now = clock.Now
		o.Upgrade.WindowRecheckInterval = 100 * time.Millisecond
	})

	op := newOp(ns, "window", f, func(s *opsv1.ClusterUpgradeOperationSpec) {
		s.MaintenanceWindow = &opsv1.MaintenanceWindow{Days: []opsv1.Weekday{"Saturday"}, Start: "02:00", Duration: "1h", TimeZone: "UTC"}
		s.NodeGroupUpgrades = []opsv1.NodeGroupUpgrade{{NodeGroupName: "ng-a", Strategy: opsv1.StrategyInPlace}}
	})
	g.Expect(env.Client.Create(ctx, op)).To(Succeed())

	// Created outside its window: no cloud step, and status says when.
	g.Eventually(func(g Gomega) {
		cur := get(g, op)
		g.Expect(cur.Status.Phase).To(Equal(opsv1.UpgradePhaseScheduled), describe(cur))
		g.Expect(cur.Status.NextWindowStart).NotTo(BeNil())
		g.Expect(cur.Status.NextWindowStart.Time.Equal(at("2026-12-05T02:00:00Z"))).To(BeTrue(), "nextWindowStart %s", cur.Status.NextWindowStart)
		g.Expect(cur.Status.MaintenanceWindow).NotTo(BeNil())
		g.Expect(cur.Status.MaintenanceWindow.Source).To(Equal("spec"))
		c := apimeta.FindStatusCondition(cur.Status.Conditions, opsv1.ReconcilingCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(opsv1.OutsideMaintenanceWindowReason))
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(startedAt(g, f)).To(BeEmpty())
	}, time.Second, 100*time.Millisecond).Should(Succeed())

	// 20 minutes before the window closes: the control plane starts.
	clock.Set(at("2026-12-05T02:40:00Z"))
	g.Eventually(func(g Gomega) {
		g.Expect(startedAt(g, f)).To(Equal(map[string][]time.Time{
			"StartControlPlaneUpgrade cluster/window": {at("2026-12-05T02:40:00Z")},
		}))
		cur := get(g, op)
		g.Expect(cur.Status.Phase).To(Equal(opsv1.UpgradePhaseRunning), describe(cur))
		g.Expect(cur.Status.NextWindowStart).To(BeNil())
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())

	// The window closed while the control plane upgrade ran: it finishes
	// (due 03:10), the node group waits for the next Saturday.
	clock.Set(at("2026-12-05T03:20:00Z"))
	g.Eventually(func(g Gomega) {
		cur := get(g, op)
		g.Expect(cur.Status.Step(opsv1.ControlPlaneStepID).Phase).To(Equal(opsv1.StepPhaseSucceeded), describe(cur))
		g.Expect(cur.Status.Phase).To(Equal(opsv1.UpgradePhaseRunning))
		g.Expect(cur.Status.NextWindowStart).NotTo(BeNil())
		g.Expect(cur.Status.NextWindowStart.Time.Equal(at("2026-12-12T02:00:00Z"))).To(BeTrue(), "nextWindowStart %s", cur.Status.NextWindowStart)
		g.Expect(apimeta.FindStatusCondition(cur.Status.Conditions, opsv1.ReconcilingCondition).Reason).To(Equal(opsv1.OutsideMaintenanceWindowReason))
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(startedAt(g, f)).To(HaveLen(1))
	}, time.Second, 100*time.Millisecond).Should(Succeed())

	// The next window: the node group starts in it and finishes.
	clock.Set(at("2026-12-12T02:05:00Z"))
	g.Eventually(func(g Gomega) {
		g.Expect(startedAt(g, f)).To(HaveKey("StartNodeGroupUpgrade nodegroup/ng-a"))
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
	clock.Set(at("2026-12-12T02:40:00Z"))
	waitPhase(t, op, opsv1.UpgradePhaseSucceeded, 30*time.Second)
	g.Expect(startedAt(g, f)).To(Equal(map[string][]time.Time{
		"StartControlPlaneUpgrade cluster/window": {at("2026-12-05T02:40:00Z")},
		"StartNodeGroupUpgrade nodegroup/ng-a":    {at("2026-12-12T02:05:00Z")},
	}))
}

func TestMaintenanceWindowDefaultAndUnknownTimeZone(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	clock := &fakeClock{t: time.Date(2026, 12, 4, 23, 0, 0, 0, time.UTC)} // a Friday
	f := newCloud(t, "defaultwin", 0, seed())
	f.provider.Now = clock.Now
	defaults, err := maintenancewindows.Parse([]byte(`
windows:
- cloudProvider: mock
  window: {days: [Saturday], start: "02:00", duration: 1h}
- cloudProvider: mock
  region: local
  k8sClusterName: defaultwin
  window: {days: [Sunday], start: "03:00", duration: 2h, timeZone: Europe/Berlin}
`))
	g.Expect(err).NotTo(HaveOccurred())
	startOperator(t, ns, f, func(o *manager.Options) {
		o.Upgrade.Now = clock.Now
		o.Upgrade.WindowRecheckInterval = 100 * time.Millisecond
		o.Upgrade.MaintenanceWindows = defaults
	})

	// No window in the spec: the cluster's default applies.
	op := newOp(ns, "defaultwin", f, nil)
	g.Expect(env.Client.Create(ctx, op)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur := get(g, op)
		g.Expect(cur.Status.MaintenanceWindow).NotTo(BeNil(), describe(cur))
		g.Expect(cur.Status.MaintenanceWindow.Days).To(Equal([]opsv1.Weekday{"Sunday"}))
		g.Expect(cur.Status.MaintenanceWindow.Source).To(ContainSubstring("k8sClusterName=defaultwin"))
		g.Expect(cur.Status.NextWindowStart).NotTo(BeNil())
		// Sunday 03:00 in Berlin (UTC+1).
		g.Expect(cur.Status.NextWindowStart.Time.Equal(time.Date(2026, 12, 6, 2, 0, 0, 0, time.UTC))).To(BeTrue(), "%s", cur.Status.NextWindowStart)
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
	g.Expect(startedAt(g, f)).To(BeEmpty())

	// A time zone the CRD lets through but nobody knows: the operation
	// fails before any change, with the REST API's words.
	bad := newOp(ns, "badzone", f, func(s *opsv1.ClusterUpgradeOperationSpec) {
		s.MaintenanceWindow = &opsv1.MaintenanceWindow{Days: []opsv1.Weekday{"Saturday"}, Start: "02:00", Duration: "1h", TimeZone: "Mars/Olympus_Mons"}
	})
	g.Expect(env.Client.Create(ctx, bad)).To(Succeed())
	done := waitPhase(t, bad, opsv1.UpgradePhaseFailed, 30*time.Second)
	ready := apimeta.FindStatusCondition(done.Status.Conditions, opsv1.ReadyCondition)
	g.Expect(ready.Reason).To(Equal(opsv1.InvalidSpecReason))
	g.Expect(ready.Message).To(ContainSubstring(`maintenanceWindow.timeZone: unknown time zone "Mars/Olympus_Mons"`))
	g.Expect(startedAt(g, f)).To(BeEmpty())
}

func TestMaintenanceWindowCEL(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	f := &cloudFixture{}
	f.ref.Name, f.ref.Region = "cel", "local"
	cases := []struct {
		name  string
		w     opsv1.MaintenanceWindow
		words string
	}{
		{"duration over a week", opsv1.MaintenanceWindow{Days: []opsv1.Weekday{"Monday"}, Start: "02:00", Duration: "169h"}, "maintenanceWindow.duration must be between 1m and 168h (7 days)"},
		{"start", opsv1.MaintenanceWindow{Days: []opsv1.Weekday{"Monday"}, Start: "25:00", Duration: "1h"}, "spec.maintenanceWindow.start"},
		{"day", opsv1.MaintenanceWindow{Days: []opsv1.Weekday{"Mon"}, Start: "02:00", Duration: "1h"}, "spec.maintenanceWindow.days[0]"},
		{"no days", opsv1.MaintenanceWindow{Start: "02:00", Duration: "1h"}, "spec.maintenanceWindow.days"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			op := newOp(ns, "cel", f, func(s *opsv1.ClusterUpgradeOperationSpec) { s.MaintenanceWindow = &tc.w })
			err := env.Client.Create(ctx, op)
			NewWithT(t).Expect(err).To(HaveOccurred())
			NewWithT(t).Expect(err.Error()).To(ContainSubstring(tc.words))
		})
	}
}

func TestApprovalBeforeNodeGroups(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	f := newCloud(t, "approve", 0, seed("ng-a"))
	first := startOperator(t, ns, f, nil)

	op := newOp(ns, "approve", f, func(s *opsv1.ClusterUpgradeOperationSpec) {
		s.Approvals = []opsv1.ApprovalGate{opsv1.GateBeforeNodeGroups}
		s.ClusterAddons = []opsv1.ClusterAddon{{Name: "coredns", Version: "v1.11.3"}}
		s.NodeGroupUpgrades = []opsv1.NodeGroupUpgrade{{NodeGroupName: "ng-a", Strategy: opsv1.StrategyInPlace}}
	})
	g.Expect(env.Client.Create(ctx, op)).To(Succeed())
	waiting := waitPhase(t, op, opsv1.UpgradePhaseAwaitingApproval, time.Minute)
	g.Expect(waiting.Status.AwaitingApproval).NotTo(BeNil())
	g.Expect(waiting.Status.AwaitingApproval.Gate).To(Equal("BeforeNodeGroups"))
	g.Expect(waiting.Status.AwaitingApproval.NextStep).To(Equal("nodegroup/ng-a/UpgradeNodeGroup"))
	g.Expect(waiting.Status.AwaitingApproval.Done).To(Equal([]string{"controlplane", "addon/coredns"}))
	g.Expect(waiting.Status.AwaitingApproval.Since).NotTo(BeNil())
	g.Expect(waiting.Status.ObservedGeneration).To(Equal(waiting.Generation))
	ready := apimeta.FindStatusCondition(waiting.Status.Conditions, opsv1.ReadyCondition)
	g.Expect(ready.Reason).To(Equal(opsv1.AwaitingApprovalReason))
	g.Expect(mutationCounts(f)).To(Equal(map[string]int{
		"StartControlPlaneUpgrade cluster/approve": 1,
		"StartAddonUpdate addon/coredns":           1,
	}))

	// An operator restart does not pass the gate.
	first.stop()
	startOperator(t, ns, f, nil)
	g.Consistently(func(g Gomega) {
		cur := get(g, op)
		g.Expect(cur.Status.Phase).To(Equal(opsv1.UpgradePhaseAwaitingApproval), describe(cur))
		g.Expect(cur.Status.AwaitingApproval.Since.Equal(waiting.Status.AwaitingApproval.Since)).To(BeTrue())
		g.Expect(mutationCounts(f)).NotTo(HaveKey("StartNodeGroupUpgrade nodegroup/ng-a"))
	}, 2*time.Second, 100*time.Millisecond).Should(Succeed())

	// GitOps approval: the gate id added to spec.approved.
	patch := client.MergeFrom(get(g, op))
	cur := get(g, op)
	cur.Spec.Approved = []string{"BeforeNodeGroups"}
	g.Expect(env.Client.Patch(ctx, cur, patch)).To(Succeed())
	done := waitPhase(t, op, opsv1.UpgradePhaseSucceeded, time.Minute)
	g.Expect(done.Status.AwaitingApproval).To(BeNil())
	g.Expect(mutationCounts(f)).To(Equal(map[string]int{
		"StartControlPlaneUpgrade cluster/approve": 1,
		"StartAddonUpdate addon/coredns":           1,
		"StartNodeGroupUpgrade nodegroup/ng-a":     1,
	}))

	// An approval cannot be withdrawn.
	withdraw := get(g, op)
	before := withdraw.DeepCopy()
	withdraw.Spec.Approved = nil
	err := env.Client.Patch(ctx, withdraw, client.MergeFrom(before))
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("an approval cannot be withdrawn"))
}

// TestApprovalBeforeDrainApprovedAhead: a gate approved ahead of time
// (BeforeEachNodeGroup/dg-old in the spec at creation) does not stop the
// operation; BeforeDrain stops it after the cordon, with the new node group
// created and nothing of the old one drained or deleted, until approved.
func TestApprovalBeforeDrainApprovedAhead(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	f := newCloud(t, "drain-gate", 0, seed("dg-old"))
	startOperator(t, ns, f, nil)

	op := newOp(ns, "drain-gate", f, func(s *opsv1.ClusterUpgradeOperationSpec) {
		s.Approvals = []opsv1.ApprovalGate{opsv1.GateBeforeEachNodeGroup, opsv1.GateBeforeDrain}
		s.Approved = []string{"BeforeEachNodeGroup/dg-old"}
		s.NodeGroupUpgrades = []opsv1.NodeGroupUpgrade{{NodeGroupName: "dg-old", Strategy: opsv1.StrategyBlueGreen, NewNodeGroupName: "dg-new"}}
	})
	g.Expect(env.Client.Create(ctx, op)).To(Succeed())
	waiting := waitPhase(t, op, opsv1.UpgradePhaseAwaitingApproval, time.Minute)
	g.Expect(waiting.Status.AwaitingApproval.Gate).To(Equal("BeforeDrain/dg-old"))
	g.Expect(waiting.Status.AwaitingApproval.NextStep).To(Equal("nodegroup/dg-old/DrainNodes"))
	g.Expect(waiting.Status.AwaitingApproval.Done).To(Equal([]string{"controlplane",
		"nodegroup/dg-old/CreateNodeGroup", "nodegroup/dg-old/WaitNodesReady", "nodegroup/dg-old/CordonNodes"}))
	g.Expect(mutationCounts(f)).To(Equal(map[string]int{
		"StartControlPlaneUpgrade cluster/drain-gate": 1,
		"StartCreateNodeGroup nodegroup/dg-new":       1,
	}))
	g.Expect(nodesOf(g, "dg-old")).To(HaveLen(2), "the old node group is still there")

	cur := get(g, op)
	approved := cur.DeepCopy()
	approved.Spec.Approved = append(approved.Spec.Approved, "BeforeDrain/dg-old")
	g.Expect(env.Client.Patch(ctx, approved, client.MergeFrom(cur))).To(Succeed())
	waitPhase(t, op, opsv1.UpgradePhaseSucceeded, time.Minute)
	g.Expect(mutationCounts(f)).To(HaveKeyWithValue("StartDeleteNodeGroup nodegroup/dg-old", 1))
}
