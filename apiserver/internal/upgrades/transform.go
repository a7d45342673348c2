package upgrades

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// TrimOperation drops from a cached ClusterUpgradeOperation the status
// ops-apiserver never reads, in place (the informer transform of
// ClusterUpgradeOperations, app.New): of status.conditions only Ready
// stays (toOperation shows its message; Reconciling and Stalled are read
// by nobody), and status.observedGeneration, progress and
// resolvedTargetVersion go (read by nobody either). Every other field is
// shown by toOperation or read by a rule (phase, startTime, the steps)
// and stays.
func TrimOperation(o *opsv1.ClusterUpgradeOperation) {
	st := &o.Status
	st.ObservedGeneration, st.Progress, st.ResolvedTargetVersion = 0, "", ""
	if len(st.Conditions) == 0 {
		return
	}
	if c := apimeta.FindStatusCondition(st.Conditions, opsv1.ReadyCondition); c != nil {
		st.Conditions = []metav1.Condition{*c}
		return
	}
	st.Conditions = nil
}
