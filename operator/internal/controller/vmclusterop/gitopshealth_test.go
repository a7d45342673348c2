package vmclusterop

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

// TestGitOpsHealth: a VMClusterOperation in every phase, its status
// written by summarize and by succeed, fail and cancel, reads as
// docs/gitops-health.md says through kstatus, the page's Argo CD Lua
// script and the page's Flux healthCheckExprs.
func TestGitOpsHealth(t *testing.T) {
	checks, err := gitopshealthtest.Load()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t0 := metav1.NewTime(time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC))
	r := &Reconciler{Now: func() time.Time { return t0.Time }}
	op := func(phases ...opsv1.StepPhase) *opsv1.VMClusterOperation {
		o := &opsv1.VMClusterOperation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "op", Generation: 1}}
		for i, p := range phases {
			o.Status.Steps = append(o.Status.Steps, opsv1.OperationStep{ID: string(rune('a' + i)), Phase: p})
		}
		return o
	}
	started := func(o *opsv1.VMClusterOperation) *opsv1.VMClusterOperation {
		o.Status.StartTime = &t0
		return o
	}
	summarized := func(o *opsv1.VMClusterOperation, s scope) *opsv1.VMClusterOperation {
		s.op = o
		r.summarize(&s)
		return o
	}
	ended := func(o *opsv1.VMClusterOperation, end func(*opsv1.VMClusterOperation)) *opsv1.VMClusterOperation {
		end(o)
		return summarized(o, scope{})
	}
	for _, tc := range []struct {
		name    string
		op      *opsv1.VMClusterOperation
		kstatus status.Status
		flux    status.Status // "": the expressions do not evaluate, Flux waits
		argo    string
	}{
		{"just applied, no status", op(), status.CurrentStatus, "", "Progressing"},
		{"Pending", summarized(op(), scope{}), status.InProgressStatus, status.InProgressStatus, "Progressing"},
		{"Pending, waiting for another operation", summarized(op(opsv1.StepPhasePending), scope{waiting: "upgrade ns/u"}), status.InProgressStatus, status.InProgressStatus, "Progressing"},
		{"Running", summarized(started(op(opsv1.StepPhaseSucceeded, opsv1.StepPhaseRunning)), scope{}), status.InProgressStatus, status.InProgressStatus, "Progressing"},
		{"Paused", summarized(started(op(opsv1.StepPhaseSucceeded, opsv1.StepPhasePending)), scope{paused: true}), status.InProgressStatus, status.InProgressStatus, "Suspended"},
		{"Cancelling", func() *opsv1.VMClusterOperation {
			o := started(op(opsv1.StepPhaseRunning, opsv1.StepPhasePending))
			o.Spec.Cancel = true
			return summarized(o, scope{})
		}(), status.InProgressStatus, status.InProgressStatus, "Progressing"},
		{"Succeeded", ended(started(op(opsv1.StepPhaseSucceeded)), func(o *opsv1.VMClusterOperation) { r.succeed(o, "Done") }), status.CurrentStatus, status.CurrentStatus, "Healthy"},
		{"Failed", ended(started(op(opsv1.StepPhaseFailed, opsv1.StepPhasePending)), func(o *opsv1.VMClusterOperation) { r.fail(o, opsv1.FailedReason, "boom") }), status.FailedStatus, status.FailedStatus, "Degraded"},
		{"Cancelled", ended(started(op(opsv1.StepPhaseSucceeded, opsv1.StepPhasePending)), r.cancel), status.FailedStatus, status.FailedStatus, "Degraded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			u, err := gitopshealthtest.Unstructured(tc.op, opsv1.GroupVersion.WithKind("VMClusterOperation"))
			g.Expect(err).NotTo(HaveOccurred())
			if tc.op.Status.Phase == "" {
				// The API server serves no status until the operator wrote one.
				unstructured.RemoveNestedField(u.Object, "status")
			}

			checks.Assert(g, u, tc.kstatus, tc.flux, tc.argo, gitopshealthtest.ReadyMessage(tc.op.Status.Conditions))
		})
	}
}
