package deploy

import (
	"context"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// TestComponentCatalogPolicy applies the chart's component-catalog
// ValidatingAdmissionPolicy, rendered with a catalog, to the real API
// server: a component HelmRelease committed directly must name a catalog
// chart, an allowed version and an allowed target namespace, with the
// REST API's words (docs/components.md); HelmReleases that are not
// components, or live in another namespace, are not its business.
func TestComponentCatalogPolicy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	other := env.NewNamespace(t)
	res := renderChart(t, "catalog-policy", ns, map[string]any{
		"vmclusterNamespace": ns,
		"apiserver": map[string]any{"catalog": map[string]any{"charts": []any{
			map[string]any{"name": "greeter", "versions": []any{"0.1.0"}},
			map[string]any{"name": "vmagent"},
			map[string]any{"name": "vector", "repository": "https://charts.example", "version": "1.0.0", "namespaces": []any{"logging"}},
		}}},
	})
	name := "catalog-policy-ops-server-component-catalog"
	for _, kind := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		obj := find(t, res.Objects, kind, name)
		g.Expect(apply(ctx, obj, false)).To(Succeed(), "applying %s", kind)
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
	cm := find(t, res.Objects, "ConfigMap", "catalog-policy-ops-server-apiserver")
	data, _, _ := unstructured.NestedString(cm.Object, "data", "apiserver.yaml")
	cfg := map[string]any{}
	g.Expect(yaml.UnmarshalStrict([]byte(data), &cfg)).To(Succeed())
	g.Expect(cfg["catalog"]).To(HaveKeyWithValue("charts", HaveLen(3)), "the catalog reaches ops-apiserver's configuration")

	release := func(namespace, component, chart, version, target string) *helmv2.HelmRelease {
		hr := &helmv2.HelmRelease{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: "c-"},
			Spec: helmv2.HelmReleaseSpec{
				Interval:        metav1.Duration{Duration: time.Hour},
				TargetNamespace: target,
				Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
					Chart: chart, Version: version,
					SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "repo"},
				}},
			},
		}
		if component != "" {
			hr.Labels = map[string]string{"app.kubernetes.io/managed-by": "ops-server", "observability.tidbcloud.com/component": component}
		}
		return hr
	}
	// The API server loads a new policy asynchronously: wait until it
	// refuses, on a dry run.
	g.Eventually(func() error {
		return env.Client.Create(ctx, release(ns, "x", "nginx", "1.0.0", ""), client.DryRunAll)
	}, timeout, 200*time.Millisecond).Should(MatchError(And(
		ContainSubstring("ValidatingAdmissionPolicy '"+name+"'"),
		ContainSubstring(`spec.chart.spec.chart: "nginx" is not in the catalog`),
	)))
	for _, tc := range []struct {
		name string
		hr   *helmv2.HelmRelease
		want string
	}{
		{"the vmcluster chart", release(ns, "x", "vmcluster", "0.1.0", ""), `"vmcluster" is not in the catalog`},
		{"a version the entry does not list", release(ns, "x", "greeter", "0.2.0", ""), "spec.chart.spec.version: chart greeter has no version 0.2.0 (available: 0.1.0)"},
		{"a repository chart's other version", release(ns, "x", "vector", "2.0.0", ""), "chart vector has no version 2.0.0 (available: 1.0.0)"},
		{"a namespace the entry does not allow", release(ns, "x", "vector", "1.0.0", "kube-system"), "spec.targetNamespace: chart vector may be installed into " + ns + ", logging only"},
	} {
		err := env.Client.Create(ctx, tc.hr)
		g.Expect(err).To(MatchError(ContainSubstring(tc.want)), tc.name)
	}
	list := &helmv2.HelmReleaseList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	g.Expect(list.Items).To(BeEmpty(), "refused releases are not created")

	for _, hr := range []*helmv2.HelmRelease{
		release(ns, "a", "greeter", "0.1.0", ""),
		release(ns, "b", "vmagent", "9.9.9", ""),       // a baked chart without versions: any
		release(ns, "c", "vector", "1.0.0", "logging"), // an allowed target namespace
		release(ns, "", "nginx", "1.0.0", ""),          // not a component
		release(other, "d", "nginx", "1.0.0", ""),      // not in the vmcluster namespace
	} {
		g.Expect(env.Client.Create(ctx, hr)).To(Succeed(), "%s %s", hr.Namespace, hr.Spec.Chart.Spec.Chart)
	}
}
