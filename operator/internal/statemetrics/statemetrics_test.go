package statemetrics

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

func TestCollector(t *testing.T) {
	g := NewWithT(t)
	scheme, err := testenv.NewScheme(opsv1.AddToScheme)
	g.Expect(err).NotTo(HaveOccurred())
	at := func(unix int64) *metav1.Time { return &metav1.Time{Time: time.Unix(unix, 0)} }
	upgrade := func(name string, provider opsv1.CloudProvider, phase opsv1.UpgradePhase, blocked *opsv1.BlockedBy) *opsv1.ClusterUpgradeOperation {
		return &opsv1.ClusterUpgradeOperation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec:   opsv1.ClusterUpgradeOperationSpec{CloudProvider: provider},
			Status: opsv1.ClusterUpgradeOperationStatus{Phase: phase, BlockedBy: blocked}}
	}
	backup := func(name, vmcluster string, phase opsv1.BackupPhase, done int64) *opsv1.ClusterBackup {
		b := &opsv1.ClusterBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec:   opsv1.ClusterBackupSpec{VMCluster: opsv1.VMClusterReference{Name: vmcluster}},
			Status: opsv1.ClusterBackupStatus{Phase: phase}}
		if done != 0 {
			b.Status.CompletionTime = at(done)
		}
		return b
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		upgrade("a", opsv1.CloudProviderEKS, opsv1.UpgradePhaseRunning, &opsv1.BlockedBy{
			StepID: "nodegroup/ng/DrainNodes", Reason: opsv1.BlockedByPodDisruptionBudget, Since: at(1000)}),
		upgrade("b", opsv1.CloudProviderEKS, opsv1.UpgradePhaseFailed, nil),
		upgrade("c", opsv1.CloudProviderMock, "", nil),
		// A blocker left on a terminal operation is not reported.
		upgrade("d", opsv1.CloudProviderMock, opsv1.UpgradePhaseCancelled, &opsv1.BlockedBy{Reason: "X", Since: at(5)}),
		&opsv1.VMClusterOperation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "op"},
			Status: opsv1.VMClusterOperationStatus{Phase: opsv1.OperationPhaseSucceeded}},
		&opsv1.ClusterRestore{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"}},
		backup("b1", "vm1", opsv1.BackupPhaseSucceeded, 2000),
		backup("b2", "vm1", opsv1.BackupPhaseSucceeded, 3000),
		backup("b3", "vm1", opsv1.BackupPhaseFailed, 4000),
		backup("b4", "vm2", opsv1.BackupPhaseFailed, 4000),
		&opsv1.ClusterBackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"},
			Spec: opsv1.ClusterBackupScheduleSpec{VMCluster: opsv1.VMClusterReference{Namespace: "other", Name: "vm3"}}},
	).Build()
	col := &Collector{}
	g.Expect(testutil.CollectAndCount(col)).To(Equal(0), "nothing before SetReader")
	col.SetReader(c)
	g.Expect(testutil.CollectAndCompare(col, strings.NewReader(`
# HELP ops_backup_last_success_timestamp_seconds Completion time of the last Succeeded ClusterBackup of each VMCluster that has a ClusterBackup or a ClusterBackupSchedule, as a Unix time; 0 when none succeeded.
# TYPE ops_backup_last_success_timestamp_seconds gauge
ops_backup_last_success_timestamp_seconds{namespace="ns",vmcluster="vm1"} 3000
ops_backup_last_success_timestamp_seconds{namespace="ns",vmcluster="vm2"} 0
ops_backup_last_success_timestamp_seconds{namespace="other",vmcluster="vm3"} 0
# HELP ops_clusterbackups ClusterBackups by phase (every phase reported, 0 when none).
# TYPE ops_clusterbackups gauge
ops_clusterbackups{phase="Failed"} 2
ops_clusterbackups{phase="PartiallyFailed"} 0
ops_clusterbackups{phase="Pending"} 0
ops_clusterbackups{phase="Running"} 0
ops_clusterbackups{phase="Succeeded"} 2
# HELP ops_clusterrestores ClusterRestores by phase (every phase reported, 0 when none).
# TYPE ops_clusterrestores gauge
ops_clusterrestores{phase="Failed"} 0
ops_clusterrestores{phase="Pending"} 1
ops_clusterrestores{phase="Running"} 0
ops_clusterrestores{phase="Succeeded"} 0
# HELP ops_clusterupgradeoperation_blocked_since_timestamp_seconds When the blocker of a running ClusterUpgradeOperation (status.blockedBy, e.g. an eviction a PodDisruptionBudget refuses during a drain) was first seen, as a Unix time; absent when nothing blocks it.
# TYPE ops_clusterupgradeoperation_blocked_since_timestamp_seconds gauge
ops_clusterupgradeoperation_blocked_since_timestamp_seconds{name="a",namespace="ns",provider="eks",reason="PodDisruptionBudget",step="nodegroup/ng/DrainNodes"} 1000
# HELP ops_clusterupgradeoperation_status_phase Always 1: the current phase of each ClusterUpgradeOperation, in its labels.
# TYPE ops_clusterupgradeoperation_status_phase gauge
ops_clusterupgradeoperation_status_phase{name="a",namespace="ns",phase="Running",provider="eks"} 1
ops_clusterupgradeoperation_status_phase{name="b",namespace="ns",phase="Failed",provider="eks"} 1
ops_clusterupgradeoperation_status_phase{name="c",namespace="ns",phase="Pending",provider="mock"} 1
ops_clusterupgradeoperation_status_phase{name="d",namespace="ns",phase="Cancelled",provider="mock"} 1
# HELP ops_clusterupgradeoperations ClusterUpgradeOperations by phase and cloud provider (every phase of every provider in use reported, 0 when none).
# TYPE ops_clusterupgradeoperations gauge
ops_clusterupgradeoperations{phase="AwaitingApproval",provider="eks"} 0
ops_clusterupgradeoperations{phase="AwaitingApproval",provider="mock"} 0
ops_clusterupgradeoperations{phase="Cancelled",provider="eks"} 0
ops_clusterupgradeoperations{phase="Cancelling",provider="eks"} 0
ops_clusterupgradeoperations{phase="Failed",provider="eks"} 1
ops_clusterupgradeoperations{phase="Paused",provider="eks"} 0
ops_clusterupgradeoperations{phase="Pending",provider="eks"} 0
ops_clusterupgradeoperations{phase="Running",provider="eks"} 1
ops_clusterupgradeoperations{phase="Scheduled",provider="eks"} 0
ops_clusterupgradeoperations{phase="Succeeded",provider="eks"} 0
ops_clusterupgradeoperations{phase="Cancelled",provider="mock"} 1
ops_clusterupgradeoperations{phase="Cancelling",provider="mock"} 0
ops_clusterupgradeoperations{phase="Failed",provider="mock"} 0
ops_clusterupgradeoperations{phase="Paused",provider="mock"} 0
ops_clusterupgradeoperations{phase="Pending",provider="mock"} 1
ops_clusterupgradeoperations{phase="Running",provider="mock"} 0
ops_clusterupgradeoperations{phase="Scheduled",provider="mock"} 0
ops_clusterupgradeoperations{phase="Succeeded",provider="mock"} 0
# HELP ops_vmclusteroperations VMClusterOperations by phase (every phase reported, 0 when none).
# TYPE ops_vmclusteroperations gauge
ops_vmclusteroperations{phase="Cancelled"} 0
ops_vmclusteroperations{phase="Cancelling"} 0
ops_vmclusteroperations{phase="Failed"} 0
ops_vmclusteroperations{phase="Paused"} 0
ops_vmclusteroperations{phase="Pending"} 0
ops_vmclusteroperations{phase="Running"} 0
ops_vmclusteroperations{phase="Succeeded"} 1
`))).To(Succeed())
}

func TestLeader(t *testing.T) {
	g := NewWithT(t)
	l := NewLeader()
	g.Expect(testutil.ToFloat64(l)).To(Equal(0.0))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- l.Start(ctx) }()
	g.Eventually(func() float64 { return testutil.ToFloat64(l) }).Should(Equal(1.0))
	cancel()
	g.Eventually(done).Should(Receive(BeNil()))
	g.Expect(testutil.ToFloat64(l)).To(Equal(0.0))
}
