package upgrade_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/kustomize"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/manager"
	"github.com/tidbcloud/ops-server/operator/internal/vmstorage"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
)

// rolloutOp is a blue-green upgrade of node group "old" to "new" whose
// VMStorage rollout targets VMCluster ns/vmcluster.
func rolloutOp(ns, name, vmcluster string, f *cloudFixture) *opsv1.ClusterUpgradeOperation {
	return newOp(ns, name, f, func(s *opsv1.ClusterUpgradeOperationSpec) {
		s.NodeGroupUpgrades = []opsv1.NodeGroupUpgrade{{
			NodeGroupName: "old", Strategy: opsv1.StrategyBlueGreen, NewNodeGroupName: "new",
			RequiresVMStorageRollout: true,
			VMCluster:                &opsv1.VMClusterReference{Namespace: ns, Name: vmcluster},
			VMClusterHelmValues:      helmValues(fmt.Sprintf(`{"vmstorage":{"nodeSelector":{%q:"new"}}}`, mock.NodeGroupLabel)),
		}}
	})
}

func createVMCluster(t *testing.T, ns, name string, labels map[string]string) *unstructured.Unstructured {
	t.Helper()
	vmc := vmstorage.NewVMCluster()
	vmc.SetNamespace(ns)
	vmc.SetName(name)
	vmc.SetLabels(labels)
	g := NewWithT(t)
	g.Expect(unstructured.SetNestedField(vmc.Object, int64(2), "spec", "vmstorage", "replicaCount")).To(Succeed())
	g.Expect(env.Client.Create(context.Background(), vmc)).To(Succeed())
	return vmc
}

// TestRolloutTargetMissing: a vmCluster that does not exist fails the
// operation in preflight, with reason VMClusterNotFound, before any call to
// the cloud.
func TestRolloutTargetMissing(t *testing.T) {
	ns := env.NewNamespace(t)
	f := newCloud(t, "target-missing", 0, seed("old"))
	startOperator(t, ns, f, nil)
	op := rolloutOp(ns, "missing", "absent", f)
	NewWithT(t).Expect(env.Client.Create(context.Background(), op)).To(Succeed())

	done := waitPhase(t, op, opsv1.UpgradePhaseFailed, time.Minute)
	g := NewWithT(t)
	ready := apimeta.FindStatusCondition(done.Status.Conditions, opsv1.ReadyCondition)
	g.Expect(ready).NotTo(BeNil())
	g.Expect(ready.Reason).To(Equal(opsv1.VMClusterNotFoundReason))
	g.Expect(ready.Message).To(ContainSubstring("VMCluster " + ns + "/absent does not exist"))
	stalled := apimeta.FindStatusCondition(done.Status.Conditions, opsv1.StalledCondition)
	g.Expect(stalled).NotTo(BeNil())
	g.Expect(stalled.Reason).To(Equal(opsv1.VMClusterNotFoundReason))
	g.Expect(f.log.Calls()).To(BeEmpty(), "no cloud call before the target is known to exist")
	for _, s := range done.Status.Steps {
		g.Expect(s.Phase).To(Equal(opsv1.StepPhaseSkipped), s.ID)
	}
}

// TestRolloutRecordsOverlayAndTimesOut: the rollout of a VMCluster that a
// Flux HelmRelease installed records the values on the HelmRelease (keeping
// its other post-renderers) and patches the VMCluster; nobody rolls it out
// here, so the step times out naming what did not converge.
func TestRolloutRecordsOverlayAndTimesOut(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	f := newCloud(t, "target-timeout", 0, seed("old"))

	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "metrics"},
		Spec: helmv2.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: time.Hour},
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart: "vmcluster", SourceRef: helmv2.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "metrics"},
			}},
			PostRenderers: []helmv2.PostRenderer{{Kustomize: &helmv2.Kustomize{Images: []kustomize.Image{{Name: "vmstorage", NewTag: "v1"}}}}},
		},
	}
	g.Expect(env.Client.Create(ctx, hr)).To(Succeed())
	vmc := createVMCluster(t, ns, "metrics", map[string]string{vmstorage.FluxNameLabel: "metrics", vmstorage.FluxNamespaceLabel: ns})

	startOperator(t, ns, f, func(o *manager.Options) { o.Upgrade.RolloutTimeout = 2 * time.Second })
	op := rolloutOp(ns, "timeout", "metrics", f)
	g.Expect(env.Client.Create(ctx, op)).To(Succeed())

	done := waitPhase(t, op, opsv1.UpgradePhaseFailed, time.Minute)
	step := done.Status.Step(opsv1.NodeGroupStepID("old", opsv1.ActionRolloutVMStorage))
	g.Expect(step.Phase).To(Equal(opsv1.StepPhaseFailed))
	g.Expect(step.Message).To(ContainSubstring("Timed out waiting for the VMStorage rollout"))
	g.Expect(step.Message).To(ContainSubstring("StatefulSet "+ns+"/vmstorage-metrics"), "names what did not converge")
	g.Expect(step.Message).To(ContainSubstring("VMCluster " + ns + "/metrics"))
	g.Expect(mutationCounts(f)).NotTo(HaveKey("StartDeleteNodeGroup nodegroup/old"))

	// The VMCluster is patched.
	cur := vmstorage.NewVMCluster()
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(vmc), cur)).To(Succeed())
	sel, _, _ := unstructured.NestedStringMap(cur.Object, "spec", "vmstorage", "nodeSelector")
	g.Expect(sel).To(HaveKeyWithValue(mock.NodeGroupLabel, "new"))

	// The HelmRelease keeps its own post-renderer and gains ops-server's.
	got := &helmv2.HelmRelease{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(hr), got)).To(Succeed())
	g.Expect(got.Spec.PostRenderers).To(HaveLen(2))
	g.Expect(got.Spec.PostRenderers[0]).To(Equal(hr.Spec.PostRenderers[0]))
	ours := got.Spec.PostRenderers[1].Kustomize
	g.Expect(ours).NotTo(BeNil())
	g.Expect(ours.Patches).To(HaveLen(1))
	g.Expect(ours.Patches[0].Target).NotTo(BeNil())
	g.Expect(ours.Patches[0].Target.Kind).To(Equal("VMCluster"))
	g.Expect(ours.Patches[0].Target.Name).To(Equal("metrics"))
	g.Expect(strings.HasPrefix(ours.Patches[0].Patch, vmstorage.PostRendererMarker+"\n")).To(BeTrue(), ours.Patches[0].Patch)
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(vmstorage.HelmReleaseGVK)
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(hr), u)).To(Succeed())
	g.Expect(vmstorage.RecordedOverlay(u, "metrics")).To(Equal(map[string]any{
		"vmstorage": map[string]any{"nodeSelector": map[string]any{mock.NodeGroupLabel: "new"}},
	}))

	// Recording again is a no-op; a second move merges into the record.
	key := types.NamespacedName{Namespace: ns, Name: "metrics"}
	overlay := fmt.Sprintf(`{"vmstorage":{"nodeSelector":{%q:"new"}}}`, mock.NodeGroupLabel)
	changed, err := vmstorage.RecordOverlay(ctx, env.Client, key, "metrics", []byte(overlay))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeFalse())
	changed, err = vmstorage.RecordOverlay(ctx, env.Client, key, "metrics", []byte(`{"vmstorage":{"replicaCount":3}}`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(hr), u)).To(Succeed())
	g.Expect(vmstorage.RecordedOverlay(u, "metrics")).To(Equal(map[string]any{
		"vmstorage": map[string]any{"nodeSelector": map[string]any{mock.NodeGroupLabel: "new"}, "replicaCount": float64(3)},
	}))
}

// TestRolloutTargetDeletedMidway: a VMCluster deleted while its rollout
// waits fails the operation with reason VMClusterNotFound, naming what had
// not converged.
func TestRolloutTargetDeletedMidway(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	f := newCloud(t, "target-deleted", 0, seed("old"))
	vmc := createVMCluster(t, ns, "doomed", nil)
	startOperator(t, ns, f, nil)
	op := rolloutOp(ns, "deleted", "doomed", f)
	g.Expect(env.Client.Create(ctx, op)).To(Succeed())

	rolloutID := opsv1.NodeGroupStepID("old", opsv1.ActionRolloutVMStorage)
	g.Eventually(func(g Gomega) {
		cur := get(g, op)
		g.Expect(cur.Status.Step(rolloutID)).NotTo(BeNil())
		g.Expect(cur.Status.Step(rolloutID).Phase).To(Equal(opsv1.StepPhaseRunning))
		g.Expect(cur.Status.BlockedBy).NotTo(BeNil())
		g.Expect(cur.Status.BlockedBy.Reason).To(Equal(opsv1.BlockedByVMClusterNotOperational))
	}, time.Minute, 50*time.Millisecond).Should(Succeed())
	g.Expect(env.Client.Delete(ctx, vmc)).To(Succeed())

	done := waitPhase(t, op, opsv1.UpgradePhaseFailed, time.Minute)
	step := done.Status.Step(rolloutID)
	g.Expect(step.Phase).To(Equal(opsv1.StepPhaseFailed))
	g.Expect(step.Message).To(ContainSubstring("VMCluster " + ns + "/doomed does not exist (deleted during the rollout); not converged: "))
	g.Expect(step.Message).To(ContainSubstring("StatefulSet " + ns + "/vmstorage-doomed"))
	ready := apimeta.FindStatusCondition(done.Status.Conditions, opsv1.ReadyCondition)
	g.Expect(ready.Reason).To(Equal(opsv1.VMClusterNotFoundReason))
	g.Expect(mutationCounts(f)).NotTo(HaveKey("StartDeleteNodeGroup nodegroup/old"))
}

// TestRolloutTargetOutsideNamespaces: a vmCluster in a namespace other than
// the operation's own or observability fails the operation with reason
// InvalidSpec before any cloud call (the chart's admission policy refuses
// it first where installed).
func TestRolloutTargetOutsideNamespaces(t *testing.T) {
	ns := env.NewNamespace(t)
	f := newCloud(t, "target-elsewhere", 0, seed("old"))
	startOperator(t, ns, f, nil)
	op := rolloutOp(ns, "elsewhere", "metrics", f)
	op.Spec.NodeGroupUpgrades[0].VMCluster.Namespace = "kube-system"
	NewWithT(t).Expect(env.Client.Create(context.Background(), op)).To(Succeed())

	done := waitPhase(t, op, opsv1.UpgradePhaseFailed, time.Minute)
	g := NewWithT(t)
	ready := apimeta.FindStatusCondition(done.Status.Conditions, opsv1.ReadyCondition)
	g.Expect(ready.Reason).To(Equal(opsv1.InvalidSpecReason))
	g.Expect(ready.Message).To(ContainSubstring("nodeGroupUpgrades[0].vmCluster.namespace kube-system"))
	g.Expect(f.log.Calls()).To(BeEmpty())
}
