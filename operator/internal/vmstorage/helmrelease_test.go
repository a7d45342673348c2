package vmstorage_test

import (
	"context"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidbcloud/ops-server/operator/internal/vmstorage"
)

// TestOwningHelmRelease finds the HelmRelease of a VMCluster by its Flux
// labels, else by its Helm annotations (release name and namespace, with
// helm-controller's defaults: spec.releaseName, else [targetNamespace-]name),
// and nothing for a VMCluster no HelmRelease installed.
func TestOwningHelmRelease(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	target := env.NewNamespace(t)
	release := func(name, releaseName, targetNamespace string) {
		hr := &helmv2.HelmRelease{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: helmv2.HelmReleaseSpec{
				Interval: metav1.Duration{Duration: time.Hour}, ReleaseName: releaseName, TargetNamespace: targetNamespace,
				Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
					Chart: "vmcluster", SourceRef: helmv2.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "x"},
				}},
			},
		}
		g.Expect(env.Client.Create(ctx, hr)).To(Succeed())
	}
	release("by-labels", "", "")
	release("named", "custom", "")
	release("targeted", "", target)

	vmc := func(labels, annotations map[string]string) string {
		u := vmstorage.NewVMCluster()
		u.SetNamespace(ns)
		u.SetLabels(labels)
		u.SetAnnotations(annotations)
		hr, err := vmstorage.OwningHelmRelease(ctx, env.Client, u)
		g.Expect(err).NotTo(HaveOccurred())
		if hr == nil {
			return ""
		}
		return hr.GetNamespace() + "/" + hr.GetName()
	}
	g.Expect(vmc(map[string]string{vmstorage.FluxNameLabel: "by-labels", vmstorage.FluxNamespaceLabel: ns}, nil)).To(Equal(ns + "/by-labels"))
	g.Expect(vmc(nil, map[string]string{vmstorage.HelmReleaseNameAnnotation: "custom", vmstorage.HelmReleaseNamespaceAnnotation: ns})).To(Equal(ns + "/named"))
	g.Expect(vmc(nil, map[string]string{vmstorage.HelmReleaseNameAnnotation: target + "-targeted", vmstorage.HelmReleaseNamespaceAnnotation: target})).To(Equal(ns + "/targeted"))
	g.Expect(vmc(nil, map[string]string{vmstorage.HelmReleaseNameAnnotation: "by-labels", vmstorage.HelmReleaseNamespaceAnnotation: ns})).To(Equal(ns + "/by-labels"))
	g.Expect(vmc(map[string]string{vmstorage.FluxNameLabel: "gone", vmstorage.FluxNamespaceLabel: ns}, nil)).To(BeEmpty(), "the HelmRelease the labels name is gone")
	g.Expect(vmc(nil, map[string]string{vmstorage.HelmReleaseNameAnnotation: "plain-helm", vmstorage.HelmReleaseNamespaceAnnotation: ns})).To(BeEmpty(), "installed by Helm, not by Flux")
	g.Expect(vmc(nil, nil)).To(BeEmpty())
}
