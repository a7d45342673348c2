package restores

import (
	"context"
	"net/http"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/backups"
	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

func seedBackup(name string, phase opsv1.BackupPhase, replicas int) *opsv1.ClusterBackup {
	b := &opsv1.ClusterBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "obs", Name: name, UID: "uid-" + types.UID(name)}}
	b.Status.Phase = phase
	for i := range replicas {
		pod := "vmstorage-old-" + string(rune('0'+i))
		b.Status.Replicas = append(b.Status.Replicas, opsv1.ReplicaBackup{Pod: pod, Destination: "fs:///backups/old/" + name + "/" + pod})
	}
	return b
}

func newSeeder(t *testing.T, objs ...client.Object) (Seeder, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := opsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	bk := &backups.Service{Reader: c, Writer: c, Namespace: "obs", Defaults: config.BackupsConfig{FSRoots: []string{"/backups"}, RestoresEnabled: true}}
	return Seeder{Svc: &Service{Backups: bk}, Namespace: "obs"}, c
}

// restore_from is refused with a 400 naming restore_from.backup, in the
// operator preflight's words, before anything is created.
func TestCheckSeed(t *testing.T) {
	s, _ := newSeeder(t, seedBackup("ok", opsv1.BackupPhaseSucceeded, 2), seedBackup("running", opsv1.BackupPhaseRunning, 2))
	tests := []struct {
		name, backup string
		replicas     int
		want         string
	}{
		{name: "fits", backup: "ok", replicas: 2},
		{name: "not found", backup: "nope", replicas: 2, want: `backup "nope" not found`},
		{name: "not succeeded", backup: "running", replicas: 2, want: "backup running is Running; only a Succeeded backup can be restored"},
		{name: "fewer replicas", backup: "ok", replicas: 1, want: "cannot seed vmstorage.replicaCount 1"},
		{name: "more replicas", backup: "ok", replicas: 3, want: "cannot seed vmstorage.replicaCount 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := s.CheckSeed(context.Background(), "new", tt.replicas, tt.backup)
			if tt.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			var ae *apierror.Error
			g.Expect(err).To(BeAssignableToTypeOf(ae))
			ae = err.(*apierror.Error)
			g.Expect(ae.Code).To(Equal(http.StatusBadRequest))
			g.Expect(ae.Violations).To(HaveLen(1))
			g.Expect(ae.Violations[0].Field).To(Equal("restore_from.backup"))
			g.Expect(ae.Violations[0].Description).To(ContainSubstring(tt.want))
		})
	}
	other := Seeder{Svc: s.Svc, Namespace: "elsewhere"}
	err := other.CheckSeed(context.Background(), "new", 2, "ok")
	NewWithT(t).Expect(err).To(HaveOccurred())
	NewWithT(t).Expect(err.(*apierror.Error).Violations[0].Description).To(ContainSubstring("in its own namespace"))
}

// The seeding restore is created once; a repeat finds it.
func TestEnsureSeed(t *testing.T) {
	g := NewWithT(t)
	s, c := newSeeder(t, seedBackup("ok", opsv1.BackupPhaseSucceeded, 2))
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "obs", Name: "new", UID: "hr-uid"}, Spec: helmv2.HelmReleaseSpec{ReleaseName: "new"}}
	g.Expect(s.EnsureSeed(context.Background(), hr, "ok")).To(Succeed())
	g.Expect(s.EnsureSeed(context.Background(), hr, "ok")).To(Succeed())
	rs := &opsv1.ClusterRestore{}
	g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: "obs", Name: "seed-new"}, rs)).To(Succeed())
	g.Expect(rs.Spec.Backup).To(Equal("ok"))
	g.Expect(rs.Spec.VMCluster.Name).To(Equal("new"))
	g.Expect(rs.Spec.Strategy).To(Equal(opsv1.RestoreAllAtOnce))
	g.Expect(rs.Labels).To(HaveKeyWithValue(opsv1.LabelVMClusterID, "hr-uid"))
}

// The hold ConfigMap of a new vmcluster pre-holds every replica for its
// seeding restore; one left by an earlier vmcluster of the name gets the
// keys merged in. SeedPending follows the keys.
func TestEnsureHold(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s, c := newSeeder(t)
	pending, err := s.SeedPending(ctx, "new")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pending).To(BeFalse(), "no ConfigMap")
	g.Expect(s.EnsureHold(ctx, "new", 2)).To(Succeed())
	cm := &corev1.ConfigMap{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "obs", Name: "new-vmstorage-hold"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(Equal(map[string]string{"vmstorage-new-0": "obs/seed-new ", "vmstorage-new-1": "obs/seed-new "}))
	pending, err = s.SeedPending(ctx, "new")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pending).To(BeTrue())

	// Restored: the keys are gone; a new vmcluster of the name is held again.
	cm.Data = map[string]string{"unrelated": "x"}
	g.Expect(c.Update(ctx, cm)).To(Succeed())
	pending, err = s.SeedPending(ctx, "new")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pending).To(BeFalse())
	g.Expect(s.EnsureHold(ctx, "new", 1)).To(Succeed())
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
	g.Expect(cm.Data).To(Equal(map[string]string{"unrelated": "x", "vmstorage-new-0": "obs/seed-new "}))
}
