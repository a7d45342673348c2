package upgrade_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/vmstorage"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
)

// TestBlueGreenWithVMStorageRollout moves vmstorage to a new node group
// through the VMCluster. No VictoriaMetrics operator, StatefulSet
// controller or scheduler runs in the test control plane: the test plays
// them once the reconciler has patched the VMCluster.
func TestBlueGreenWithVMStorageRollout(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	f := newCloud(t, "rollout", 0, seed("vms-old"))
	obs := opsv1.VMClusterNamespace
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: obs}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	kubeletLoop(t, obs)

	// The VMCluster, as the vmcluster chart creates it, operational.
	vmc := vmstorage.NewVMCluster()
	vmc.SetNamespace(obs)
	vmc.SetName(opsv1.VMClusterName)
	g.Expect(unstructured.SetNestedField(vmc.Object, int64(2), "spec", "vmstorage", "replicaCount")).To(Succeed())
	g.Expect(env.Client.Create(ctx, vmc)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), vmc) })
	setVMClusterStatus(g, vmc.GetGeneration())

	// Its vmstorage StatefulSet and pods, on the old node group.
	labels := map[string]string{"app.kubernetes.io/name": "vmstorage", "app.kubernetes.io/instance": "vmcluster"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: obs, Name: opsv1.DefaultVMStorageSTSName},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "vmstorage", Image: "victoriametrics/vmstorage:v1.100.0-cluster"}}},
			},
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
		},
	}
	g.Expect(env.Client.Create(ctx, sts)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), sts) })
	placePods(g, obs, labels, "vms-old", "rev-1")
	setSTSStatus(g, sts, "rev-1")

	// A backup of the VMCluster is running (nothing reconciles it here:
	// the operator watches the test's namespace only).
	backup := &opsv1.ClusterBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: obs, Name: "nightly"},
		Spec: opsv1.ClusterBackupSpec{VMCluster: opsv1.VMClusterReference{Name: opsv1.VMClusterName},
			Destination: opsv1.BackupDestination{URL: "fs:///backups"}},
	}
	g.Expect(env.Client.Create(ctx, backup)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), backup) })
	backup.Status.Phase = opsv1.BackupPhaseRunning
	g.Expect(env.Client.Status().Update(ctx, backup)).To(Succeed())

	startOperator(t, ns, f, nil)
	op := newOp(ns, "rollout", f, func(s *opsv1.ClusterUpgradeOperationSpec) {
		s.NodeGroupUpgrades = []opsv1.NodeGroupUpgrade{{
			NodeGroupName: "vms-old", Strategy: opsv1.StrategyBlueGreen, NewNodeGroupName: "vms-new",
			RequiresVMStorageRollout: true,
			VMClusterHelmValues:      helmValues(fmt.Sprintf(`{"vmstorage":{"nodeSelector":{%q:"vms-new"}}}`, mock.NodeGroupLabel)),
		}}
	})
	g.Expect(env.Client.Create(ctx, op)).To(Succeed())

	// The rollout waits for the backup, saying so, and leaves the
	// VMCluster alone.
	rolloutID := opsv1.NodeGroupStepID("vms-old", opsv1.ActionRolloutVMStorage)
	g.Eventually(func(g Gomega) {
		cur := get(g, op)
		g.Expect(cur.Status.CurrentStep).To(Equal(rolloutID))
		g.Expect(cur.Status.BlockedBy).NotTo(BeNil())
		g.Expect(cur.Status.BlockedBy.Reason).To(Equal(opsv1.WaitingForBackupReason))
		g.Expect(cur.Status.BlockedBy.Message).To(ContainSubstring("ClusterBackup " + obs + "/nightly"))
		g.Expect(cur.Status.Step(rolloutID).Phase).To(Equal(opsv1.StepPhasePending))
	}, time.Minute, 50*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		cur := vmstorage.NewVMCluster()
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(vmc), cur)).To(Succeed())
		g.Expect(cur.GetGeneration()).To(Equal(vmc.GetGeneration()))
	}, time.Second, 100*time.Millisecond).Should(Succeed())
	backup.Status.Phase = opsv1.BackupPhaseSucceeded
	g.Expect(env.Client.Status().Update(ctx, backup)).To(Succeed())

	// Wait for the merge patch: nodeSelector added, replicaCount kept.
	var patchedGen int64
	g.Eventually(func(g Gomega) {
		cur := vmstorage.NewVMCluster()
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(vmc), cur)).To(Succeed())
		sel, _, _ := unstructured.NestedStringMap(cur.Object, "spec", "vmstorage", "nodeSelector")
		g.Expect(sel).To(HaveKeyWithValue(mock.NodeGroupLabel, "vms-new"))
		n, _, _ := unstructured.NestedInt64(cur.Object, "spec", "vmstorage", "replicaCount")
		g.Expect(n).To(Equal(int64(2)), "maps merge")
		patchedGen = cur.GetGeneration()
	}, time.Minute, 50*time.Millisecond).Should(Succeed())
	g.Expect(patchedGen).To(BeNumerically(">", vmc.GetGeneration()))

	// Until the rollout happens the step waits, naming what is pending.
	g.Eventually(func(g Gomega) {
		cur := get(g, op)
		step := cur.Status.Step(opsv1.NodeGroupStepID("vms-old", opsv1.ActionRolloutVMStorage))
		g.Expect(step.Phase).To(Equal(opsv1.StepPhaseRunning))
		g.Expect(cur.Status.BlockedBy).NotTo(BeNil())
		g.Expect(cur.Status.BlockedBy.Reason).To(Equal(opsv1.BlockedByVMClusterNotOperational))
	}, time.Minute, 50*time.Millisecond).Should(Succeed())
	g.Expect(mutationCounts(f)).NotTo(HaveKey("StartDeleteNodeGroup nodegroup/vms-old"), "the old group stays until vmstorage moved")

	// Play the VictoriaMetrics operator and the StatefulSet controller: the
	// pods are re-created on the new group's nodes at a new revision.
	g.Expect(env.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(obs), client.MatchingLabels(labels), client.GracePeriodSeconds(0))).To(Succeed())
	g.Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(env.Client.List(ctx, pods, client.InNamespace(obs), client.MatchingLabels(labels))).To(Succeed())
		g.Expect(pods.Items).To(BeEmpty())
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
	placePods(g, obs, labels, "vms-new", "rev-2")
	setSTSStatus(g, sts, "rev-2")
	setVMClusterStatus(g, patchedGen)

	done := waitPhase(t, op, opsv1.UpgradePhaseSucceeded, time.Minute)
	for _, s := range done.Status.Steps {
		g.Expect(s.Phase).To(Equal(opsv1.StepPhaseSucceeded), s.ID)
	}
	pods := &corev1.PodList{}
	g.Expect(env.Client.List(ctx, pods, client.InNamespace(obs), client.MatchingLabels(labels))).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(2))
	for _, p := range pods.Items {
		node := &corev1.Node{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, node)).To(Succeed())
		g.Expect(node.Labels).To(HaveKeyWithValue(mock.NodeGroupLabel, "vms-new"))
	}
	g.Expect(nodesOf(g, "vms-old")).To(BeEmpty())
	g.Expect(mutationCounts(f)).To(Equal(map[string]int{
		"StartControlPlaneUpgrade cluster/rollout": 1,
		"StartCreateNodeGroup nodegroup/vms-new":   1,
		"StartDeleteNodeGroup nodegroup/vms-old":   1,
	}))
	// The StatefulSet itself was never patched by the operator.
	cur := &appsv1.StatefulSet{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(sts), cur)).To(Succeed())
	g.Expect(cur.Generation).To(Equal(int64(1)))
	for _, m := range cur.ManagedFields {
		g.Expect(m.Manager).NotTo(Equal("ops-operator"))
	}
}

func placePods(g Gomega, ns string, labels map[string]string, group, rev string) {
	nodes := nodesOf(g, group)
	g.Expect(nodes).NotTo(BeEmpty())
	for i := 0; i < 2; i++ {
		l := map[string]string{"controller-revision-hash": rev}
		for k, v := range labels {
			l[k] = v
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("vmstorage-vmcluster-%d", i), Labels: l},
			Spec:       corev1.PodSpec{NodeName: nodes[i%len(nodes)].Name, Containers: []corev1.Container{{Name: "vmstorage", Image: "victoriametrics/vmstorage:v1.100.0-cluster"}}},
		}
		g.Expect(env.Client.Create(context.Background(), pod)).To(Succeed())
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		g.Expect(env.Client.Status().Update(context.Background(), pod)).To(Succeed())
	}
}

func setSTSStatus(g Gomega, sts *appsv1.StatefulSet, rev string) {
	cur := &appsv1.StatefulSet{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(sts), cur)).To(Succeed())
	cur.Status = appsv1.StatefulSetStatus{
		ObservedGeneration: cur.Generation, Replicas: 2, ReadyReplicas: 2, CurrentReplicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2,
		CurrentRevision: rev, UpdateRevision: rev,
	}
	g.Expect(env.Client.Status().Update(context.Background(), cur)).To(Succeed())
}

func setVMClusterStatus(g Gomega, gen int64) {
	cur := vmstorage.NewVMCluster()
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: opsv1.VMClusterNamespace, Name: opsv1.VMClusterName}, cur)).To(Succeed())
	g.Expect(unstructured.SetNestedField(cur.Object, map[string]any{"observedGeneration": gen, "updateStatus": "operational"}, "status")).To(Succeed())
	g.Expect(env.Client.Status().Update(context.Background(), cur)).To(Succeed())
}

// helmValues decodes vmClusterHelmValues written as JSON.
func helmValues(raw string) opsv1.VMClusterHelmValues {
	v, err := opsv1.ParseVMClusterHelmValues([]byte(raw))
	if err != nil {
		panic(err)
	}
	return v
}
