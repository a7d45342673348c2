package vmclusters

import (
	"testing"

	. "github.com/onsi/gomega"
	chart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/operator/pkg/chartrepo"
)

// packaged packages one chart per version of name, as the local
// repository does at start-up.
func packaged(t *testing.T, name string, versions ...string) []*chartrepo.Chart {
	t.Helper()
	repo := chartrepo.New()
	var out []*chartrepo.Chart
	for _, v := range versions {
		c, err := repo.AddChart(&chart.Chart{
			Metadata: &chart.Metadata{APIVersion: "v2", Name: name, Version: v},
			Values:   map[string]any{"version": v},
		})
		if err != nil {
			t.Fatalf("packaging %s %s: %v", name, v, err)
		}
		out = append(out, c)
	}
	return out
}

func TestNewChartSource(t *testing.T) {
	local := append(packaged(t, "vmcluster", "0.1.0", "0.10.0", "0.2.0"), packaged(t, "other", "9.0.0")...)
	for _, tc := range []struct {
		name    string
		chart   config.ChartConfig
		want    ChartSource
		wantErr string
	}{
		{name: "oci repository as configured",
			chart: config.ChartConfig{Name: "vmcluster", Version: "1.0.0", Repository: "oci://registry.example/charts", Insecure: true, SecretName: "creds"},
			want:  ChartSource{Name: "vmcluster", DefaultVersion: "1.0.0", URL: "oci://registry.example/charts", OCI: true, Insecure: true, SecretName: "creds"}},
		{name: "https repository as configured",
			chart: config.ChartConfig{Name: "vmcluster", Version: "1.0.0", Repository: "https://charts.example"},
			want:  ChartSource{Name: "vmcluster", DefaultVersion: "1.0.0", URL: "https://charts.example"}},
		{name: "baked: the highest version by semver when none is configured",
			chart: config.ChartConfig{Name: "vmcluster", LocalDir: "/charts"},
			want:  ChartSource{Name: "vmcluster", DefaultVersion: "0.10.0", URL: "http://127.0.0.1:8089", Versions: []string{"0.1.0", "0.10.0", "0.2.0"}}},
		{name: "baked: the configured version",
			chart: config.ChartConfig{Name: "vmcluster", Version: "0.2.0", LocalDir: "/charts"},
			want:  ChartSource{Name: "vmcluster", DefaultVersion: "0.2.0", URL: "http://127.0.0.1:8089", Versions: []string{"0.1.0", "0.10.0", "0.2.0"}}},
		{name: "baked: the configured version is not packaged",
			chart:   config.ChartConfig{Name: "vmcluster", Version: "0.3.0", LocalDir: "/charts"},
			wantErr: `no chart "vmcluster" version 0.3.0 in /charts`},
		{name: "baked: no chart of that name",
			chart:   config.ChartConfig{Name: "missing", LocalDir: "/charts"},
			wantErr: `no chart "missing" in /charts`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := NewChartSource(tc.chart, local, "http://127.0.0.1:8089")
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(tc.wantErr))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			if tc.chart.SourceType() == config.SourceLocal {
				// Every known version has its defaults and a validator.
				g.Expect(got.Defaults).To(HaveLen(len(tc.want.Versions)))
				g.Expect(got.Validators).To(HaveLen(len(tc.want.Versions)))
				for _, v := range tc.want.Versions {
					g.Expect(got.Defaults[v]).To(HaveKeyWithValue("version", v))
					g.Expect(got.Validators[v]).NotTo(BeNil())
				}
			}
			got.Defaults, got.Validators = nil, nil
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestNewCatalogChartSource(t *testing.T) {
	local := packaged(t, "vmagent", "1.0.0", "1.1.0", "2.0.0")
	for _, tc := range []struct {
		name    string
		chart   config.CatalogChart
		want    ChartSource
		wantErr string
	}{
		{name: "remote: the allowed versions are the configured ones",
			chart: config.CatalogChart{Name: "vmagent", Version: "1.0.0", Versions: []string{"1.0.0", "1.2.0"}, Repository: "https://charts.example"},
			want:  ChartSource{Name: "vmagent", DefaultVersion: "1.0.0", URL: "https://charts.example", Versions: []string{"1.0.0", "1.2.0"}}},
		{name: "remote: only the default version when none are listed",
			chart: config.CatalogChart{Name: "vmagent", Version: "1.0.0", Repository: "oci://registry.example/charts", Insecure: true},
			want:  ChartSource{Name: "vmagent", DefaultVersion: "1.0.0", URL: "oci://registry.example/charts", OCI: true, Insecure: true, Versions: []string{"1.0.0"}}},
		{name: "baked: the highest allowed version",
			chart: config.CatalogChart{Name: "vmagent", Versions: []string{"1.0.0", "1.1.0"}},
			want:  ChartSource{Name: "vmagent", DefaultVersion: "1.1.0", URL: "http://127.0.0.1:8089", Versions: []string{"1.0.0", "1.1.0"}}},
		{name: "baked: a configured version that is not allowed",
			chart:   config.CatalogChart{Name: "vmagent", Version: "2.0.0", Versions: []string{"1.0.0"}},
			wantErr: `no chart "vmagent" version 2.0.0 in /catalog`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := NewCatalogChartSource(tc.chart, local, "/catalog", "http://127.0.0.1:8089")
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(tc.wantErr))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			got.Defaults, got.Validators = nil, nil
			g.Expect(got).To(Equal(tc.want))
		})
	}
}
