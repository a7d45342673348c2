package bootstrap

import (
	"encoding/json"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

func comp(name, chart string, deps ...string) opsv1.StackComponent {
	return opsv1.StackComponent{Name: name, Chart: chart, DependsOn: deps}
}

func stackOf(allow bool, cs ...opsv1.StackComponent) *opsv1.ObservabilityStack {
	return &opsv1.ObservabilityStack{
		ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "observability"},
		Spec:       opsv1.ObservabilityStackSpec{Components: cs, AllowDataRemoval: allow},
	}
}

func existingHR(name, chart, stack string) *helmv2.HelmRelease {
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "observability"},
		Spec: helmv2.HelmReleaseSpec{Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{Chart: chart}}}}
	if stack != "" {
		hr.Labels = map[string]string{LabelStack: stack, LabelComponent: name}
	}
	return hr
}

func byName(hrs ...*helmv2.HelmRelease) map[string]*helmv2.HelmRelease {
	m := map[string]*helmv2.HelmRelease{}
	for _, hr := range hrs {
		m[hr.Name] = hr
	}
	return m
}

func applied(p Plan) []string {
	var out []string
	for _, hr := range p.Apply {
		out = append(out, hr.Name)
	}
	return out
}

func TestDecide(t *testing.T) {
	defaultStack := []opsv1.StackComponent{
		comp("vm-operator", "vm-operator"), comp("vmcluster", "vmcluster", "vm-operator"), comp("vmagent", "vmagent", "vmcluster"),
	}
	cases := []struct {
		name      string
		stack     *opsv1.ObservabilityStack
		existing  map[string]*helmv2.HelmRelease
		err       string
		apply     []string
		delete    []string
		refused   []string
		conflicts []string
	}{
		{name: "fresh stack: every component applied in declaration order",
			stack: stackOf(false, defaultStack...), apply: []string{"vm-operator", "vmcluster", "vmagent"}},
		{name: "removed vmagent is deleted",
			stack:    stackOf(false, defaultStack[:2]...),
			existing: byName(existingHR("vm-operator", "vm-operator", "default"), existingHR("vmcluster", "vmcluster", "default"), existingHR("vmagent", "vmagent", "default")),
			apply:    []string{"vm-operator", "vmcluster"}, delete: []string{"vmagent"}},
		{name: "removed vmcluster is refused without allowDataRemoval",
			stack:    stackOf(false, defaultStack[0]),
			existing: byName(existingHR("vm-operator", "vm-operator", "default"), existingHR("vmcluster", "vmcluster", "default")),
			apply:    []string{"vm-operator"}, refused: []string{"vmcluster"}},
		{name: "removed vmcluster is deleted with allowDataRemoval",
			stack:    stackOf(true, defaultStack[0]),
			existing: byName(existingHR("vm-operator", "vm-operator", "default"), existingHR("vmcluster", "vmcluster", "default")),
			apply:    []string{"vm-operator"}, delete: []string{"vmcluster"}},
		{name: "changing a vmcluster component's chart is refused without allowDataRemoval",
			stack:    stackOf(false, comp("vmcluster", "vmagent")),
			existing: byName(existingHR("vmcluster", "vmcluster", "default")),
			refused:  []string{"vmcluster"}},
		{name: "HelmReleases of other stacks and unmanaged ones are left alone",
			stack:    stackOf(false, defaultStack[0]),
			existing: byName(existingHR("other", "vmagent", "another"), existingHR("mine", "vmagent", "")),
			apply:    []string{"vm-operator"}},
		{name: "a name taken by an unmanaged HelmRelease is a conflict, not a takeover",
			stack:    stackOf(false, defaultStack[0], comp("vmcluster", "vmcluster")),
			existing: byName(existingHR("vmcluster", "vmcluster", "")),
			apply:    []string{"vm-operator"}, conflicts: []string{"vmcluster"}},
		{name: "dependsOn cycle",
			stack: stackOf(false, comp("a", "x", "c"), comp("b", "x", "a"), comp("c", "x", "b")),
			err:   "spec.components: dependsOn cycle a -> c -> b -> a"},
		{name: "dependsOn an undeclared component",
			stack: stackOf(false, comp("a", "x", "nope")),
			err:   `spec.components[0].dependsOn: "nope" is not another component of this stack`},
		{name: "dependsOn itself",
			stack: stackOf(false, comp("a", "x", "a")),
			err:   `spec.components[0].dependsOn: "a" is not another component of this stack`},
		{name: "duplicate names",
			stack: stackOf(false, comp("a", "x"), comp("a", "y")),
			err:   `spec.components[1].name: "a" is declared twice`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			existing := tc.existing
			if existing == nil {
				existing = map[string]*helmv2.HelmRelease{}
			}
			p, err := Decide(tc.stack, existing, Config{RepositoryURL: "http://127.0.0.1:8089"})
			if tc.err != "" {
				g.Expect(err).To(MatchError(tc.err))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(applied(p)).To(Equal(tc.apply))
			g.Expect(p.Delete).To(Equal(tc.delete))
			g.Expect(keys(p.Refused)).To(ConsistOf(tc.refused))
			g.Expect(keys(p.Conflicts)).To(ConsistOf(tc.conflicts))
		})
	}
}

func keys(m map[string]string) []string {
	out := []string{}
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestReleaseMapsTheComponent(t *testing.T) {
	g := NewWithT(t)
	c := comp("vmagent", "vmagent", "vmcluster", "vm-operator")
	c.Version = "0.1.0"
	c.Values = &runtime.RawExtension{Raw: []byte(`{"scrapeInterval":"10s"}`)}
	p, err := Decide(stackOf(false, comp("vm-operator", "vm-operator"), comp("vmcluster", "vmcluster"), c), nil,
		Config{RepositoryURL: "http://127.0.0.1:8089"})
	g.Expect(err).NotTo(HaveOccurred())
	hr := p.Apply[2]
	g.Expect(hr.Namespace).To(Equal("observability"))
	g.Expect(hr.Labels).To(Equal(map[string]string{LabelStack: "default", LabelComponent: "vmagent"}))
	g.Expect(hr.Spec.ReleaseName).To(Equal("vmagent"))
	g.Expect(hr.Spec.DependsOn).To(Equal([]meta.DependencyReference{{Name: "vmcluster"}, {Name: "vm-operator"}}))
	g.Expect(hr.Spec.Chart.Spec.Chart).To(Equal("vmagent"))
	g.Expect(hr.Spec.Chart.Spec.Version).To(Equal("0.1.0"))
	g.Expect(hr.Spec.Chart.Spec.SourceRef.Name).To(Equal(SourceName("default")))
	g.Expect(hr.Spec.Install.CRDs).To(Equal(helmv2.CreateReplace))
	g.Expect(hr.Spec.Upgrade.CRDs).To(Equal(helmv2.CreateReplace))
	var values map[string]any
	g.Expect(json.Unmarshal(hr.Spec.Values.Raw, &values)).To(Succeed())
	g.Expect(values).To(Equal(map[string]any{"scrapeInterval": "10s"}))
	g.Expect(p.Source.Spec.URL).To(Equal("http://127.0.0.1:8089"))
	g.Expect(p.Source.Name).To(Equal("default-charts"))
	g.Expect(p.Apply[0].Spec.DependsOn).To(BeEmpty())
}

// TestFluxShardLabels: with a shard configured (the default), every
// HelmRelease, its HelmChart (spec.chart.metadata.labels) and the
// HelmRepository carry sharding.fluxcd.io/key, so only ops-server's Flux
// controllers reconcile them; without one, nothing is added.
func TestFluxShardLabels(t *testing.T) {
	g := NewWithT(t)
	stack := stackOf(false, comp("vm-operator", "vm-operator"), comp("vmcluster", "vmcluster"))
	cfg := DefaultConfig()
	cfg.RepositoryURL = "http://127.0.0.1:8089"
	p, err := Decide(stack, nil, cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Apply).NotTo(BeEmpty())
	for _, hr := range p.Apply {
		g.Expect(hr.Labels).To(HaveKeyWithValue(opsv1.FluxShardLabel, opsv1.DefaultFluxShard), hr.Name)
		g.Expect(hr.Labels).To(HaveKeyWithValue(LabelStack, "default"), hr.Name)
		g.Expect(hr.Spec.Chart.ObjectMeta).NotTo(BeNil(), hr.Name)
		g.Expect(hr.Spec.Chart.ObjectMeta.Labels).To(Equal(map[string]string{opsv1.FluxShardLabel: opsv1.DefaultFluxShard}), hr.Name)
	}
	g.Expect(p.Source.Labels).To(HaveKeyWithValue(opsv1.FluxShardLabel, opsv1.DefaultFluxShard))

	cfg.FluxShard = ""
	p, err = Decide(stack, nil, cfg)
	g.Expect(err).NotTo(HaveOccurred())
	for _, hr := range p.Apply {
		g.Expect(hr.Labels).NotTo(HaveKey(opsv1.FluxShardLabel), hr.Name)
		g.Expect(hr.Spec.Chart.ObjectMeta).To(BeNil(), hr.Name)
	}
	g.Expect(p.Source.Labels).NotTo(HaveKey(opsv1.FluxShardLabel))
}
