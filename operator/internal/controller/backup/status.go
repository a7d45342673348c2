package backup

import (
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/skeleton"
)

// summarize derives everything in status that follows from the rest: the
// phase while running, progress, the conditions and observedGeneration.
// It is the one place conditions are computed; a terminal phase keeps the
// Ready reason and message its action recorded (setTerminal).
func (r *Reconciler) summarize(s *scope) {
	b := s.b
	st := &b.Status
	finished, ok := 0, 0
	for _, rep := range st.Replicas {
		if rep.State.IsTerminal() {
			finished++
		}
		if rep.State == opsv1.ReplicaStateSucceeded {
			ok++
		}
	}
	st.Progress = fmt.Sprintf("%d/%d", finished, len(st.Replicas))
	if st.Phase == "" {
		st.Phase = opsv1.BackupPhasePending
	}
	if !st.Phase.IsTerminal() && anyStarted(st.Replicas) {
		st.Phase = opsv1.BackupPhaseRunning
	}

	switch st.Phase {
	case opsv1.BackupPhaseSucceeded:
		skeleton.MarkSucceeded(&st.Conditions, b.Generation, opsv1.SucceededReason, readyMessage(b, fmt.Sprintf("Backed up %d of %d replicas", ok, len(st.Replicas))))
		st.ObservedGeneration = b.Generation
	case opsv1.BackupPhasePartiallyFailed, opsv1.BackupPhaseFailed:
		ready := apimeta.FindStatusCondition(st.Conditions, opsv1.ReadyCondition)
		reason, msg := opsv1.FailedReason, "Backup failed"
		if ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason != opsv1.ProgressingReason && ready.Reason != opsv1.BlockedReason {
			reason, msg = ready.Reason, ready.Message
		}
		skeleton.MarkFailed(&st.Conditions, b.Generation, reason, msg)
		st.ObservedGeneration = b.Generation
	default: // Pending, Running
		reason, msg := opsv1.ProgressingReason, fmt.Sprintf("Backed up %d of %d replicas", ok, len(st.Replicas))
		if failed := finished - ok; failed > 0 {
			msg += fmt.Sprintf(", %d failed", failed)
		}
		switch {
		case s.blocked != "" && s.blockedReason == opsv1.WaitingForOperationReason:
			reason, msg = s.blockedReason, s.blocked
		case s.blocked != "":
			reason, msg = opsv1.BlockedReason, s.blocked
		case len(st.Replicas) == 0:
			msg = "Waiting to start"
		}
		skeleton.MarkRunning(&st.Conditions, b.Generation, reason, msg)
	}
}

// readyMessage keeps the message recorded at the end, if any.
func readyMessage(b *opsv1.ClusterBackup, fallback string) string {
	if c := apimeta.FindStatusCondition(b.Status.Conditions, opsv1.ReadyCondition); c != nil && c.Reason == opsv1.SucceededReason && c.Message != "" {
		return c.Message
	}
	return fallback
}
