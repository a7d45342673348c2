package restore

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

func mkRestore(strategy opsv1.RestoreStrategy, states ...opsv1.ReplicaRestoreState) *opsv1.ClusterRestore {
	rs := &opsv1.ClusterRestore{ObjectMeta: metav1.ObjectMeta{Namespace: "observability", Name: "r", UID: "0123456789abcdef"}}
	rs.Spec.Strategy = strategy
	for i, s := range states {
		rs.Status.Replicas = append(rs.Status.Replicas, opsv1.ReplicaRestore{Pod: "vmstorage-vmc-" + string(rune('0'+i)), State: s})
	}
	return rs
}

const (
	pending    = opsv1.ReplicaRestorePending
	stopping   = opsv1.ReplicaRestoreStopping
	restoring  = opsv1.ReplicaRestoreRestoring
	starting   = opsv1.ReplicaRestoreStarting
	succeeded  = opsv1.ReplicaRestoreSucceeded
	failed     = opsv1.ReplicaRestoreFailed
	oneAtATime = opsv1.RestoreOneAtATime
	allAtOnce  = opsv1.RestoreAllAtOnce
)

func TestPlan(t *testing.T) {
	for name, tc := range map[string]struct {
		rs   *opsv1.ClusterRestore
		want []step
	}{
		"one at a time: only the first pending moves":      {mkRestore("", pending, pending, pending), []step{stepMarkStopping, stepNone, stepNone}},
		"one at a time: the next waits for the active one": {mkRestore(oneAtATime, succeeded, restoring, pending), []step{stepNone, stepRestore, stepNone}},
		"one at a time: after a success the next starts":   {mkRestore(oneAtATime, succeeded, succeeded, pending), []step{stepNone, stepNone, stepMarkStopping}},
		"all at once: every pending moves":                 {mkRestore(allAtOnce, pending, pending, pending), []step{stepMarkStopping, stepMarkStopping, stepMarkStopping}},
		"all at once: each replica its own step":           {mkRestore(allAtOnce, stopping, restoring, starting), []step{stepStop, stepRestore, stepStart}},
		"a failure skips replicas not yet stopped":         {mkRestore(oneAtATime, failed, pending, pending), []step{stepNone, stepSkip, stepSkip}},
		"a failure lets stopped replicas finish":           {mkRestore(allAtOnce, failed, restoring, starting), []step{stepNone, stepRestore, stepStart}},
		"terminal replicas do nothing":                     {mkRestore(allAtOnce, succeeded, failed), []step{stepNone, stepNone}},
	} {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(plan(tc.rs)).To(Equal(tc.want))
		})
	}
}

func TestRunID(t *testing.T) {
	g := NewWithT(t)
	rs := mkRestore("")
	g.Expect(runID(rs, "vmstorage-vmc-2")).To(Equal("restore-r-01234567-2"))
	rs.Name = "a-very-long-restore-name-that-goes-on-and-on-and-on-and-on-and-on"
	id := runID(rs, "vmstorage-vmc-12")
	g.Expect(len(id)).To(BeNumerically("<=", 63))
	g.Expect(id).To(HaveSuffix("-01234567-12"))
}

func TestPlanReplicaSources(t *testing.T) {
	three := []string{"vmstorage-a-0", "vmstorage-a-1", "vmstorage-a-2"}
	src := []string{"vmstorage-b-0", "vmstorage-b-1", "vmstorage-b-2"}
	for name, tc := range map[string]struct {
		targets, sources []string
		mapping          []opsv1.ReplicaMapping
		want             map[string]string
		err              string
	}{
		"same count: by ordinal, across clusters": {targets: three, sources: src,
			want: map[string]string{"vmstorage-a-0": "vmstorage-b-0", "vmstorage-a-1": "vmstorage-b-1", "vmstorage-a-2": "vmstorage-b-2"}},
		"different count without a mapping is refused": {targets: three[:2], sources: src, err: "the backup has 3 vmstorage replicas and the VMCluster has 2: give replicaMapping"},
		"a mapping covering every target": {targets: three[:2], sources: src,
			mapping: []opsv1.ReplicaMapping{{Replica: 0, FromReplica: 2}, {Replica: 1, FromReplica: 0}},
			want:    map[string]string{"vmstorage-a-0": "vmstorage-b-2", "vmstorage-a-1": "vmstorage-b-0"}},
		"a mapping missing a target": {targets: three, sources: src, mapping: []opsv1.ReplicaMapping{{Replica: 0, FromReplica: 0}},
			err: "replicaMapping must name every vmstorage replica of the VMCluster (0, 1, 2)"},
		"a mapping naming an unknown target": {targets: three, sources: src, mapping: []opsv1.ReplicaMapping{{Replica: 5, FromReplica: 0}},
			err: "replicaMapping names replica 5, which the VMCluster does not have (it has 0, 1, 2)"},
		"a mapping naming an unknown source": {targets: three[:1], sources: src, mapping: []opsv1.ReplicaMapping{{Replica: 0, FromReplica: 7}},
			err: "replicaMapping names fromReplica 7, which the backup does not have (it has 0, 1, 2)"},
		"a target twice": {targets: three[:1], sources: src, mapping: []opsv1.ReplicaMapping{{Replica: 0, FromReplica: 1}, {Replica: 0, FromReplica: 2}},
			err: "replicaMapping names replica 0 twice"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := opsv1.PlanReplicaSources(tc.targets, tc.sources, tc.mapping)
			if tc.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestBackupProblem(t *testing.T) {
	g := NewWithT(t)
	b := &opsv1.ClusterBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "observability", Name: "b"}}
	g.Expect(BackupProblem(b, nil)).To(ContainSubstring("is Pending; only a Succeeded backup can be restored"))
	b.Status.Phase = opsv1.BackupPhasePartiallyFailed
	g.Expect(BackupProblem(b, nil)).To(ContainSubstring("is PartiallyFailed"))
	b.Status.Phase = opsv1.BackupPhaseSucceeded
	b.Status.Replicas = []opsv1.ReplicaBackup{{Pod: "vmstorage-vmc-0", Destination: "fs:///elsewhere/x"}}
	g.Expect(BackupProblem(b, []string{"/backups"})).To(ContainSubstring("must be inside one of the backup fs roots"))
	b.Status.Replicas[0].Destination = "fs:///backups/vmc/b/vmstorage-vmc-0"
	g.Expect(BackupProblem(b, []string{"/backups"})).To(BeEmpty())
}
