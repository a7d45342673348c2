package bench

import (
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

func apiTemplate() *vmTemplate {
	labels := map[string]string{"app.kubernetes.io/managed-by": "ops-server", "observability.tidbcloud.com/vmcluster": "bench-vm-0000"}
	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{
			Name: "bench-vm-0000", Namespace: "observability", UID: "uid-1", ResourceVersion: "42", Generation: 1,
			Labels: labels, Annotations: map[string]string{meta.ReconcileRequestAnnotation: "2026-01-01T00:00:00Z", "other": "kept"},
			Finalizers: []string{"finalizers.fluxcd.io"},
		},
		Spec: helmv2.HelmReleaseSpec{
			ReleaseName: "bench-vm-0000",
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart: "vmcluster", Version: "0.1.0",
				SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "bench-vm-0000"},
			}},
			Values: &apiextensionsv1.JSON{Raw: []byte(`{"vmstorage":{"replicaCount":1}}`)},
		},
		Status: helmv2.HelmReleaseStatus{ObservedGeneration: 1},
	}
	repo := &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{
			Name: "bench-vm-0000", Namespace: "observability", UID: "uid-2", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "helm.toolkit.fluxcd.io/v2", Kind: "HelmRelease", Name: "bench-vm-0000", UID: "uid-1", Controller: ptr.To(true)}},
		},
		Spec: sourcev1.HelmRepositorySpec{URL: "http://127.0.0.1:1234"},
	}
	return &vmTemplate{hr: hr, repo: repo}
}

func TestReleaseCopy(t *testing.T) {
	g := NewWithT(t)
	tmpl := apiTemplate()
	hr := tmpl.releaseFor("bench-direct", "bench-vm-0007", true)
	g.Expect(hr.Name).To(Equal("bench-vm-0007"))
	g.Expect(hr.Namespace).To(Equal("bench-direct"))
	g.Expect(hr.UID).To(BeEmpty())
	g.Expect(hr.ResourceVersion).To(BeEmpty())
	g.Expect(hr.Finalizers).To(BeEmpty())
	g.Expect(hr.Status).To(Equal(helmv2.HelmReleaseStatus{}))
	g.Expect(hr.Labels).To(Equal(map[string]string{"app.kubernetes.io/managed-by": "ops-server", "observability.tidbcloud.com/vmcluster": "bench-vm-0007"}))
	g.Expect(hr.Annotations["other"]).To(Equal("kept"))
	g.Expect(hr.Annotations[meta.ReconcileRequestAnnotation]).NotTo(Equal("2026-01-01T00:00:00Z"))
	g.Expect(hr.Spec.ReleaseName).To(Equal("bench-vm-0007"))
	g.Expect(hr.Spec.Chart.Spec.SourceRef.Name).To(Equal("bench-vm-0007"))
	g.Expect(hr.Spec.Chart.Spec.Version).To(Equal("0.1.0"))
	g.Expect(hr.Spec.Values.Raw).To(MatchJSON(`{"vmstorage":{"replicaCount":1}}`))
	// The template is untouched.
	g.Expect(tmpl.hr.Spec.ReleaseName).To(Equal("bench-vm-0000"))
	g.Expect(tmpl.hr.Labels["observability.tidbcloud.com/vmcluster"]).To(Equal("bench-vm-0000"))

	plain := tmpl.releaseFor("observability", "run-flux-001", false)
	g.Expect(plain.Labels).To(BeEmpty())
}

func TestRepositoryCopy(t *testing.T) {
	g := NewWithT(t)
	tmpl := apiTemplate()
	hr := tmpl.releaseFor("bench-direct", "bench-vm-0007", true)
	hr.UID = "uid-new"
	repo := tmpl.repositoryFor(hr, true)
	g.Expect(repo.Name).To(Equal("bench-vm-0007"))
	g.Expect(repo.Namespace).To(Equal("bench-direct"))
	g.Expect(repo.UID).To(BeEmpty())
	g.Expect(repo.Spec.URL).To(Equal("http://127.0.0.1:1234"))
	g.Expect(repo.Labels["observability.tidbcloud.com/vmcluster"]).To(Equal("bench-vm-0007"))
	g.Expect(repo.OwnerReferences).To(Equal([]metav1.OwnerReference{{
		APIVersion: "helm.toolkit.fluxcd.io/v2", Kind: "HelmRelease", Name: "bench-vm-0007", UID: "uid-new", Controller: ptr.To(true),
	}}))
	g.Expect(tmpl.repo.OwnerReferences[0].UID).To(BeEquivalentTo("uid-1"))
}

func TestUpgradeCopy(t *testing.T) {
	g := NewWithT(t)
	src := &opsv1.ClusterUpgradeOperation{
		ObjectMeta: metav1.ObjectMeta{
			Name: "upgrade-abcde", GenerateName: "upgrade-", Namespace: "observability", UID: "u",
			Labels:      map[string]string{labelCluster: "bench-cluster-00"},
			Annotations: map[string]string{"ops.observability.tidbcloud.com/initiated-by": "someone"},
		},
		Spec: opsv1.ClusterUpgradeOperationSpec{K8sClusterName: "bench-cluster-00", Region: "local", CloudProvider: "mock", TargetVersion: "1.30",
			NodeGroupUpgrades: []opsv1.NodeGroupUpgrade{{NodeGroupName: "ng", Strategy: opsv1.StrategyBlueGreen, NewNodeGroupName: "ng-130"}}},
		Status: opsv1.ClusterUpgradeOperationStatus{Phase: opsv1.UpgradePhasePending},
	}
	op := upgradeCopy(src, "bench-direct", "bench-op-007")
	g.Expect(op.Name).To(BeEmpty())
	g.Expect(op.GenerateName).To(Equal("upgrade-"))
	g.Expect(op.Namespace).To(Equal("bench-direct"))
	g.Expect(op.Labels).To(Equal(map[string]string{labelCluster: "bench-op-007"}))
	g.Expect(op.Annotations).To(Equal(src.Annotations))
	g.Expect(op.Spec.K8sClusterName).To(Equal("bench-op-007"))
	g.Expect(op.Spec.NodeGroupUpgrades).To(Equal(src.Spec.NodeGroupUpgrades))
	g.Expect(op.Status).To(Equal(opsv1.ClusterUpgradeOperationStatus{}))
	g.Expect(src.Spec.K8sClusterName).To(Equal("bench-cluster-00"))
}

func TestReleaseReadiness(t *testing.T) {
	cond := func(t, s string, gen int64) metav1.Condition {
		return metav1.Condition{Type: t, Status: metav1.ConditionStatus(s), ObservedGeneration: gen, Reason: "R"}
	}
	for _, tc := range []struct {
		name  string
		conds []metav1.Condition
		want  readiness
	}{
		{"no status yet", nil, readiness{}},
		{"ready for the current generation", []metav1.Condition{cond(meta.ReadyCondition, "True", 2)}, readiness{ready: true}},
		{"ready for an older generation", []metav1.Condition{cond(meta.ReadyCondition, "True", 1)}, readiness{}},
		{"install failed", []metav1.Condition{cond(meta.ReadyCondition, "False", 2), cond(helmv2.ReleasedCondition, "False", 2)}, readiness{failed: true}},
		{"stalled", []metav1.Condition{cond(meta.StalledCondition, "True", 2)}, readiness{failed: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Status: helmv2.HelmReleaseStatus{Conditions: tc.conds}}
			NewWithT(t).Expect(releaseReadiness(hr)).To(Equal(tc.want))
		})
	}
}
