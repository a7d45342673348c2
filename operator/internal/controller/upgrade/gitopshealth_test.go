package upgrade

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/skeleton/gitopshealthtest"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// TestGitOpsHealth: an operation in every phase, its status written by
// summarize (and for Failed by the step that failed), reads as
// docs/gitops-health.md says through kstatus, the page's Argo CD Lua
// script and the page's Flux healthCheckExprs.
func TestGitOpsHealth(t *testing.T) {
	checks, err := gitopshealthtest.Load()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())

	summarized := func(op *opsv1.ClusterUpgradeOperation) *opsv1.ClusterUpgradeOperation {
		(&Reconciler{Now: func() time.Time { return t0 }}).summarize(&scope{op: op})
		return op
	}
	for _, tc := range []struct {
		name    string
		op      func(t *testing.T) *opsv1.ClusterUpgradeOperation
		kstatus status.Status
		flux    status.Status // "" : the expressions do not evaluate, Flux waits
		argo    string
	}{
		{"just applied, no status", func(*testing.T) *opsv1.ClusterUpgradeOperation {
			op, _ := policyOp(opsv1.ActionUpgradeControlPlane, false)
			op.Status = opsv1.ClusterUpgradeOperationStatus{}
			return op
		}, status.CurrentStatus, "", "Progressing"},
		{"Pending", func(*testing.T) *opsv1.ClusterUpgradeOperation {
			op, _ := policyOp(opsv1.ActionUpgradeControlPlane, false)
			op.Status.StartTime, op.Status.Phase = nil, opsv1.UpgradePhasePending
			return summarized(op)
		}, status.InProgressStatus, status.InProgressStatus, "Progressing"},
		{"Scheduled", func(*testing.T) *opsv1.ClusterUpgradeOperation {
			op, _ := policyOp(opsv1.ActionUpgradeControlPlane, false)
			op.Status.StartTime, op.Status.Phase = nil, opsv1.UpgradePhaseScheduled
			op.Spec.Schedule = &metav1.Time{Time: t0.Add(time.Hour)}
			return summarized(op)
		}, status.InProgressStatus, status.InProgressStatus, "Progressing"},
		{"Running", func(*testing.T) *opsv1.ClusterUpgradeOperation {
			op, _ := policyOp(opsv1.ActionCreateNodeGroup, true)
			return summarized(op)
		}, status.InProgressStatus, status.InProgressStatus, "Progressing"},
		{"Paused", func(*testing.T) *opsv1.ClusterUpgradeOperation {
			op, _ := policyOp(opsv1.ActionCreateNodeGroup, false)
			op.Spec.Paused, op.Status.Phase = true, opsv1.UpgradePhasePaused
			return summarized(op)
		}, status.InProgressStatus, status.InProgressStatus, "Suspended"},
		{"Paused, then resumed in Git (generation not handled yet)", func(*testing.T) *opsv1.ClusterUpgradeOperation {
			op, _ := policyOp(opsv1.ActionCreateNodeGroup, false)
			op.Spec.Paused, op.Status.Phase = true, opsv1.UpgradePhasePaused
			summarized(op)
			op.Spec.Paused, op.Generation = false, 2
			return op
		}, status.InProgressStatus, status.InProgressStatus, "Progressing"},
		{"Cancelling", func(*testing.T) *opsv1.ClusterUpgradeOperation {
			op, _ := policyOp(opsv1.ActionCreateNodeGroup, true)
			op.Spec.Cancel = true
			return summarized(op)
		}, status.InProgressStatus, status.InProgressStatus, "Progressing"},
		{"Succeeded", func(*testing.T) *opsv1.ClusterUpgradeOperation {
			op, _ := policyOp(opsv1.StepAction("none"), false)
			op.Status.Phase = opsv1.UpgradePhaseSucceeded
			return summarized(op)
		}, status.CurrentStatus, status.CurrentStatus, "Healthy"},
		{"Failed", func(t *testing.T) *opsv1.ClusterUpgradeOperation {
			op, _ := policyOp(opsv1.ActionUpgradeNodeGroup, false)
			r := policyReconciler(t, &policyProvider{err: cloud.Errorf(cloud.Permanent, cloud.Mock, "Op", "no")}, nil)
			_, _, _, err := r.act(context.Background(), op)
			NewWithT(t).Expect(err).NotTo(HaveOccurred())
			NewWithT(t).Expect(op.Status.Phase).To(Equal(opsv1.UpgradePhaseFailed))
			return summarized(op)
		}, status.FailedStatus, status.FailedStatus, "Degraded"},
		{"Cancelled", func(*testing.T) *opsv1.ClusterUpgradeOperation {
			op, _ := policyOp(opsv1.ActionCreateNodeGroup, false)
			op.Spec.Cancel, op.Status.Phase = true, opsv1.UpgradePhaseCancelled
			return summarized(op)
		}, status.FailedStatus, status.FailedStatus, "Degraded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			op := tc.op(t)
			u, err := gitopshealthtest.Unstructured(op, opsv1.GroupVersion.WithKind("ClusterUpgradeOperation"))
			g.Expect(err).NotTo(HaveOccurred())
			if equality.Semantic.DeepEqual(op.Status, opsv1.ClusterUpgradeOperationStatus{}) {
				// The API server serves no status until the operator wrote one.
				unstructured.RemoveNestedField(u.Object, "status")
			}

			checks.Assert(g, u, tc.kstatus, tc.flux, tc.argo, gitopshealthtest.ReadyMessage(op.Status.Conditions))
		})
	}
}

// TestProgress: status.progress (the PROGRESS column) counts the finished
// steps of the plan.
func TestProgress(t *testing.T) {
	g := NewWithT(t)
	op, idx := policyOp(opsv1.ActionCreateNodeGroup, true)
	op.Status.Steps[0].Phase = opsv1.StepPhaseSkipped
	(&Reconciler{Now: func() time.Time { return t0 }}).summarize(&scope{op: op})
	g.Expect(idx).To(BeNumerically(">", 0))
	g.Expect(op.Status.Progress).To(Equal(fmt.Sprintf("%d/%d", idx, len(op.Status.Steps))))

	op.Status.Steps = nil
	(&Reconciler{Now: func() time.Time { return t0 }}).summarize(&scope{op: op})
	g.Expect(op.Status.Progress).To(BeEmpty())
}
