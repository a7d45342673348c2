package backup_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/vmstorage"
)

// TestBackupWaitsForVMStorageRollout: a ClusterBackup created while an
// upgrade rolls out the vmstorage of its VMCluster stays Pending with a
// condition naming the operation, and goes on once the operation is
// terminal.
func TestBackupWaitsForVMStorageRollout(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	obs := opsv1.VMClusterNamespace
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: obs}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	// The VMCluster, not operational (nothing plays its operator here).
	vmc := vmstorage.NewVMCluster()
	vmc.SetNamespace(obs)
	vmc.SetName(opsv1.VMClusterName)
	vmc.Object["spec"] = map[string]any{"retentionPeriod": "1", "vmstorage": map[string]any{"replicaCount": int64(1)}}
	g.Expect(env.Client.Create(ctx, vmc)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), vmc) })

	// An upgrade, elsewhere, in the middle of its vmstorage rollout.
	opNS := env.NewNamespace(t)
	op := &opsv1.ClusterUpgradeOperation{
		ObjectMeta: metav1.ObjectMeta{Namespace: opNS, Name: "rolling"},
		Spec: opsv1.ClusterUpgradeOperationSpec{K8sClusterName: "c", Region: "r", CloudProvider: opsv1.CloudProviderMock, TargetVersion: "1.30",
			NodeGroupUpgrades: []opsv1.NodeGroupUpgrade{{NodeGroupName: "old", Strategy: opsv1.StrategyBlueGreen, NewNodeGroupName: "new",
				RequiresVMStorageRollout: true, VMClusterHelmValues: opsv1.VMClusterHelmValues{}}}},
	}
	g.Expect(env.Client.Create(ctx, op)).To(Succeed())
	op.Status.Phase = opsv1.UpgradePhaseRunning
	op.Status.Steps = []opsv1.UpgradeStep{{ID: opsv1.NodeGroupStepID("old", opsv1.ActionRolloutVMStorage), Type: opsv1.StepTypeNodeGroup,
		Action: opsv1.ActionRolloutVMStorage, Target: "old", Phase: opsv1.StepPhaseRunning}}
	g.Expect(env.Client.Status().Update(ctx, op)).To(Succeed())

	f := &fixture{ns: obs, name: opsv1.VMClusterName, endpoints: map[string]string{}}
	startOperator(t, f, &holdingRunner{hold: map[string]bool{}}, nil)
	b := newBackup(f, "during-rollout", "fs:///backups", nil)
	g.Expect(env.Client.Create(ctx, b)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), b) })

	g.Eventually(func(g Gomega) {
		cur := get(g, b)
		g.Expect(cur.Status.Phase).To(Equal(opsv1.BackupPhasePending))
		c := readyCondition(cur)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(opsv1.WaitingForOperationReason))
		g.Expect(c.Message).To(ContainSubstring("ClusterUpgradeOperation " + opNS + "/rolling"))
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(get(g, b).Status.Phase).To(Equal(opsv1.BackupPhasePending))
	}, time.Second, 100*time.Millisecond).Should(Succeed())

	// The operation ends: the backup stops waiting for it (and waits for
	// the VMCluster to be operational instead).
	cur := &opsv1.ClusterUpgradeOperation{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(op), cur)).To(Succeed())
	cur.Status.Phase = opsv1.UpgradePhaseSucceeded
	cur.Status.Steps[0].Phase = opsv1.StepPhaseSucceeded
	g.Expect(env.Client.Status().Update(ctx, cur)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := readyCondition(get(g, b))
		g.Expect(c.Reason).To(Equal(opsv1.BlockedReason))
		g.Expect(c.Message).To(ContainSubstring("VMCluster " + obs + "/" + opsv1.VMClusterName))
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
}
