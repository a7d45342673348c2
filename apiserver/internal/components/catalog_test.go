package components

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

func TestLookup(t *testing.T) {
	cat := Catalog{VMClusterChart: "vmcluster", Entries: map[string]Entry{
		"vmagent": {Source: vmclusters.ChartSource{Name: "vmagent"}},
		"vector":  {Source: vmclusters.ChartSource{Name: "vector"}, Namespaces: []string{"logging"}},
	}}
	for _, tc := range []struct {
		chart    string
		problem  string
		approved bool
	}{
		{chart: "vmagent", approved: true},
		{chart: "nginx", problem: `"nginx" is not in the catalog (available: vector, vmagent)`},
		{chart: "vmcluster", problem: `"vmcluster" is the vmcluster chart: create vmclusters with /api/v1/observability-ops/vmclusters`},
	} {
		t.Run(tc.chart, func(t *testing.T) {
			g := NewWithT(t)
			e, v := cat.Lookup(tc.chart)
			if tc.approved {
				g.Expect(v).To(BeNil())
				g.Expect(e.Source.Name).To(Equal(tc.chart))
				return
			}
			g.Expect(v).NotTo(BeNil())
			g.Expect(v.Field).To(Equal("chart"))
			g.Expect(v.Description).To(Equal(tc.problem))
		})
	}
	_, v := Catalog{}.Lookup("x")
	NewWithT(t).Expect(v.Description).To(ContainSubstring("the catalog is empty"))
}

func TestNamespaceProblem(t *testing.T) {
	g := NewWithT(t)
	e := Entry{Source: vmclusters.ChartSource{Name: "vector"}, Namespaces: []string{"logging"}}
	g.Expect(e.NamespaceProblem("observability", "observability")).To(BeEmpty())
	g.Expect(e.NamespaceProblem("logging", "observability")).To(BeEmpty())
	g.Expect(e.NamespaceProblem("kube-system", "observability")).To(Equal("chart vector may be installed into observability, logging only"))
}

func TestReleaseIsAComponentNotAVMCluster(t *testing.T) {
	g := NewWithT(t)
	tr := vmclusters.Translator{Namespace: "observability", Chart: vmclusters.ChartSource{Name: "vector", DefaultVersion: "1.0.0", URL: "https://charts.example"},
		Flux: config.Default().Flux}
	now := time.Unix(0, 0)
	hr := Release(tr, CreateRequest{Name: "logs", Chart: "vector", Namespace: "logging", Values: []byte(`{}`), IdempotencyKey: "k"}, "observability", now)
	g.Expect(hr.Namespace).To(Equal("observability"))
	g.Expect(hr.Spec.TargetNamespace).To(Equal("logging"))
	g.Expect(hr.Spec.ReleaseName).To(Equal("logs"))
	g.Expect(hr.GetReleaseNamespace()).To(Equal("logging"))
	g.Expect(hr.Spec.Chart.Spec.Chart).To(Equal("vector"))
	g.Expect(hr.Spec.Chart.Spec.Version).To(Equal("1.0.0"))
	g.Expect(hr.Annotations).To(HaveKeyWithValue(opsv1.AnnotationIdempotencyKey, "k"))
	g.Expect(IsManaged(hr)).To(BeTrue())
	g.Expect(vmclusters.IsManaged(hr)).To(BeFalse(), "vmclusters do not see components")
	hr.UID = "u"
	g.Expect(Source(tr, hr, now).Labels).To(Equal(opsv1.FluxShardLabels(opsv1.DefaultFluxShard, Labels("logs"))))
	g.Expect(hr.Labels).To(HaveKeyWithValue(opsv1.FluxShardLabel, opsv1.DefaultFluxShard))
	g.Expect(hr.Spec.Chart.ObjectMeta.Labels).To(HaveKeyWithValue(opsv1.FluxShardLabel, opsv1.DefaultFluxShard))

	home := Release(tr, CreateRequest{Name: "logs", Chart: "vector", Values: []byte(`{}`)}, "observability", now)
	g.Expect(home.Spec.TargetNamespace).To(BeEmpty(), "the ops-server namespace is the HelmRelease's own")
	g.Expect(SameAsRequest(tr, home, CreateRequest{Name: "logs", Chart: "vector", Namespace: "observability", Values: []byte(`{}`)}, "observability")).To(BeTrue())
	g.Expect(SameAsRequest(tr, home, CreateRequest{Name: "logs", Chart: "vector", Namespace: "logging", Values: []byte(`{}`)}, "observability")).To(BeFalse())

	vm := tr.Release(vmclusters.CreateRequest{Name: "vm", Values: []byte(`{}`)}, now)
	g.Expect(IsManaged(vm)).To(BeFalse(), "components do not see vmclusters")
}
