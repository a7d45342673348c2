package upgrade

import (
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/skeleton"
)

// summarize derives everything in status that follows from the rest: the
// progress, the current step, what blocks it, the conditions and observedGeneration. It
// is the one place conditions are computed.
func (r *Reconciler) summarize(s *scope) {
	op := s.op
	st := &op.Status
	if op.Spec.Cancel && !st.Phase.IsTerminal() {
		st.Phase = opsv1.UpgradePhaseCancelling
	}
	if st.Phase == "" {
		st.Phase = opsv1.UpgradePhasePending
	}
	if st.Phase == opsv1.UpgradePhasePaused && !op.Spec.Paused {
		st.Phase = opsv1.UpgradePhaseRunning
		if st.StartTime == nil {
			st.Phase = opsv1.UpgradePhasePending
		}
	}
	// Running with spec.paused means a cloud operation is still in flight:
	// the phase becomes Paused once it finished (decide picks actPause).

	st.Progress = progress(st.Steps)
	st.CurrentStep = ""
	if cur := currentStep(st.Steps); cur >= 0 {
		st.CurrentStep = st.Steps[cur].ID
	}
	for i := range st.Steps {
		if st.Steps[i].Phase == opsv1.StepPhaseFailed {
			st.CurrentStep = st.Steps[i].ID
		}
	}
	if st.Phase.IsTerminal() {
		st.BlockedBy = nil
	} else {
		st.BlockedBy = s.blocked
	}

	gen := op.Generation
	switch st.Phase {
	case opsv1.UpgradePhaseSucceeded:
		skeleton.MarkSucceeded(&st.Conditions, gen, opsv1.SucceededReason, "Upgraded to "+targetVersion(op))
		st.ObservedGeneration = gen
	case opsv1.UpgradePhaseFailed:
		reason, msg := opsv1.FailedReason, "Upgrade failed"
		if c := apimeta.FindStatusCondition(st.Conditions, opsv1.ReadyCondition); c != nil && (c.Reason == opsv1.FailedReason || c.Reason == opsv1.InvalidSpecReason || c.Reason == opsv1.VMClusterNotFoundReason) {
			reason, msg = c.Reason, c.Message
		}
		skeleton.MarkFailed(&st.Conditions, gen, reason, msg)
		st.ObservedGeneration = gen
	case opsv1.UpgradePhaseCancelled:
		// Stalled: nothing will resume a cancelled operation. Without it
		// kstatus reads Ready=False as InProgress, and a GitOps health
		// check would wait for it forever (docs/gitops-health.md).
		skeleton.MarkFailed(&st.Conditions, gen, opsv1.CancelledReason, "Cancelled on request")
		st.ObservedGeneration = gen
	case opsv1.UpgradePhasePaused:
		setReady(op, metav1.ConditionUnknown, opsv1.PausedReason, "Paused before step "+st.CurrentStep)
		apimeta.RemoveStatusCondition(&st.Conditions, opsv1.ReconcilingCondition)
		apimeta.RemoveStatusCondition(&st.Conditions, opsv1.StalledCondition)
		// The pause request of this generation is fully handled.
		st.ObservedGeneration = gen
	case opsv1.UpgradePhaseScheduled:
		msg := "Waiting for the schedule"
		if op.Spec.Schedule != nil {
			msg = "Scheduled for " + op.Spec.Schedule.UTC().Format("2006-01-02T15:04:05Z")
		}
		skeleton.MarkRunning(&st.Conditions, gen, opsv1.WaitingForScheduleReason, msg)
	case opsv1.UpgradePhaseCancelling:
		setReady(op, metav1.ConditionUnknown, opsv1.CancellingReason, cancellingMessage(op))
		setCond(op, opsv1.ReconcilingCondition, metav1.ConditionTrue, opsv1.CancellingReason, "Cancelling")
		apimeta.RemoveStatusCondition(&st.Conditions, opsv1.StalledCondition)
	case opsv1.UpgradePhasePending:
		if s.waitingFor == nil {
			summarizeRunning(op)
			break
		}
		skeleton.MarkRunning(&st.Conditions, gen, opsv1.WaitingForOperationReason, waitingMessage(op, s.waitingFor))
	default: // Running
		summarizeRunning(op)
	}
	summarizeHolds(s)
}

// summarizeRunning sets the conditions of an operation that is Pending (and
// waits for nothing but its turn in the queue) or Running.
func summarizeRunning(op *opsv1.ClusterUpgradeOperation) {
	st := &op.Status
	reason, msg := opsv1.ProgressingReason, "Running step "+st.CurrentStep
	if st.Phase == opsv1.UpgradePhasePending {
		msg = "Planned; waiting to start"
	}
	if st.BlockedBy != nil {
		reason, msg = opsv1.BlockedReason, st.BlockedBy.Message
	} else if cur := st.Step(st.CurrentStep); cur != nil && cur.Message != "" {
		msg = cur.ID + ": " + cur.Message
	}
	skeleton.MarkRunning(&st.Conditions, op.Generation, reason, msg)
}

func setReady(op *opsv1.ClusterUpgradeOperation, status metav1.ConditionStatus, reason, msg string) {
	setCond(op, opsv1.ReadyCondition, status, reason, msg)
}

func setCond(op *opsv1.ClusterUpgradeOperation, t string, status metav1.ConditionStatus, reason, msg string) {
	skeleton.SetCondition(&op.Status.Conditions, op.Generation, t, status, reason, msg)
}

// progress is "<finished>/<total>" steps, empty without a plan.
func progress(steps []opsv1.UpgradeStep) string {
	if len(steps) == 0 {
		return ""
	}
	done := 0
	for i := range steps {
		if steps[i].Phase.IsTerminal() {
			done++
		}
	}
	return fmt.Sprintf("%d/%d", done, len(steps))
}
