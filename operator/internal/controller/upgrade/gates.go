package upgrade

import (
	"fmt"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/skeleton"
)

// What holds an operation before its next step: an approval gate
// (spec.approvals, approved through spec.approved) or its maintenance
// window (spec.maintenanceWindow, or the operator's default for the
// cluster). Both hold only a step that has not started: a step already
// Running — a cloud operation in flight, a drain half done — finishes. A
// hold is derived from spec and status alone, so an operator restarted
// while one holds holds again.

// holdState is what a hold found in one reconcile (see summarizeHolds).
type holdState struct {
	// gate is the approval gate the next step waits behind.
	gate *opsv1.AwaitingApproval
	// window is the effective maintenance window, nil when none.
	window *opsv1.EffectiveMaintenanceWindow
	// nextWindowStart is set while the window is closed.
	nextWindowStart *time.Time
}

// hold reports whether act must wait: for an approval of the next step's
// gate, or for the maintenance window to open. An invalid window fails the
// operation (reason InvalidSpec) before any change.
func (r *Reconciler) hold(s *scope, act action) bool {
	op := s.op
	w := s.holds.window
	var step *opsv1.UpgradeStep
	switch act.kind {
	case actPreflight:
	case actRunStep:
		step = &op.Status.Steps[act.step]
		if step.Phase == opsv1.StepPhaseRunning {
			return false
		}
	default:
		return false
	}
	if w != nil {
		if v := w.Validate(); len(v) > 0 {
			msgs := make([]string, 0, len(v))
			for _, x := range v {
				msgs = append(msgs, x.Message)
			}
			r.failInvalid(op, "Invalid spec: "+strings.Join(msgs, "; "))
			return true
		}
	}
	if step != nil {
		for _, id := range op.Spec.GatesBefore(op.Status.Steps, act.step) {
			if op.Spec.IsApproved(id) {
				continue
			}
			s.holds.gate = &opsv1.AwaitingApproval{Gate: id, NextStep: step.ID, Done: doneSteps(op.Status.Steps), Since: r.now()}
			if prev := op.Status.AwaitingApproval; prev != nil && prev.Gate == id && prev.Since != nil {
				s.holds.gate.Since = prev.Since
			} else {
				r.event(op, "Normal", opsv1.AwaitingApprovalReason, "Waiting for approval of %s before step %s", id, step.ID)
			}
			s.observedOnly = true
			return true
		}
		if step.Action == opsv1.ActionWaitNodesReady {
			// Only waits; the step before it changed the cluster.
			return false
		}
	}
	if w == nil {
		return false
	}
	now := r.Now()
	inside, _, next, _ := w.Window(now)
	if inside {
		return false
	}
	s.holds.nextWindowStart = &next
	s.observedOnly = true
	s.requeue = next.Sub(now)
	if s.requeue > r.Options.WindowRecheckInterval && r.Options.WindowRecheckInterval > 0 {
		// Looked at again now and then: a clock that jumps, a default
		// window that changes.
		s.requeue = r.Options.WindowRecheckInterval
	}
	if s.requeue <= 0 {
		s.requeue = time.Second
	}
	return true
}

// effectiveWindow is the operation's window, else the operator's default
// for its cluster, else nil.
func (r *Reconciler) effectiveWindow(op *opsv1.ClusterUpgradeOperation) *opsv1.EffectiveMaintenanceWindow {
	if op.Spec.MaintenanceWindow != nil {
		return &opsv1.EffectiveMaintenanceWindow{MaintenanceWindow: *op.Spec.MaintenanceWindow, Source: "spec"}
	}
	return r.Options.MaintenanceWindows.For(string(op.Spec.CloudProvider), op.Spec.Region, op.Spec.K8sClusterName)
}

func doneSteps(steps []opsv1.UpgradeStep) []string {
	var out []string
	for i := range steps {
		if steps[i].Phase == opsv1.StepPhaseSucceeded || steps[i].Phase == opsv1.StepPhaseSkipped {
			out = append(out, steps[i].ID)
		}
	}
	return out
}

// summarizeHolds writes what hold found to status: the phase
// AwaitingApproval and status.awaitingApproval at a gate,
// status.nextWindowStart and the reason OutsideMaintenanceWindow outside
// the window; and clears them once nothing holds. It runs after the rest
// of summarize, so its conditions win.
func summarizeHolds(s *scope) {
	op := s.op
	st := &op.Status
	if st.Phase.IsTerminal() {
		st.AwaitingApproval, st.NextWindowStart = nil, nil
		return
	}
	st.MaintenanceWindow = s.holds.window
	gen := op.Generation
	switch {
	case s.holds.gate != nil && st.Phase != opsv1.UpgradePhaseCancelling:
		st.Phase = opsv1.UpgradePhaseAwaitingApproval
		st.AwaitingApproval = s.holds.gate
		st.NextWindowStart = nil
		msg := fmt.Sprintf("Waiting for approval of %s before step %s", s.holds.gate.Gate, s.holds.gate.NextStep)
		skeleton.SetCondition(&st.Conditions, gen, opsv1.ReadyCondition, metav1.ConditionUnknown, opsv1.AwaitingApprovalReason, msg)
		apimeta.RemoveStatusCondition(&st.Conditions, opsv1.ReconcilingCondition)
		apimeta.RemoveStatusCondition(&st.Conditions, opsv1.StalledCondition)
		// Waits for a person: this generation is fully handled.
		st.ObservedGeneration = gen
		return
	case st.Phase == opsv1.UpgradePhaseAwaitingApproval:
		// Approved (or paused, or cancelled meanwhile).
		st.Phase = opsv1.UpgradePhaseRunning
		if op.Spec.Paused {
			st.Phase = opsv1.UpgradePhasePaused
		}
	}
	st.AwaitingApproval = nil
	if s.holds.nextWindowStart == nil {
		if st.NextWindowStart != nil && st.Phase == opsv1.UpgradePhaseScheduled {
			st.Phase = opsv1.UpgradePhasePending
		}
		st.NextWindowStart = nil
		return
	}
	next := metav1.NewTime(*s.holds.nextWindowStart)
	st.NextWindowStart = &next
	if st.StartTime == nil {
		st.Phase = opsv1.UpgradePhaseScheduled
	}
	msg := "Outside the maintenance window; the next step may start at " + next.UTC().Format(time.RFC3339)
	if st.StartTime == nil {
		msg = "Outside the maintenance window; the operation may start at " + next.UTC().Format(time.RFC3339)
	}
	skeleton.MarkRunning(&st.Conditions, gen, opsv1.OutsideMaintenanceWindowReason, msg)
}
