package upgrade

import (
	"time"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// actionKind is what one reconcile does next. The reconciler observes,
// decides one action with decide (pure), performs it, patches status and
// goes round again.
type actionKind string

const (
	// actNone: the operation is terminal; nothing to do.
	actNone actionKind = "None"
	// actWritePlan: write the ordered plan to status (before any cloud call).
	actWritePlan actionKind = "WritePlan"
	// actWaitSchedule: spec.schedule is in the future.
	actWaitSchedule actionKind = "WaitSchedule"
	// actPreflight: check the cloud before the first step.
	actPreflight actionKind = "Preflight"
	// actPoll: poll the cloud operation the step is waiting on.
	actPoll actionKind = "Poll"
	// actRunStep: start the step, or make one more pass of a Kubernetes-side
	// step (wait for nodes, rollout, cordon, drain).
	actRunStep actionKind = "RunStep"
	// actPause: paused, and nothing in flight.
	actPause actionKind = "Pause"
	// actCancel: cancellation requested, nothing in flight: skip the rest.
	actCancel actionKind = "Cancel"
	// actSucceed: every step succeeded or was skipped.
	actSucceed actionKind = "Succeed"
	// actFail: a step failed.
	actFail actionKind = "Fail"
)

// action is the decision: a kind and, for step actions, the step index.
type action struct {
	kind actionKind
	step int // index into status.steps; -1 when none
}

// currentStep returns the index of the step in progress: the first Running
// step, else the first Pending one; -1 when every step is finished.
func currentStep(steps []opsv1.UpgradeStep) int {
	for i := range steps {
		if steps[i].Phase == opsv1.StepPhaseRunning {
			return i
		}
	}
	for i := range steps {
		if steps[i].Phase == opsv1.StepPhasePending || steps[i].Phase == "" {
			return i
		}
	}
	return -1
}

// inFlight reports whether a step waits on a cloud operation it started.
func inFlight(s *opsv1.UpgradeStep) bool {
	return s.Phase == opsv1.StepPhaseRunning && s.OperationID != "" && isCloudAction(s.Action)
}

// decide picks the next action from the operation alone. It is pure: every
// observation of the world happens in the action it picks. It never picks
// actRunStep for a step that already records a cloud operation (that would
// start it twice): such a step is only ever polled.
func decide(op *opsv1.ClusterUpgradeOperation, now time.Time) action {
	st := &op.Status
	if st.Phase.IsTerminal() {
		return action{kind: actNone, step: -1}
	}
	if len(st.Steps) == 0 {
		return action{kind: actWritePlan, step: -1}
	}
	for i := range st.Steps {
		if st.Steps[i].Phase == opsv1.StepPhaseFailed {
			return action{kind: actFail, step: i}
		}
	}
	cur := currentStep(st.Steps)
	if cur < 0 {
		return action{kind: actSucceed, step: -1}
	}
	step := &st.Steps[cur]
	if op.Spec.Cancel {
		if inFlight(step) {
			return action{kind: actPoll, step: cur}
		}
		return action{kind: actCancel, step: cur}
	}
	if st.StartTime == nil {
		if op.Spec.Schedule != nil && now.Before(op.Spec.Schedule.Time) {
			return action{kind: actWaitSchedule, step: -1}
		}
		if op.Spec.Paused {
			return action{kind: actPause, step: -1}
		}
		return action{kind: actPreflight, step: -1}
	}
	if inFlight(step) {
		return action{kind: actPoll, step: cur}
	}
	if op.Spec.Paused {
		return action{kind: actPause, step: cur}
	}
	return action{kind: actRunStep, step: cur}
}
