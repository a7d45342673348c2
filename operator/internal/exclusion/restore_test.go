package exclusion

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

var vmc = types.NamespacedName{Namespace: "observability", Name: "vmc"}

func created(sec int) metav1.Time {
	return metav1.NewTime(time.Date(2026, 5, 6, 0, 0, sec, 0, time.UTC))
}

func aRestore(name string, sec int, claimed bool, states ...opsv1.ReplicaRestoreState) *opsv1.ClusterRestore {
	rs := &opsv1.ClusterRestore{ObjectMeta: metav1.ObjectMeta{Namespace: "observability", Name: name, UID: types.UID(name), CreationTimestamp: created(sec)},
		Spec: opsv1.ClusterRestoreSpec{Backup: "b", VMCluster: &opsv1.VMClusterReference{Name: "vmc"}}}
	if claimed {
		t := created(sec + 1)
		rs.Status.StartTime = &t
	}
	for _, s := range states {
		rs.Status.Replicas = append(rs.Status.Replicas, opsv1.ReplicaRestore{Pod: "p", State: s})
	}
	return rs
}

func aBackup(name string, sec int, phase opsv1.BackupPhase, states ...opsv1.ReplicaBackupState) *opsv1.ClusterBackup {
	b := &opsv1.ClusterBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "observability", Name: name, UID: types.UID(name), CreationTimestamp: created(sec)},
		Spec:   opsv1.ClusterBackupSpec{VMCluster: opsv1.VMClusterReference{Name: "vmc"}, Destination: opsv1.BackupDestination{URL: "fs:///b"}},
		Status: opsv1.ClusterBackupStatus{Phase: phase}}
	for _, s := range states {
		b.Status.Replicas = append(b.Status.Replicas, opsv1.ReplicaBackup{Pod: "p", State: s})
	}
	return b
}

func reader(g Gomega, objs ...client.Object) client.Reader {
	s := runtime.NewScheme()
	g.Expect(opsv1.AddToScheme(s)).To(Succeed())
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
}

// TestRestoreBlocker: a restore waits for a running backup, an older
// planned one, and an older or claimed restore of its VMCluster; of a
// backup and a restore both claimed but not acting, the older goes first,
// and each side agrees (ActiveRestore).
func TestRestoreBlocker(t *testing.T) {
	const pending, snap = opsv1.ReplicaStatePending, opsv1.ReplicaStateSnapshotting
	tests := []struct {
		name   string
		self   *opsv1.ClusterRestore
		others []client.Object
		want   string
	}{
		{"alone", aRestore("r", 10, false), nil, ""},
		{"a running backup", aRestore("r", 10, true), []client.Object{aBackup("b", 20, opsv1.BackupPhaseRunning, snap)}, "ClusterBackup observability/b"},
		{"a finished backup", aRestore("r", 10, false), []client.Object{aBackup("b", 5, opsv1.BackupPhaseSucceeded)}, ""},
		{"an older planned backup", aRestore("r", 10, true), []client.Object{aBackup("b", 5, opsv1.BackupPhasePending, pending)}, "ClusterBackup observability/b"},
		{"a younger planned backup waits for the claimed restore", aRestore("r", 10, true), []client.Object{aBackup("b", 20, opsv1.BackupPhasePending, pending)}, ""},
		{"an older unclaimed restore", aRestore("r", 10, false), []client.Object{aRestore("o", 5, false)}, "ClusterRestore observability/o"},
		{"a younger unclaimed restore", aRestore("r", 10, false), []client.Object{aRestore("o", 20, false)}, ""},
		{"a claimed younger restore goes first", aRestore("r", 10, false), []client.Object{aRestore("o", 20, true)}, "ClusterRestore observability/o"},
		{"of two claimed, the older", aRestore("r", 10, true), []client.Object{aRestore("o", 20, true)}, ""},
		{"an acting restore", aRestore("r", 10, true), []client.Object{aRestore("o", 20, true, opsv1.ReplicaRestoreStopping)}, "ClusterRestore observability/o"},
		{"a finished restore", aRestore("r", 10, false), []client.Object{func() client.Object {
			o := aRestore("o", 5, true)
			o.Status.Phase = opsv1.RestorePhaseSucceeded
			return o
		}()}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := RestoreBlocker(context.Background(), reader(g, append(tt.others, tt.self)...), tt.self, vmc)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestActiveRestore(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	claimed := aRestore("r", 10, true)
	// An unplanned backup waits for a claimed restore.
	got, err := ActiveRestore(ctx, reader(g, claimed), vmc, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal("observability/r"))
	// A planned backup older than a claimed, not acting restore goes on;
	// a younger one waits.
	got, _ = ActiveRestore(ctx, reader(g, claimed), vmc, aBackup("b", 5, opsv1.BackupPhasePending, opsv1.ReplicaStatePending))
	g.Expect(got).To(BeEmpty())
	got, _ = ActiveRestore(ctx, reader(g, claimed), vmc, aBackup("b", 20, opsv1.BackupPhasePending, opsv1.ReplicaStatePending))
	g.Expect(got).To(Equal("observability/r"))
	// An acting restore blocks every backup; another VMCluster's none.
	acting := aRestore("r", 10, true, opsv1.ReplicaRestoreRestoring)
	got, _ = ActiveRestore(ctx, reader(g, acting), vmc, aBackup("b", 5, opsv1.BackupPhasePending, opsv1.ReplicaStatePending))
	g.Expect(got).To(Equal("observability/r"))
	got, _ = ActiveRestore(ctx, reader(g, acting), types.NamespacedName{Namespace: "observability", Name: "other"}, nil)
	g.Expect(got).To(BeEmpty())
	// Unclaimed restores block nothing.
	got, _ = ActiveRestore(ctx, reader(g, aRestore("r", 10, false)), vmc, nil)
	g.Expect(got).To(BeEmpty())
}
