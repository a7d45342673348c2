package upgrade

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

func stepOf(op *opsv1.ClusterUpgradeOperation, action opsv1.StepAction) *opsv1.UpgradeStep {
	for i := range op.Status.Steps {
		if st := &op.Status.Steps[i]; st.Action == action && strings.HasPrefix(st.ID, "nodegroup/old/") {
			return st
		}
	}
	return nil
}

func TestPlanHasTheBackupGateFirst(t *testing.T) {
	g := NewWithT(t)
	op, _ := policyOp(opsv1.ActionUpgradeControlPlane, false)
	var actions []opsv1.StepAction
	for _, st := range buildPlan(&op.Spec) {
		if strings.HasPrefix(st.ID, "nodegroup/old/") {
			actions = append(actions, st.Action)
		}
	}
	g.Expect(actions).To(Equal([]opsv1.StepAction{opsv1.ActionBackupVMStorage, opsv1.ActionCreateNodeGroup, opsv1.ActionWaitNodesReady,
		opsv1.ActionRolloutVMStorage, opsv1.ActionCordonNodes, opsv1.ActionDrainNodes, opsv1.ActionDeleteNodeGroup}))
	op.Spec.NodeGroupUpgrades[1].BackupBeforeRollout = nil
	g.Expect(buildPlan(&op.Spec)).NotTo(ContainElement(HaveField("Action", opsv1.ActionBackupVMStorage)))
}

// TestBackupGate: the gate creates one ClusterBackup (a deterministic
// name: acting again never creates a second), records it in the step and
// waits; Succeeded lets the new node group be created; Failed fails the
// operation with nothing of the node group started.
func TestBackupGate(t *testing.T) {
	for _, phase := range []opsv1.BackupPhase{opsv1.BackupPhaseSucceeded, opsv1.BackupPhaseFailed} {
		t.Run(string(phase), func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			op, _ := policyOp(opsv1.ActionBackupVMStorage, false)
			r := policyReconciler(t, &policyProvider{}, nil)
			_, _, _, err := r.act(ctx, op)
			g.Expect(err).NotTo(HaveOccurred())
			gate, create := stepOf(op, opsv1.ActionBackupVMStorage), stepOf(op, opsv1.ActionCreateNodeGroup)
			g.Expect(gate.Phase).To(Equal(opsv1.StepPhaseRunning), gate.Message)
			name := gateBackupName(op, "old")
			g.Expect(gate.Backup).To(Equal("observability/" + name))
			g.Expect(gate.Message).To(ContainSubstring("Waiting for ClusterBackup observability/" + name))
			g.Expect(create.Phase).To(Equal(opsv1.StepPhasePending))

			_, _, _, err = r.act(ctx, op)
			g.Expect(err).NotTo(HaveOccurred())
			list := &opsv1.ClusterBackupList{}
			g.Expect(r.Client.List(ctx, list)).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1), "one backup, whatever the number of passes")
			b := &list.Items[0]
			g.Expect(b.Name).To(Equal(name))
			g.Expect(b.Spec.VMCluster).To(Equal(opsv1.VMClusterReference{Namespace: "observability", Name: "vmcluster"}))
			g.Expect(b.Spec.Destination.URL).To(Equal("s3://b/p"))
			g.Expect(stepOf(op, opsv1.ActionBackupVMStorage).Phase).To(Equal(opsv1.StepPhaseRunning))

			b.Status.Phase = phase
			g.Expect(r.Client.Update(ctx, b)).To(Succeed())
			_, _, _, err = r.act(ctx, op)
			g.Expect(err).NotTo(HaveOccurred())
			gate, create = stepOf(op, opsv1.ActionBackupVMStorage), stepOf(op, opsv1.ActionCreateNodeGroup)
			if phase == opsv1.BackupPhaseSucceeded {
				g.Expect(gate.Phase).To(Equal(opsv1.StepPhaseSucceeded), gate.Message)
				g.Expect(gate.Message).To(ContainSubstring("Succeeded"))
				g.Expect(gate.Backup).To(Equal("observability/"+name), "recorded in the operation's status")
				for range 3 {
					if create.Phase == opsv1.StepPhasePending {
						_, _, _, err = r.act(ctx, op)
						g.Expect(err).NotTo(HaveOccurred())
						create = stepOf(op, opsv1.ActionCreateNodeGroup)
					}
				}
				g.Expect(create.Phase).To(Equal(opsv1.StepPhaseRunning), "the new node group is created after the backup")
				g.Expect(create.OperationID).NotTo(BeEmpty())
				return
			}
			g.Expect(gate.Phase).To(Equal(opsv1.StepPhaseFailed))
			g.Expect(gate.Message).To(ContainSubstring("nothing of node group old was changed"))
			g.Expect(op.Status.Phase).To(Equal(opsv1.UpgradePhaseFailed))
			g.Expect(create.Phase).NotTo(Equal(opsv1.StepPhaseRunning))
			g.Expect(create.OperationID).To(BeEmpty(), "no node group was created")
		})
	}
}

var _ client.Object = &opsv1.ClusterBackup{}
