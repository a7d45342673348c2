package backup

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/skeleton/gitopshealthtest"
)

// TestGitOpsHealth: a ClusterBackup in every phase, its status written by
// summarize and (at the end) by finish, reads as docs/gitops-health.md
// says through kstatus, the page's Argo CD Lua script and the page's Flux
// healthCheckExprs.
func TestGitOpsHealth(t *testing.T) {
	checks, err := gitopshealthtest.Load()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t0 := time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)
	r := &Reconciler{Now: func() time.Time { return t0 }}
	backup := func(states ...opsv1.ReplicaBackupState) *opsv1.ClusterBackup {
		b := &opsv1.ClusterBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", Generation: 1}}
		for i, s := range states {
			b.Status.Replicas = append(b.Status.Replicas, opsv1.ReplicaBackup{Pod: "vmstorage-" + string(rune('a'+i)), State: s, Error: map[bool]string{true: "boom"}[s == opsv1.ReplicaStateFailed]})
		}
		return b
	}
	running := func(states ...opsv1.ReplicaBackupState) *opsv1.ClusterBackup {
		b := backup(states...)
		r.summarize(&scope{b: b})
		return b
	}
	finished := func(states ...opsv1.ReplicaBackupState) *opsv1.ClusterBackup {
		b := running(states...)
		r.finish(b)
		r.summarize(&scope{b: b})
		return b
	}
	for _, tc := range []struct {
		name    string
		b       *opsv1.ClusterBackup
		kstatus status.Status
		flux    status.Status // "": the expressions do not evaluate, Flux waits
		argo    string
	}{
		{"just applied, no status", backup(), status.CurrentStatus, "", "Progressing"},
		{"Pending", running(opsv1.ReplicaStatePending, opsv1.ReplicaStatePending), status.InProgressStatus, status.InProgressStatus, "Progressing"},
		{"Pending, blocked", func() *opsv1.ClusterBackup {
			b := backup()
			r.summarize(&scope{b: b, blocked: "VMCluster not ready"})
			return b
		}(), status.InProgressStatus, status.InProgressStatus, "Progressing"},
		{"Running", running(opsv1.ReplicaStateSucceeded, opsv1.ReplicaStateUploading), status.InProgressStatus, status.InProgressStatus, "Progressing"},
		{"Succeeded", finished(opsv1.ReplicaStateSucceeded, opsv1.ReplicaStateSucceeded), status.CurrentStatus, status.CurrentStatus, "Healthy"},
		{"PartiallyFailed", finished(opsv1.ReplicaStateSucceeded, opsv1.ReplicaStateFailed), status.FailedStatus, status.FailedStatus, "Degraded"},
		{"Failed", finished(opsv1.ReplicaStateFailed, opsv1.ReplicaStateFailed), status.FailedStatus, status.FailedStatus, "Degraded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			u, err := gitopshealthtest.Unstructured(tc.b, opsv1.GroupVersion.WithKind("ClusterBackup"))
			g.Expect(err).NotTo(HaveOccurred())
			if tc.b.Status.Phase == "" {
				// The API server serves no status until the operator wrote one.
				unstructured.RemoveNestedField(u.Object, "status")
			}

			checks.Assert(g, u, tc.kstatus, tc.flux, tc.argo, gitopshealthtest.ReadyMessage(tc.b.Status.Conditions))
		})
	}
}
