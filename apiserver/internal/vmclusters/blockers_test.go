package vmclusters

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

func TestBlockersOf(t *testing.T) {
	backup := func(ns, name, vmNS, vm string, phase opsv1.BackupPhase) opsv1.ClusterBackup {
		return opsv1.ClusterBackup{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       opsv1.ClusterBackupSpec{VMCluster: opsv1.VMClusterReference{Namespace: vmNS, Name: vm}},
			Status:     opsv1.ClusterBackupStatus{Phase: phase},
		}
	}
	upgrade := func(name string, rollout bool, phase opsv1.UpgradePhase) opsv1.ClusterUpgradeOperation {
		op := opsv1.ClusterUpgradeOperation{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: name}}
		op.Spec.NodeGroupUpgrades = []opsv1.NodeGroupUpgrade{{NodeGroupName: "ng", Strategy: opsv1.StrategyBlueGreen, RequiresVMStorageRollout: rollout}}
		op.Status.Phase = phase
		return op
	}
	backups := []opsv1.ClusterBackup{
		backup("ops", "running", "observability", "vmcluster", opsv1.BackupPhaseRunning),
		backup("ops", "new", "observability", "vmcluster", ""),
		backup("ops", "done", "observability", "vmcluster", opsv1.BackupPhaseSucceeded),
		backup("ops", "failed", "observability", "vmcluster", opsv1.BackupPhaseFailed),
		backup("ops", "other", "observability", "other", opsv1.BackupPhaseRunning),
		// Namespace omitted: the backup's own.
		backup("observability", "local", "", "vmcluster", opsv1.BackupPhasePending),
	}
	ops := []opsv1.ClusterUpgradeOperation{
		upgrade("rollout", true, opsv1.UpgradePhaseRunning),
		upgrade("no-rollout", false, opsv1.UpgradePhaseRunning),
		upgrade("rollout-done", true, opsv1.UpgradePhaseSucceeded),
		upgrade("rollout-paused", true, opsv1.UpgradePhasePaused),
	}
	// An explicit rollout target: VMCluster observability/other only.
	explicit := upgrade("rollout-other", true, opsv1.UpgradePhaseRunning)
	explicit.Spec.NodeGroupUpgrades[0].VMCluster = &opsv1.VMClusterReference{Name: "other"}
	ops = append(ops, explicit)

	g := NewWithT(t)
	got := BlockersOf(opsv1.VMClusterNamespace, opsv1.VMClusterName, backups, ops)
	names := []string{}
	for _, b := range got {
		names = append(names, b.Kind+" "+b.Namespace+"/"+b.Name)
	}
	g.Expect(names).To(Equal([]string{
		"ClusterBackup observability/local",
		"ClusterBackup ops/new",
		"ClusterBackup ops/running",
		"ClusterUpgradeOperation ops/rollout",
		"ClusterUpgradeOperation ops/rollout-paused",
	}))
	g.Expect(got[1].String()).To(Equal("ClusterBackup ops/new (not started)"))
	g.Expect(got[2].String()).To(Equal("ClusterBackup ops/running (Running)"))

	// Another VMCluster: its own backup and the upgrade that names it.
	other := BlockersOf("observability", "other", backups, ops)
	g.Expect(other).To(HaveLen(2))
	g.Expect(other[0].Name).To(Equal("other"))
	g.Expect(other[1].Name).To(Equal("rollout-other"))
	g.Expect(BlockersOf("elsewhere", "vmcluster", backups, ops)).To(BeEmpty())
}

func TestOperationBlockersOf(t *testing.T) {
	g := NewWithT(t)
	mk := func(name, vmcluster string, p opsv1.OperationPhase) opsv1.VMClusterOperation {
		o := opsv1.VMClusterOperation{Spec: opsv1.VMClusterOperationSpec{VMCluster: opsv1.VMClusterReference{Name: vmcluster}}}
		o.Namespace, o.Name, o.Status.Phase = "observability", name, p
		return o
	}
	ops := []opsv1.VMClusterOperation{
		mk("paused", "vmcluster", opsv1.OperationPhasePaused),
		mk("new", "vmcluster", ""),
		mk("done", "vmcluster", opsv1.OperationPhaseSucceeded),
		mk("cancelled", "vmcluster", opsv1.OperationPhaseCancelled),
		mk("other", "other", opsv1.OperationPhaseRunning),
	}
	got := OperationBlockersOf("observability", "vmcluster", ops)
	g.Expect(got).To(HaveLen(2))
	g.Expect(got[0].String()).To(Equal("VMClusterOperation observability/new (not started)"))
	g.Expect(got[1].String()).To(Equal("VMClusterOperation observability/paused (Paused)"))
}

func TestRestoreBlockersOf(t *testing.T) {
	g := NewWithT(t)
	restore := func(name, backup string, target *opsv1.VMClusterReference, phase opsv1.RestorePhase) opsv1.ClusterRestore {
		return opsv1.ClusterRestore{
			ObjectMeta: metav1.ObjectMeta{Namespace: "observability", Name: name},
			Spec:       opsv1.ClusterRestoreSpec{Backup: backup, VMCluster: target},
			Status:     opsv1.ClusterRestoreStatus{Phase: phase},
		}
	}
	backups := []opsv1.ClusterBackup{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "observability", Name: "b"},
		Spec:       opsv1.ClusterBackupSpec{VMCluster: opsv1.VMClusterReference{Name: "vmcluster"}},
	}}
	restores := []opsv1.ClusterRestore{
		restore("running", "b", &opsv1.VMClusterReference{Name: "vmcluster"}, opsv1.RestorePhaseRunning),
		restore("from-the-backup", "b", nil, ""),
		restore("done", "b", nil, opsv1.RestorePhaseSucceeded),
		restore("elsewhere", "b", &opsv1.VMClusterReference{Name: "copy"}, opsv1.RestorePhasePending),
		restore("unknown-backup", "gone", nil, opsv1.RestorePhasePending),
	}
	got := RestoreBlockersOf("observability", "vmcluster", restores, backups)
	g.Expect(got).To(ConsistOf(
		Blocker{Kind: opsv1.ClusterRestoreKind, Namespace: "observability", Name: "running", Phase: "Running"},
		Blocker{Kind: opsv1.ClusterRestoreKind, Namespace: "observability", Name: "from-the-backup"},
	))
	g.Expect(RestoreBlockersOf("observability", "copy", restores, backups)).To(HaveLen(1))
}
