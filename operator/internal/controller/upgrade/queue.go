package upgrade

import (
	"context"

	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/log"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/exclusion"
)

// waitForCluster applies "one active upgrade per cluster" (package
// exclusion) to an operation about to start, or started a moment ago and
// not past its first step: when another operation of the cluster goes
// first, this one waits in phase Pending, its start undone (only the
// preflight's reads happened), and looks again after PollInterval.
func (r *Reconciler) waitForCluster(ctx context.Context, s *scope) (bool, error) {
	op := s.op
	other, err := exclusion.Blocker(ctx, r.APIReader, op)
	if err != nil || other == nil {
		return false, err
	}
	if op.Status.StartTime != nil {
		log.FromContext(ctx).Info("Another operation of the cluster started at the same time; stepping back",
			"other", klog.KObj(other))
	}
	op.Status.StartTime = nil
	op.Status.Phase = opsv1.UpgradePhasePending
	s.waitingFor = other
	s.observedOnly = true
	s.requeue = r.Options.PollInterval
	return true, nil
}

// anyStepStarted reports whether a step left Pending.
func anyStepStarted(steps []opsv1.UpgradeStep) bool {
	for i := range steps {
		if p := steps[i].Phase; p != opsv1.StepPhasePending && p != "" {
			return true
		}
	}
	return false
}

// waitingMessage says which operation op waits for.
func waitingMessage(op, other *opsv1.ClusterUpgradeOperation) string {
	phase := other.Status.Phase
	if phase == "" {
		phase = opsv1.UpgradePhasePending
	}
	return "Waiting for ClusterUpgradeOperation " + other.Namespace + "/" + other.Name + " (" + string(phase) +
		") to finish: one upgrade at a time per cluster " + exclusion.KeyOf(op).String()
}
