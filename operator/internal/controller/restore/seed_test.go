package restore_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/kustomize"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/controller/restore"
	"github.com/tidbcloud/ops-server/operator/internal/vmstorage"
)

// seeded makes the fixture's VMCluster "vmc" one created from a backup:
// its HelmRelease carries the restore-hold post-renderer (beside another
// one), the VMCluster's vmstorage pod metadata and every pod the hold of
// the ClusterRestore seed-vmc.
func seeded(t *testing.T, f *fixture) (hrKey types.NamespacedName, owner string) {
	g := NewWithT(t)
	ctx := context.Background()
	owner = f.ns + "/" + opsv1.SeedRestoreName("vmc")
	raw, err := json.Marshal(opsv1.RestoreHoldPostRenderer("vmc", owner))
	g.Expect(err).NotTo(HaveOccurred())
	var hold helmv2.PostRenderer
	g.Expect(json.Unmarshal(raw, &hold)).To(Succeed())
	other := helmv2.PostRenderer{Kustomize: &helmv2.Kustomize{Patches: []kustomize.Patch{{Patch: "# someone else's\n{}", Target: &kustomize.Selector{Kind: "VMCluster", Name: "vmc"}}}}}
	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "vmc"},
		Spec: helmv2.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: time.Hour},
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart: "vmcluster", SourceRef: helmv2.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "vmc"},
			}},
			PostRenderers: []helmv2.PostRenderer{other, hold},
		},
	}
	g.Expect(env.Client.Create(ctx, hr)).To(Succeed())
	vmc := vmstorage.NewVMCluster()
	vmc.SetNamespace(f.ns)
	vmc.SetName("vmc")
	vmc.SetLabels(map[string]string{vmstorage.FluxNameLabel: "vmc", vmstorage.FluxNamespaceLabel: f.ns})
	g.Expect(unstructured.SetNestedField(vmc.Object, map[string]any{"podMetadata": map[string]any{
		"annotations": map[string]any{restore.HoldAnnotation: owner, "keep": "me"},
	}}, "spec", "vmstorage")).To(Succeed())
	g.Expect(env.Client.Create(ctx, vmc)).To(Succeed())
	for _, name := range f.pods {
		pod := &corev1.Pod{}
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: f.ns, Name: name}, pod)).To(Succeed())
		patch := client.MergeFrom(pod.DeepCopy())
		pod.Annotations[restore.HoldAnnotation] = owner
		g.Expect(env.Client.Patch(ctx, pod, patch)).To(Succeed())
	}
	f.kubelet(t)
	return client.ObjectKeyFromObject(hr), owner
}

func templateHold(t *testing.T, f *fixture, hrKey types.NamespacedName) (postRenderers []helmv2.PostRenderer, annotations map[string]string) {
	g := NewWithT(t)
	ctx := context.Background()
	hr := &helmv2.HelmRelease{}
	g.Expect(env.Client.Get(ctx, hrKey, hr)).To(Succeed())
	vmc := vmstorage.NewVMCluster()
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: f.ns, Name: "vmc"}, vmc)).To(Succeed())
	annotations, _, _ = unstructured.NestedStringMap(vmc.Object, "spec", "vmstorage", "podMetadata", "annotations")
	return hr.Spec.PostRenderers, annotations
}

// A vmcluster created from a backup: its pods start held; the seeding
// restore restores them (vmrestore once each, across restarts), releases
// them and lifts the hold from the HelmRelease and the VMCluster, leaving
// everything else there as it was.
func TestSeedingRestoreLiftsTheTemplateHold(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, 2)
	hrKey, _ := seeded(t, f)
	bin, _ := fakeVMRestore(t, 0)
	rs := &opsv1.ClusterRestore{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: opsv1.SeedRestoreName("vmc")},
		Spec: opsv1.ClusterRestoreSpec{Backup: "nightly", VMCluster: &opsv1.VMClusterReference{Name: "vmc"}, Strategy: opsv1.RestoreAllAtOnce}}
	g.Expect(env.Client.Create(context.Background(), rs)).To(Succeed())
	rs = reconcileWithRestarts(t, f, bin, client.ObjectKeyFromObject(rs), func([]string) {})

	g.Expect(rs.Status.Phase).To(Equal(opsv1.RestorePhaseSucceeded))
	starts := startsLog(t, f)
	g.Expect(starts).To(HaveLen(2))
	for _, n := range starts {
		g.Expect(n).To(Equal(1))
	}
	g.Expect(f.kubelet(t)).To(BeEmpty(), "every replica released")
	renderers, annotations := templateHold(t, f, hrKey)
	g.Expect(renderers).To(HaveLen(1))
	g.Expect(renderers[0].Kustomize.Patches[0].Patch).To(HavePrefix("# someone else's"))
	g.Expect(annotations).To(Equal(map[string]string{"keep": "me"}))
}

// A seeding restore that failed keeps the hold: the volumes are incomplete.
func TestFailedSeedingRestoreKeepsTheTemplateHold(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, 2)
	hrKey, owner := seeded(t, f)
	bin, _ := fakeVMRestore(t, 1)
	rs := &opsv1.ClusterRestore{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: opsv1.SeedRestoreName("vmc")},
		Spec: opsv1.ClusterRestoreSpec{Backup: "nightly", VMCluster: &opsv1.VMClusterReference{Name: "vmc"}, Strategy: opsv1.RestoreAllAtOnce}}
	g.Expect(env.Client.Create(context.Background(), rs)).To(Succeed())
	rs = reconcileWithRestarts(t, f, bin, client.ObjectKeyFromObject(rs), func([]string) {})

	g.Expect(rs.Status.Phase).To(Equal(opsv1.RestorePhaseFailed))
	renderers, annotations := templateHold(t, f, hrKey)
	g.Expect(renderers).To(HaveLen(2))
	g.Expect(annotations).To(HaveKeyWithValue(restore.HoldAnnotation, owner))
}
