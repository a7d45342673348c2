package integration

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
)

// TestVMClusterOCISource installs from an oci:// repository served by an
// in-process registry on 127.0.0.1 (plain http: insecure).
func TestVMClusterOCISource(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := env.NewNamespace(t)
	s := startServer(t, ns, func(c *config.Config) {
		c.Chart.Repository = ociRepoURL
		c.Chart.Insecure = true
		c.Chart.Version = "0.1.0"
	})

	created := s.create(map[string]any{"name": "oci1", "values": map[string]any{"retentionPeriod": "3"}})
	repo := &sourcev1.HelmRepository{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "oci1"}, repo)).To(Succeed())
	g.Expect(repo.Spec.Type).To(Equal(sourcev1.HelmRepositoryTypeOCI))
	g.Expect(repo.Spec.URL).To(Equal(ociRepoURL))
	g.Expect(repo.Spec.Insecure).To(BeTrue())

	running := s.waitStatus(created.ID, vmclusters.StatusRunning)
	g.Expect(running.HelmReleaseInfo.Version).To(Equal("0.1.0"))
	g.Eventually(func(g Gomega) {
		data := configMap(g, ns, "oci1")
		g.Expect(data).To(HaveKeyWithValue("retentionPeriod", "3"))
		g.Expect(data).To(HaveKeyWithValue("chartVersion", "0.1.0"))
	}).Should(Succeed())
}

// TestVMClusterLocalChart installs a chart directory "baked into the
// image": the apiserver packages it and serves it on localhost, and the
// HelmRepository points there.
func TestVMClusterLocalChart(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := env.NewNamespace(t)
	s := startServer(t, ns, func(c *config.Config) {
		c.Chart.Repository = ""
		c.Chart.Version = ""
		c.Chart.LocalDir = chart0
	})
	localURL := s.app.LocalRepositoryURL()
	g.Expect(localURL).To(HavePrefix("http://127.0.0.1:"))
	resp, err := http.Get(localURL + "/index.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	index, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(index)).To(ContainSubstring("vmcluster-0.1.0.tgz"))

	// The versions of a local chart are known: another one is refused.
	code, b := s.do(http.MethodPost, vmclusters.BasePath, map[string]any{"name": "local0", "helm_release_info": map[string]any{"version": "0.9.0"}})
	g.Expect(code).To(Equal(http.StatusBadRequest), string(b))
	g.Expect(violations(t, b)).To(ConsistOf("helm_release_info.version"))

	created := s.create(map[string]any{"name": "local1", "values": map[string]any{"retentionPeriod": "5"}})
	g.Expect(created.HelmReleaseInfo.Version).To(Equal("0.1.0"), "the default version is the local chart's")
	repo := &sourcev1.HelmRepository{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "local1"}, repo)).To(Succeed())
	g.Expect(repo.Spec.URL).To(Equal(localURL))

	s.waitStatus(created.ID, vmclusters.StatusRunning)
	g.Eventually(func(g Gomega) {
		g.Expect(configMap(g, ns, "local1")).To(HaveKeyWithValue("retentionPeriod", "5"))
	}).Should(Succeed())
	// GET: values are the chart's defaults with the overrides, as Helm
	// applied them; the overrides alone stay in values_overrides; the
	// deployed version and the last Helm action come from the status.
	got := s.get("local1")
	g.Expect(got.ValuesOverrides).To(MatchJSON(`{"retentionPeriod":"5"}`))
	applied := map[string]any{}
	g.Expect(json.Unmarshal(got.Values, &applied)).To(Succeed())
	g.Expect(applied).To(HaveKeyWithValue("retentionPeriod", "5"), "the override wins")
	g.Expect(applied).To(HaveKeyWithValue("failOnPurpose", false), "a chart default")
	g.Expect(applied).To(HaveKeyWithValue("vmselect", HaveKeyWithValue("service", HaveKeyWithValue("type", "ClusterIP"))), "a nested chart default")
	g.Eventually(func(g Gomega) {
		info := s.get("local1").HelmReleaseInfo
		g.Expect(info.DeployedVersion).To(Equal("0.1.0"))
		g.Expect(info.LastAction).To(HaveValue(And(HaveField("Action", "install"), HaveField("Result", "Succeeded"), HaveField("Time", Not(BeEmpty())))))
	}).Should(Succeed())
}
