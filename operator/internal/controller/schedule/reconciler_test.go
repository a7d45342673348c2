package schedule_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/controller/schedule"
	"github.com/tidbcloud/ops-server/operator/pkg/backupschedule"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.RunMain(m, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{opsv1.AddToScheme}},
		func(e *testenv.Environment) error { env = e; return nil }))
}

// clock is the injected clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }

func newSchedule(ns, name, cron string) *opsv1.ClusterBackupSchedule {
	return &opsv1.ClusterBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"team": "obs"}},
		Spec: opsv1.ClusterBackupScheduleSpec{
			Schedule:    cron,
			VMCluster:   opsv1.VMClusterReference{Name: "vmc"},
			Destination: opsv1.BackupDestination{URL: "fs:///backups/sched"},
			KeepLast:    ptr.To[int32](2),
		},
	}
}

func backupsOf(g Gomega, ns, schedule string) []opsv1.ClusterBackup {
	list := &opsv1.ClusterBackupList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{opsv1.ScheduleLabel: schedule})).To(Succeed())
	return list.Items
}

func setPhase(g Gomega, b *opsv1.ClusterBackup, phase opsv1.BackupPhase, at time.Time) {
	patch := client.MergeFrom(b.DeepCopy())
	b.Status.Phase = phase
	b.Status.CompletionTime = &metav1.Time{Time: at}
	g.Expect(env.Client.Status().Patch(context.Background(), b, patch)).To(Succeed())
}

// TestScheduleTicksAndRetention drives the reconciler with an injected
// clock through three ticks of a schedule with keepLast 2: one backup per
// tick, named after it, never two for one tick (also when the status
// recording the tick is lost), and the oldest backup deleted — its
// deletionPolicy switched to Delete first — once a third Succeeded.
func TestScheduleTicksAndRetention(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	s := newSchedule(ns, "nightly", "*/5 * * * *")
	g.Expect(env.Client.Create(ctx, s)).To(Succeed())
	clk := &clock{}
	r := &schedule.Reconciler{Client: env.Client, APIReader: env.Client, Now: clk.Now, Options: schedule.Options{FSRoots: []string{"/backups"}}}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "nightly"}}
	reconcileAt := func(at time.Time) reconcile.Result {
		clk.Set(at)
		res, err := r.Reconcile(ctx, req)
		g.Expect(err).NotTo(HaveOccurred())
		return res
	}
	get := func() *opsv1.ClusterBackupSchedule {
		out := &opsv1.ClusterBackupSchedule{}
		g.Expect(env.Client.Get(ctx, req.NamespacedName, out)).To(Succeed())
		return out
	}
	sched, err := backupschedule.Parse(s.Spec.Schedule)
	g.Expect(err).NotTo(HaveOccurred())
	created := get().CreationTimestamp.Time
	tick1 := sched.Next(created)
	tick2, tick3 := sched.Next(tick1), sched.Next(sched.Next(tick1))

	// Before the first tick: nothing, the next tick in status.
	res := reconcileAt(tick1.Add(-time.Second))
	g.Expect(res.RequeueAfter).To(BeNumerically(">", time.Second-time.Millisecond))
	g.Expect(backupsOf(g, ns, "nightly")).To(BeEmpty())
	st := get().Status
	g.Expect(st.NextScheduleTime.Time).To(BeTemporally("==", tick1))
	ready := apimeta.FindStatusCondition(st.Conditions, opsv1.ReadyCondition)
	g.Expect(ready).NotTo(BeNil())
	g.Expect(ready.Reason).To(Equal(schedule.ScheduledReason))

	// The first tick: one backup named after it, owned by the schedule,
	// with its labels.
	reconcileAt(tick1.Add(2 * time.Second))
	bs := backupsOf(g, ns, "nightly")
	g.Expect(bs).To(HaveLen(1))
	b1 := bs[0]
	g.Expect(b1.Name).To(Equal(opsv1.ScheduledBackupName("nightly", metav1.NewTime(tick1))))
	g.Expect(b1.Labels).To(HaveKeyWithValue("team", "obs"))
	g.Expect(b1.Spec.DeletionPolicy).To(Equal(opsv1.DeletionPolicyRetain))
	g.Expect(b1.Spec.Destination.URL).To(Equal("fs:///backups/sched"))
	g.Expect(metav1.IsControlledBy(&b1, get())).To(BeTrue())
	g.Expect(get().Status.LastScheduleTime.Time).To(BeTemporally("==", tick1))

	// The same tick again, and again with the status that recorded it
	// lost (a crash between the create and the status patch): no second
	// backup.
	reconcileAt(tick1.Add(3 * time.Second))
	cur := get()
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Status.LastScheduleTime, cur.Status.LastBackup = nil, ""
	g.Expect(env.Client.Status().Patch(ctx, cur, patch)).To(Succeed())
	reconcileAt(tick1.Add(4 * time.Second))
	g.Expect(backupsOf(g, ns, "nightly")).To(HaveLen(1))
	g.Expect(get().Status.LastScheduleTime.Time).To(BeTemporally("==", tick1))

	// Hold the first backup's deletion so that what retention wrote on it
	// can be read.
	patch = client.MergeFrom(b1.DeepCopy())
	b1.Finalizers = []string{"test.ops/hold"}
	g.Expect(env.Client.Patch(ctx, &b1, patch)).To(Succeed())
	setPhase(g, &b1, opsv1.BackupPhaseSucceeded, tick1.Add(time.Minute))

	reconcileAt(tick2.Add(time.Second))
	g.Expect(backupsOf(g, ns, "nightly")).To(HaveLen(2))
	for _, b := range backupsOf(g, ns, "nightly") {
		if b.Status.Phase == "" {
			setPhase(g, &b, opsv1.BackupPhaseSucceeded, tick2.Add(time.Minute))
		}
	}
	reconcileAt(tick3.Add(time.Second))
	bs = backupsOf(g, ns, "nightly")
	g.Expect(bs).To(HaveLen(3), "the third backup runs: all three are kept")
	g.Expect(get().Status.Retained).To(HaveLen(3))
	for _, b := range bs {
		if b.Status.Phase == "" {
			setPhase(g, &b, opsv1.BackupPhaseSucceeded, tick3.Add(time.Minute))
		}
	}
	reconcileAt(tick3.Add(2 * time.Minute))
	st = get().Status
	name := func(t time.Time) string { return opsv1.ScheduledBackupName("nightly", metav1.NewTime(t)) }
	g.Expect(st.Retained).To(Equal([]string{name(tick3), name(tick2)}))
	g.Expect(st.DeletedTotal).To(BeEquivalentTo(1))
	g.Expect(st.LastDeleted).To(HaveLen(1))
	g.Expect(st.LastDeleted[0].Name).To(Equal(name(tick1)))
	g.Expect(st.LastDeleted[0].Reason).To(ContainSubstring("keepLast=2"))
	g.Expect(st.LastSuccessfulBackup).To(Equal(name(tick3)))
	held := &opsv1.ClusterBackup{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name(tick1)}, held)).To(Succeed())
	g.Expect(held.DeletionTimestamp).NotTo(BeNil(), "deleted")
	g.Expect(held.Spec.DeletionPolicy).To(Equal(opsv1.DeletionPolicyDelete), "through its own deletion path, data included")

	// Again: nothing more is deleted.
	reconcileAt(tick3.Add(3 * time.Minute))
	g.Expect(get().Status.DeletedTotal).To(BeEquivalentTo(1))

	// Suspended: no backup at the next tick.
	cur = get()
	patch = client.MergeFrom(cur.DeepCopy())
	cur.Spec.Suspend = true
	g.Expect(env.Client.Patch(ctx, cur, patch)).To(Succeed())
	reconcileAt(sched.Next(tick3).Add(time.Second))
	g.Expect(backupsOf(g, ns, "nightly")).To(HaveLen(3))
	ready = apimeta.FindStatusCondition(get().Status.Conditions, opsv1.ReadyCondition)
	g.Expect(ready.Reason).To(Equal(schedule.SuspendedReason))
}

// TestInvalidSchedule: what the CRD cannot check — the cron expression,
// the VMCluster's namespace, the fs:// roots — stalls the schedule with
// reason InvalidSpec naming the field; no backup is created.
func TestInvalidSchedule(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	s := newSchedule(ns, "bad", "every night")
	s.Spec.VMCluster.Namespace = "elsewhere"
	s.Spec.Destination.URL = "fs:///etc/x"
	g.Expect(env.Client.Create(ctx, s)).To(Succeed())
	r := &schedule.Reconciler{Client: env.Client, APIReader: env.Client, Now: func() time.Time { return time.Now().Add(time.Hour) },
		Options: schedule.Options{FSRoots: []string{"/backups"}}}
	_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(s)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
	ready := apimeta.FindStatusCondition(s.Status.Conditions, opsv1.ReadyCondition)
	g.Expect(ready).NotTo(BeNil())
	g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(ready.Reason).To(Equal(opsv1.InvalidSpecReason))
	g.Expect(ready.Message).To(ContainSubstring("spec.schedule: is not a valid cron expression"))
	g.Expect(ready.Message).To(ContainSubstring("spec.vmCluster.namespace elsewhere"))
	g.Expect(ready.Message).To(ContainSubstring("spec.destination.url: an fs:// destination must be inside"))
	g.Expect(apimeta.IsStatusConditionTrue(s.Status.Conditions, opsv1.StalledCondition)).To(BeTrue())
	g.Expect(backupsOf(g, ns, "bad")).To(BeEmpty())
}

// TestScheduleCRDRules: the rules the CRD holds, on a real API server.
func TestScheduleCRDRules(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	for _, tc := range []struct {
		name   string
		mutate func(*opsv1.ClusterBackupSchedule)
		want   string
	}{
		{"no retention", func(s *opsv1.ClusterBackupSchedule) { s.Spec.KeepLast = nil }, "spec.keepLast: Invalid value"},
		{"keepLast 0", func(s *opsv1.ClusterBackupSchedule) { s.Spec.KeepLast = ptr.To[int32](0) }, "spec.keepLast"},
		{"keepDays too long", func(s *opsv1.ClusterBackupSchedule) { s.Spec.KeepDays = ptr.To[int32](5000) }, "spec.keepDays"},
		{"empty schedule", func(s *opsv1.ClusterBackupSchedule) { s.Spec.Schedule = "" }, "spec.schedule"},
		{"long name", func(s *opsv1.ClusterBackupSchedule) { s.Name = strings.Repeat("a", 51) }, "at most 50 characters"},
		{"bad url", func(s *opsv1.ClusterBackupSchedule) { s.Spec.Destination.URL = "http://x" }, "spec.destination.url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			s := newSchedule(ns, "rules", "@daily")
			tc.mutate(s)
			err := env.Client.Create(ctx, s)
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring(tc.want))
		})
	}
	g := NewWithT(t)
	s := newSchedule(ns, "immutable", "@daily")
	g.Expect(env.Client.Create(ctx, s)).To(Succeed())
	patch := client.MergeFrom(s.DeepCopy())
	s.Spec.VMCluster.Name = "other"
	err := env.Client.Patch(ctx, s, patch)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("vmCluster is immutable"))
}
