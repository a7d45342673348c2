package security

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/components"
	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

// Rule (issue #24, components): a component installs only a chart of the
// administrator's catalog, never the vmcluster chart, at an allowed
// version, into the ops-server namespace or one its catalog entry allows;
// its chart and namespace never change after creation. Each attempt is a
// 400 naming the field, and nothing is created or changed. The same rule
// for a HelmRelease committed with kubectl is the chart's
// component-catalog admission policy (e2e/deploy TestComponentCatalogPolicy).
func TestComponentsStayInTheCatalog(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	f := start(t, func(c *config.Config) {
		c.Catalog.LocalDir = filepath.Join(root, "apiserver", "test", "integration", "testdata", "catalog")
		c.Catalog.Charts = []config.CatalogChart{{Name: "greeter", Versions: []string{"0.1.0"}}}
	})
	path := components.BasePath

	for _, tc := range []struct {
		name, body, field string
	}{
		{"a chart outside the catalog", `{"name":"x","chart":"nginx"}`, "chart"},
		{"the vmcluster chart", `{"name":"x","chart":"vmcluster"}`, "chart"},
		{"a version the catalog does not allow", `{"name":"x","chart":"greeter","version":"0.2.0"}`, "version"},
		{"another namespace", `{"name":"x","chart":"greeter","namespace":"kube-system"}`, "namespace"},
		{"a key the chart's schema does not allow", `{"name":"x","chart":"greeter","values":{"serviceAccountName":"ops-server"}}`, "values.serviceAccountName"},
	} {
		code, body := f.do(http.MethodPost, path, tc.body)
		g.Expect(code).To(Equal(http.StatusBadRequest), "%s: %s", tc.name, body)
		fields, _ := violationFields(t, body)
		g.Expect(fields).To(ContainElement(tc.field), "%s: %s", tc.name, body)
	}
	var list helmv2.HelmReleaseList
	g.Expect(f.kube.List(ctx, &list, client.InNamespace(f.ns))).To(Succeed())
	g.Expect(list.Items).To(BeEmpty(), "nothing is created")

	code, body := f.do(http.MethodPost, path, `{"name":"ok","chart":"greeter"}`)
	g.Expect(code).To(Equal(http.StatusAccepted), string(body))
	for _, tc := range []struct {
		name, body, field string
	}{
		{"moving to another namespace", `{"values":{},"namespace":"kube-system"}`, "namespace"},
		{"swapping the chart", `{"values":{},"chart":"vmcluster"}`, "chart"},
		{"a version the catalog does not allow", `{"values":{},"version":"0.2.0"}`, "version"},
	} {
		code, body := f.do(http.MethodPut, path+"/ok", tc.body)
		g.Expect(code).To(Equal(http.StatusBadRequest), "%s: %s", tc.name, body)
		fields, _ := violationFields(t, body)
		g.Expect(fields).To(ContainElement(tc.field), "%s: %s", tc.name, body)
	}
	hr := &helmv2.HelmRelease{}
	g.Expect(f.kube.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "ok"}, hr)).To(Succeed())
	g.Expect(hr.Generation).To(BeEquivalentTo(1), "no refused PUT changed the release")
	g.Expect(hr.Spec.TargetNamespace).To(BeEmpty())
	g.Expect(hr.Spec.Chart.Spec.Chart).To(Equal("greeter"))
	g.Expect(hr.Spec.Chart.Spec.Version).To(Equal("0.1.0"))
}
