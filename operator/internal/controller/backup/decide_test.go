package backup

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

var t0 = time.Date(2026, 5, 6, 2, 0, 0, 0, time.UTC)

func mkBackup(mut func(*opsv1.ClusterBackup)) *opsv1.ClusterBackup {
	b := &opsv1.ClusterBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "observability", Name: "nightly", UID: "uid-1", CreationTimestamp: metav1.NewTime(t0)},
		Spec: opsv1.ClusterBackupSpec{
			VMCluster:   opsv1.VMClusterReference{Name: "vmc"},
			Destination: opsv1.BackupDestination{URL: "s3://bucket/prefix"},
		},
	}
	if mut != nil {
		mut(b)
	}
	return b
}

func pod(name, uid string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid)}, Spec: corev1.PodSpec{NodeName: "node-" + name}}
}

// readyWorld has n ready vmstorage pods vmstorage-vmc-<i> with UID u<i>.
func readyWorld(n int) *world {
	w := &world{vmcluster: true, ready: true, pods: map[string]*corev1.Pod{}}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("vmstorage-vmc-%d", i)
		w.pods[name] = pod(name, fmt.Sprintf("u%d", i))
	}
	return w
}

// planned gives the backup n replicas in the given states.
func planned(states ...opsv1.ReplicaBackupState) func(*opsv1.ClusterBackup) {
	return func(b *opsv1.ClusterBackup) {
		b.Status.Phase = opsv1.BackupPhasePending
		for i, s := range states {
			r := opsv1.ReplicaBackup{Pod: fmt.Sprintf("vmstorage-vmc-%d", i), PodUID: fmt.Sprintf("u%d", i), State: s}
			switch s {
			case opsv1.ReplicaStateUploading, opsv1.ReplicaStateSucceeded:
				r.SnapshotName, r.JobName = "20260506020000-1", "job"
			}
			b.Status.Replicas = append(b.Status.Replicas, r)
		}
	}
}

func snapped(i int) func(*opsv1.ClusterBackup) {
	return func(b *opsv1.ClusterBackup) { b.Status.Replicas[i].SnapshotName = "20260506020000-1" }
}

func all(muts ...func(*opsv1.ClusterBackup)) func(*opsv1.ClusterBackup) {
	return func(b *opsv1.ClusterBackup) {
		for _, m := range muts {
			m(b)
		}
	}
}

const (
	pending = opsv1.ReplicaStatePending
	snap    = opsv1.ReplicaStateSnapshotting
	upl     = opsv1.ReplicaStateUploading
	ok      = opsv1.ReplicaStateSucceeded
	failed  = opsv1.ReplicaStateFailed
)

func TestDecide(t *testing.T) {
	notReady := &world{vmcluster: true, ready: false, readyMsg: "VMCluster observability/vmc is expanding", pods: readyWorld(2).pods}
	gone := &world{pods: map[string]*corev1.Pod{}}
	cases := []struct {
		name     string
		b        *opsv1.ClusterBackup
		w        *world
		now      time.Time
		want     actionKind
		replicas []int
		reason   string
	}{
		{name: "terminal does nothing", b: mkBackup(func(b *opsv1.ClusterBackup) { b.Status.Phase = opsv1.BackupPhaseSucceeded }), w: readyWorld(2), want: actNone},
		{name: "missing VMCluster fails", b: mkBackup(nil), w: gone, want: actFail, reason: opsv1.VMClusterNotFoundReason},
		{name: "missing VMCluster with planned replicas fails", b: mkBackup(planned(pending, pending)), w: gone, want: actFail, reason: opsv1.VMClusterNotFoundReason},
		{name: "new backup plans", b: mkBackup(nil), w: readyWorld(3), want: actPlan},
		{name: "no pods fails", b: mkBackup(nil), w: readyWorld(0), want: actFail, reason: opsv1.FailedReason},
		{name: "not operational waits", b: mkBackup(nil), w: notReady, now: t0.Add(time.Minute), want: actWait, reason: opsv1.BlockedReason},
		{name: "not operational past the start timeout fails", b: mkBackup(nil), w: notReady, now: t0.Add(time.Hour), want: actFail, reason: opsv1.FailedReason},
		{name: "planned but not operational waits", b: mkBackup(planned(pending, pending)), w: notReady, now: t0, want: actWait},
		{name: "an active VMClusterOperation of the VMCluster holds a backup that has not started", b: mkBackup(planned(pending, pending)), w: func() *world { w := readyWorld(2); w.operation = "observability/scale"; return w }(), want: actWait, reason: opsv1.WaitingForOperationReason},
		{name: "an active VMClusterOperation does not hold a started backup", b: mkBackup(planned(snap, snap)), w: func() *world { w := readyWorld(2); w.operation = "observability/scale"; return w }(), want: actSnapshot, replicas: []int{0, 1}},
		{name: "planned marks all snapshotting", b: mkBackup(planned(pending, pending)), w: readyWorld(2), want: actMarkSnapshot, replicas: []int{0, 1}},
		{name: "an older backup taking its snapshots goes first", b: mkBackup(planned(pending, pending)), w: func() *world { w := readyWorld(2); w.waitFor = "observability/older"; return w }(), want: actWait, reason: opsv1.BlockedReason},
		{name: "an older backup still snapshotting does not hold a started one", b: mkBackup(planned(snap, snap)), w: func() *world { w := readyWorld(2); w.waitFor = "observability/older"; return w }(), want: actSnapshot, replicas: []int{0, 1}},
		{name: "pending pod recreated is refreshed, not lost", b: mkBackup(planned(pending)), w: &world{vmcluster: true, ready: true, pods: map[string]*corev1.Pod{"vmstorage-vmc-0": pod("vmstorage-vmc-0", "new")}}, want: actMarkSnapshot, replicas: []int{0}},
		{name: "snapshots every replica without one at once", b: mkBackup(planned(snap, snap, snap)), w: readyWorld(3), want: actSnapshot, replicas: []int{0, 1, 2}},
		{name: "a recorded snapshot is never taken again", b: mkBackup(all(planned(snap, snap), snapped(0))), w: readyWorld(2), want: actSnapshot, replicas: []int{1}},
		{name: "all snapshotted: uploads start, all at once", b: mkBackup(all(planned(snap, snap), snapped(0), snapped(1))), w: readyWorld(2), want: actMarkUpload, replicas: []int{0, 1}},
		{name: "concurrency limits the uploads", b: mkBackup(all(planned(snap, snap, snap), snapped(0), snapped(1), snapped(2), func(b *opsv1.ClusterBackup) { b.Spec.Concurrency = ptr.To[int32](2) })), w: readyWorld(3), want: actMarkUpload, replicas: []int{0, 1}},
		{name: "no free slot polls", b: mkBackup(all(planned(upl, upl, snap), snapped(2), func(b *opsv1.ClusterBackup) { b.Spec.Concurrency = ptr.To[int32](2) })), w: readyWorld(3), want: actPoll, replicas: []int{0, 1}},
		{name: "a freed slot is filled", b: mkBackup(all(planned(ok, upl, snap), snapped(2), func(b *opsv1.ClusterBackup) { b.Spec.Concurrency = ptr.To[int32](2) })), w: readyWorld(3), want: actMarkUpload, replicas: []int{2}},
		{name: "uploads are polled even while the VMCluster is not ready", b: mkBackup(planned(upl, ok)), w: notReady, want: actPoll, replicas: []int{0}},
		{name: "uploading pod recreated is lost", b: mkBackup(planned(upl, upl)), w: &world{vmcluster: true, ready: true, pods: map[string]*corev1.Pod{"vmstorage-vmc-0": pod("vmstorage-vmc-0", "new"), "vmstorage-vmc-1": pod("vmstorage-vmc-1", "u1")}}, want: actLost, replicas: []int{0}},
		{name: "snapshotting pod gone is lost", b: mkBackup(planned(ok, snap)), w: &world{vmcluster: true, ready: true, pods: readyWorld(1).pods}, want: actLost, replicas: []int{1}},
		{name: "VMCluster deleted mid-backup: pods gone, replicas lost", b: mkBackup(planned(upl, ok)), w: gone, want: actLost, replicas: []int{0}},
		{name: "terminal replicas are never lost", b: mkBackup(planned(ok, failed)), w: gone, want: actFinish},
		{name: "all finished", b: mkBackup(planned(ok, failed, ok)), w: readyWorld(3), want: actFinish},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			now := tc.now
			if now.IsZero() {
				now = t0
			}
			got := decide(tc.b, tc.w, now, 30*time.Minute)
			g.Expect(got.kind).To(Equal(tc.want), "msg: %s", got.msg)
			g.Expect(got.replicas).To(Equal(tc.replicas))
			if tc.reason != "" {
				g.Expect(got.reason).To(Equal(tc.reason))
				g.Expect(got.msg).NotTo(BeEmpty())
			}
		})
	}
}

// FuzzDecide builds arbitrary replica states and observations and checks
// that decide always picks a legal action: nothing on a terminal backup;
// never a second snapshot or upload for a replica; uploads within the
// concurrency limit; nothing new while the VMCluster is not ready; finish
// only when every replica finished.
func FuzzDecide(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3}, true, true, uint8(0), uint8(0), int64(0))
	f.Add([]byte{2, 2, 1, 0, 4, 0x82}, true, false, uint8(2), uint8(3), int64(7200))
	f.Add([]byte{1, 0x41, 0x21, 3}, false, false, uint8(1), uint8(6), int64(-10))
	states := []opsv1.ReplicaBackupState{pending, snap, upl, ok, failed, ""}
	phases := []opsv1.BackupPhase{"", opsv1.BackupPhasePending, opsv1.BackupPhaseRunning, opsv1.BackupPhaseSucceeded, opsv1.BackupPhasePartiallyFailed, opsv1.BackupPhaseFailed}
	f.Fuzz(func(t *testing.T, reps []byte, vmcluster, ready bool, conc, phase uint8, age int64) {
		busy := conc&0x80 != 0
		if len(reps) > 40 {
			reps = reps[:40]
		}
		b := mkBackup(func(b *opsv1.ClusterBackup) {
			if conc%5 != 0 {
				b.Spec.Concurrency = ptr.To(int32(conc % 5))
			}
			b.Status.Phase = phases[int(phase)%len(phases)]
		})
		w := &world{vmcluster: vmcluster, ready: ready, pods: map[string]*corev1.Pod{}}
		if busy {
			w.waitFor = "observability/older"
		}
		for i, x := range reps {
			name := fmt.Sprintf("vmstorage-vmc-%d", i)
			r := opsv1.ReplicaBackup{Pod: name, PodUID: fmt.Sprintf("u%d", i), State: states[int(x&0x0f)%len(states)]}
			if x&0x10 != 0 {
				r.SnapshotName = "20260506020000-1"
			}
			if x&0x20 != 0 {
				r.JobName = "job"
			}
			b.Status.Replicas = append(b.Status.Replicas, r)
			switch {
			case x&0x40 != 0: // pod gone
			case x&0x80 != 0:
				w.pods[name] = pod(name, "other")
			default:
				w.pods[name] = pod(name, r.PodUID)
			}
		}
		a := decide(b, w, t0.Add(time.Duration(age)*time.Second), 30*time.Minute)
		if b.Status.Phase.IsTerminal() && a.kind != actNone {
			t.Fatalf("terminal phase %s got %s", b.Status.Phase, a.kind)
		}
		for _, i := range a.replicas {
			if i < 0 || i >= len(b.Status.Replicas) {
				t.Fatalf("%s: replica index %d out of range", a.kind, i)
			}
			if b.Status.Replicas[i].State.IsTerminal() {
				t.Fatalf("%s on finished replica %d (%s)", a.kind, i, b.Status.Replicas[i].State)
			}
		}
		uploading := 0
		for _, r := range b.Status.Replicas {
			if r.State == upl {
				uploading++
			}
		}
		switch a.kind {
		case actSnapshot:
			for _, i := range a.replicas {
				if r := b.Status.Replicas[i]; r.SnapshotName != "" || r.State != snap {
					t.Fatalf("snapshots replica %d again (state %s, snapshot %q)", i, r.State, r.SnapshotName)
				}
			}
		case actMarkUpload:
			if uploading+len(a.replicas) > concurrency(b) {
				t.Fatalf("starts %d uploads with %d running, limit %d", len(a.replicas), uploading, concurrency(b))
			}
			for _, i := range a.replicas {
				if r := b.Status.Replicas[i]; r.SnapshotName == "" || r.State != snap {
					t.Fatalf("uploads replica %d in state %s without a snapshot, or twice", i, r.State)
				}
			}
		case actPoll:
			for _, i := range a.replicas {
				if b.Status.Replicas[i].State != upl {
					t.Fatalf("polls replica %d in state %s", i, b.Status.Replicas[i].State)
				}
			}
		case actMarkSnapshot, actPlan:
			if !ready {
				t.Fatalf("%s while the VMCluster is not ready", a.kind)
			}
			if a.kind == actMarkSnapshot && busy && !anyStarted(b.Status.Replicas) {
				t.Fatalf("starts snapshots while an older backup takes its own")
			}
		case actFinish:
			for _, r := range b.Status.Replicas {
				if !r.State.IsTerminal() {
					t.Fatalf("finishes with replica %s %s", r.Pod, r.State)
				}
			}
		case actFail:
			if a.msg == "" || a.reason == "" {
				t.Fatalf("fails without a reason")
			}
			if anyStarted(b.Status.Replicas) {
				t.Fatalf("fails a started backup as a whole")
			}
		}
	})
}
