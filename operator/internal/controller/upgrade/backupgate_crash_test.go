package upgrade_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/controller/upgrade"
	"github.com/tidbcloud/ops-server/operator/internal/vmstorage"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
)

// TestBackupGateCrashSafety runs a blue-green upgrade whose node group
// moves vmstorage with backupBeforeRollout, stopping the operator after
// every change of the operation's status (step phases, the recorded
// backup, the waiting messages) and starting a new one, while the test
// plays the ClusterBackup controller (the gate's backup lives in the
// VMCluster's namespace, which the operator here does not watch): Pending,
// then Running, then Succeeded or Failed, each while the operator is down.
// Exactly one ClusterBackup is created whatever the restarts; with
// Succeeded the new node group is created and the VMCluster patched only
// after the backup Succeeded; with Failed the operation fails and no node
// group is created (the simulated cloud's call log).
func TestBackupGateCrashSafety(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	obs := opsv1.VMClusterNamespace
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: obs}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// The VMCluster the rollout moves, operational.
	vmc := vmstorage.NewVMCluster()
	vmc.SetNamespace(obs)
	vmc.SetName(opsv1.VMClusterName)
	g.Expect(unstructured.SetNestedField(vmc.Object, int64(2), "spec", "vmstorage", "replicaCount")).To(Succeed())
	g.Eventually(func() error { return env.Client.Create(ctx, vmc.DeepCopy()) }, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), vmc) })
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(vmc), vmc)).To(Succeed())
	setVMClusterStatus(g, vmc.GetGeneration())

	for _, final := range []opsv1.BackupPhase{opsv1.BackupPhaseFailed, opsv1.BackupPhaseSucceeded} {
		t.Run(string(final), func(t *testing.T) {
			g := NewWithT(t)
			ns := env.NewNamespace(t)
			name := "gate-" + strings.ToLower(string(final))
			f := newCloud(t, name, 100*time.Millisecond, seed(name+"-old"))
			op := newOp(ns, name, f, func(s *opsv1.ClusterUpgradeOperationSpec) {
				s.NodeGroupUpgrades = []opsv1.NodeGroupUpgrade{{
					NodeGroupName: name + "-old", Strategy: opsv1.StrategyBlueGreen, NewNodeGroupName: name + "-new",
					RequiresVMStorageRollout: true,
					VMClusterHelmValues:      helmValues(fmt.Sprintf(`{"vmstorage":{"nodeSelector":{%q:%q}}}`, mock.NodeGroupLabel, name+"-new")),
					BackupBeforeRollout:      &opsv1.BackupBeforeRollout{Destination: opsv1.BackupDestination{URL: "s3://bucket/gate"}},
				}}
			})
			g.Expect(env.Client.Create(ctx, op)).To(Succeed())
			gateID := opsv1.NodeGroupStepID(name+"-old", opsv1.ActionBackupVMStorage)
			rolloutID := opsv1.NodeGroupStepID(name+"-old", opsv1.ActionRolloutVMStorage)
			createID := opsv1.NodeGroupStepID(name+"-old", opsv1.ActionCreateNodeGroup)

			gateBackups := func(g Gomega) []opsv1.ClusterBackup {
				list := &opsv1.ClusterBackupList{}
				g.Expect(env.Client.List(ctx, list, client.InNamespace(obs), client.MatchingLabels{
					upgrade.GateOperationLabel: op.Name, upgrade.GateOperationNamespaceLabel: ns,
				})).To(Succeed())
				return list.Items
			}
			t.Cleanup(func() {
				for _, b := range gateBackups(NewWithT(t)) {
					_ = env.Client.Delete(context.Background(), &b)
				}
			})
			vmcGeneration := func(g Gomega) int64 {
				cur := vmstorage.NewVMCluster()
				g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(vmc), cur)).To(Succeed())
				return cur.GetGeneration()
			}
			startGen := vmcGeneration(g)

			restarts, seen := 0, ""
			var succeededAt time.Time
			deadline := time.Now().Add(2 * time.Minute)
			for time.Now().Before(deadline) {
				o := startOperator(t, ns, f, nil)
				g.Eventually(func(g Gomega) {
					g.Expect(gateKey(get(g, op))).NotTo(Equal(seen))
				}, 30*time.Second, 10*time.Millisecond).Should(Succeed())
				o.stop()
				restarts++
				cur := get(g, op)
				seen = gateKey(cur)

				// What must hold at every stop: at most one backup, and
				// nothing of the node group moved before it Succeeded.
				backups := gateBackups(g)
				g.Expect(len(backups)).To(BeNumerically("<=", 1), "restart %d: %v", restarts, names(backups))
				succeeded := len(backups) == 1 && backups[0].Status.Phase == opsv1.BackupPhaseSucceeded
				if !succeeded {
					g.Expect(stepPhase(cur, createID)).To(BeElementOf(opsv1.StepPhasePending, opsv1.StepPhaseSkipped), describe(cur))
					g.Expect(stepPhase(cur, rolloutID)).To(BeElementOf(opsv1.StepPhasePending, opsv1.StepPhaseSkipped), describe(cur))
					g.Expect(mutationCounts(f)).NotTo(HaveKey("StartCreateNodeGroup nodegroup/"+name+"-new"), describe(cur))
					g.Expect(vmcGeneration(g)).To(Equal(startGen), "the VMCluster is not patched before the backup Succeeded")
				}
				if cur.Status.Phase.IsTerminal() || stepPhase(cur, rolloutID) != opsv1.StepPhasePending {
					break
				}
				// Play the backup controller while the operator is down:
				// one phase per restart, so the gate is killed while
				// waiting for each.
				if gate := cur.Status.Step(gateID); gate != nil && gate.Phase == opsv1.StepPhaseRunning && len(backups) == 1 {
					g.Expect(gate.Backup).To(Equal(obs+"/"+backups[0].Name), "the backup is recorded in the step")
					b := &backups[0]
					switch b.Status.Phase {
					case "":
						b.Status.Phase, b.Status.Progress = opsv1.BackupPhaseRunning, "0/2"
					case opsv1.BackupPhaseRunning:
						b.Status.Phase, b.Status.Progress = final, "2/2"
						succeededAt = time.Now()
					}
					g.Expect(env.Client.Status().Update(ctx, b)).To(Succeed())
				}
			}
			done := get(g, op)
			t.Logf("operator restarted %d times\n%s", restarts, describe(done))
			backups := gateBackups(g)
			g.Expect(backups).To(HaveLen(1), "exactly one ClusterBackup, whatever the restarts")
			g.Expect(backups[0].Spec.Destination.URL).To(Equal("s3://bucket/gate"))
			gate := done.Status.Step(gateID)
			g.Expect(gate.Backup).To(Equal(obs + "/" + backups[0].Name))
			g.Expect(restarts).To(BeNumerically(">=", 4), "killed at least while creating, pending, running and done")

			if final == opsv1.BackupPhaseFailed {
				g.Expect(done.Status.Phase).To(Equal(opsv1.UpgradePhaseFailed), describe(done))
				g.Expect(gate.Phase).To(Equal(opsv1.StepPhaseFailed))
				g.Expect(gate.Message).To(ContainSubstring("nothing of node group " + name + "-old was changed"))
				g.Expect(done.Status.Step(createID).OperationID).To(BeEmpty())
				for k := range mutationCounts(f) {
					g.Expect(k).NotTo(HavePrefix("StartCreateNodeGroup"), "no node group was created")
					g.Expect(k).NotTo(HavePrefix("StartDeleteNodeGroup"))
				}
				st, err := f.provider.State(ctx, f.ref)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(st.NodeGroups).To(HaveLen(1))
				g.Expect(vmcGeneration(g)).To(Equal(startGen))
				return
			}
			g.Expect(gate.Phase).To(Equal(opsv1.StepPhaseSucceeded), describe(done))
			create, rollout := done.Status.Step(createID), done.Status.Step(rolloutID)
			g.Expect(create.StartTime).NotTo(BeNil())
			g.Expect(create.StartTime.Time.Before(gate.CompletionTime.Time)).To(BeFalse(), "the node group was created after the gate")
			g.Expect(rollout.StartTime).NotTo(BeNil())
			g.Expect(rollout.StartTime.Time.Before(gate.CompletionTime.Time)).To(BeFalse(), "the rollout started after the gate")
			g.Expect(rollout.StartTime.Time.Before(succeededAt.Truncate(time.Second))).To(BeFalse(), "the rollout started after the backup Succeeded")
			g.Expect(mutationCounts(f)).To(HaveKeyWithValue("StartCreateNodeGroup nodegroup/"+name+"-new", 1))
			// The rollout patches the VMCluster once it runs.
			o := startOperator(t, ns, f, nil)
			g.Eventually(func(g Gomega) {
				cur := vmstorage.NewVMCluster()
				g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(vmc), cur)).To(Succeed())
				sel, _, _ := unstructured.NestedStringMap(cur.Object, "spec", "vmstorage", "nodeSelector")
				g.Expect(sel).To(HaveKeyWithValue(mock.NodeGroupLabel, name+"-new"))
			}, time.Minute, 50*time.Millisecond).Should(Succeed())
			o.stop()
			g.Expect(gateBackups(g)).To(HaveLen(1))
		})
	}
}

// gateKey is what a restart waits to change: the operation's phase and,
// per step, its phase, cloud operation, recorded backup and message (the
// gate's message follows the backup's phase).
func gateKey(op *opsv1.ClusterUpgradeOperation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|", op.Status.Phase)
	for _, s := range op.Status.Steps {
		fmt.Fprintf(&b, "%s:%s:%s:%s:%s|", s.ID, s.Phase, s.OperationID, s.Backup, s.Message)
	}
	return b.String()
}

// stepPhase is the phase of step id, Pending before the plan exists.
func stepPhase(op *opsv1.ClusterUpgradeOperation, id string) opsv1.StepPhase {
	if st := op.Status.Step(id); st != nil && st.Phase != "" {
		return st.Phase
	}
	return opsv1.StepPhasePending
}

func names(backups []opsv1.ClusterBackup) []string {
	out := make([]string, 0, len(backups))
	for _, b := range backups {
		out = append(out, b.Name)
	}
	return out
}
