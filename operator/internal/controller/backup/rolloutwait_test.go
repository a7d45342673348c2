package backup

import (
	"testing"

	. "github.com/onsi/gomega"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// TestDecideWaitsForRollout: a backup that has not started waits for a
// vmstorage rollout of its VMCluster, naming the operation, past its start
// timeout too (the rollout has its own); a started one goes on.
func TestDecideWaitsForRollout(t *testing.T) {
	g := NewWithT(t)
	w := readyWorld(2)
	w.rollout = "ops/upgrade-1"
	for name, b := range map[string]*opsv1.ClusterBackup{
		"not planned": mkBackup(nil),
		"planned":     mkBackup(planned(opsv1.ReplicaStatePending, opsv1.ReplicaStatePending)),
	} {
		act := decide(b, w, t0.Add(48*60*60*1e9), DefaultOptions().StartTimeout)
		g.Expect(act.kind).To(Equal(actWait), name)
		g.Expect(act.reason).To(Equal(opsv1.WaitingForOperationReason), name)
		g.Expect(act.msg).To(ContainSubstring("ClusterUpgradeOperation ops/upgrade-1"), name)
	}
	started := mkBackup(planned(opsv1.ReplicaStateUploading, opsv1.ReplicaStatePending))
	g.Expect(decide(started, w, t0, DefaultOptions().StartTimeout).kind).NotTo(Equal(actWait))
}
