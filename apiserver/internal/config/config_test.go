package config_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"

	"github.com/tidbcloud/ops-server/apiserver/internal/config"
)

func TestDefaultsAreValid(t *testing.T) {
	g := NewWithT(t)
	cfg, err := config.Load("test", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.ListenAddress).To(Equal("127.0.0.1:8080"))
	g.Expect(cfg.Namespace).To(Equal("observability"))
	g.Expect(cfg.FieldManager).To(Equal("ops-server"))
	g.Expect(cfg.Chart.SourceType()).To(Equal(config.SourceLocal))
	g.Expect(cfg.Chart.LocalDir).To(Equal("deploy/charts/vmcluster"))
	g.Expect(cfg.Chart.Endpoints).To(HaveKey("prometheus"))
}

// The client-side limit towards the Kubernetes API is off by default
// (docs/apiserver.md, "Client-side rate limits"), and a positive one is
// taken as given.
func TestKubeAPIRateLimit(t *testing.T) {
	g := NewWithT(t)
	c, err := config.Load("test", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.KubeAPIQPS).To(BeEquivalentTo(config.NoClientRateLimit))
	c, err = config.Load("test", []string{"--kube-api-qps", "20", "--kube-api-burst", "40"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.KubeAPIQPS).To(BeEquivalentTo(20))
	g.Expect(c.KubeAPIBurst).To(Equal(40))
}

func TestFileAndFlags(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	g.Expect(os.WriteFile(file, []byte(`
listenAddress: 127.0.0.1:9000
namespace: from-file
chart:
  name: vm-distributed
  repository: oci://registry.example/helm/vm-chart
  version: 0.1.1
  endpoints:
    grafana: "http://{{.Release}}-grafana.{{.Namespace}}"
flux:
  releaseInterval: 5m
  upgradeRetries: 1
`), 0o600)).To(Succeed())

	cfg, err := config.Load("test", []string{"--config", file, "--namespace", "from-flag"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.ListenAddress).To(Equal("127.0.0.1:9000"), "from the file")
	g.Expect(cfg.Namespace).To(Equal("from-flag"), "flags win over the file")
	g.Expect(cfg.Chart.SourceType()).To(Equal(config.SourceOCI))
	g.Expect(cfg.Chart.Endpoints).To(Equal(map[string]string{"grafana": "http://{{.Release}}-grafana.{{.Namespace}}"}), "a map in the file replaces the default")
	g.Expect(cfg.Flux.ReleaseInterval.Duration).To(Equal(5 * time.Minute))
	g.Expect(cfg.Flux.UpgradeRetries).To(Equal(1))
	g.Expect(cfg.Flux.InstallRetries).To(Equal(3), "defaults stay for keys the file leaves out")

	g.Expect(os.WriteFile(file, []byte("namespace: x\nunknownKey: 1\n"), 0o600)).To(Succeed())
	_, err = config.Load("test", []string{"--config", file})
	g.Expect(err).To(MatchError(ContainSubstring("unknownKey")))

	_, err = config.Load("test", []string{"--config", filepath.Join(dir, "missing.yaml")})
	g.Expect(err).To(HaveOccurred())

	_, err = config.Load("test", []string{"--help"})
	g.Expect(err).To(MatchError(pflag.ErrHelp))
}

func TestEndpointFlag(t *testing.T) {
	g := NewWithT(t)
	cfg, err := config.Load("test", []string{"--chart-endpoint", "select=http://{{.Release}}:8481", "--chart-endpoint", "insert=http://{{.Release}}:8480"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Chart.Endpoints).To(Equal(map[string]string{"select": "http://{{.Release}}:8481", "insert": "http://{{.Release}}:8480"}))
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad listen address", []string{"--listen-address", "nope"}, "listenAddress"},
		{"bad namespace", []string{"--namespace", "Bad_NS"}, "namespace"},
		{"remote without version", []string{"--chart-repository", "https://charts.example"}, "chart.version is required"},
		{"bad scheme", []string{"--chart-repository", "ftp://x", "--chart-version", "1.0.0"}, "scheme"},
		{"credentials in URL", []string{"--chart-repository", "https://u:p@charts.example", "--chart-version", "1.0.0"}, "credentials"},
		{"insecure without oci", []string{"--chart-repository", "https://charts.example", "--chart-version", "1.0.0", "--chart-insecure"}, "insecure"},
		{"bad version", []string{"--chart-version", "v1"}, "chart.version"},
		{"no source", []string{"--chart-dir", ""}, "chart.repository and chart.localDir"},
		{"bad template", []string{"--chart-endpoint", "p={{.Nope}}"}, "chart.endpoints[p]"},
		{"bad endpoint name", []string{"--chart-endpoint", "P Q=x"}, "chart.endpoints"},
		{"body limit too high", []string{"--max-request-body-bytes", "99999999"}, "maxRequestBodyBytes"},
		{"bad log level", []string{"--log-level", "loud"}, "log.level"},
		{"bad retries", []string{"--flux-install-retries", "-2"}, "installRetries"},
		{"short interval", []string{"--flux-release-interval", "10ms"}, "releaseInterval"},
		{"bad backup namespace", []string{"--backup-namespace", "Bad_NS"}, "backups.namespace"},
		{"bad backup scheme", []string{"--backup-destination", "https://bucket/x"}, "backups.destination: scheme must be"},
		{"backup bucket missing", []string{"--backup-destination", "s3://"}, "backups.destination: must name a bucket"},
		{"relative fs backup", []string{"--backup-destination", "fs://backups"}, "backups.destination: an fs:// URL must be an absolute path"},
		{"backup query string", []string{"--backup-destination", "s3://b/p?x=1"}, "backups.destination: must not contain"},
		{"bad backup secret", []string{"--backup-credentials-secret", "Not_A_Name"}, "backups.credentialsSecret"},
		{"backup key without secret", []string{"--backup-credentials-secret-key", "credentials"}, "needs backups.credentialsSecret"},
		{"bad backup key", []string{"--backup-credentials-secret", "creds", "--backup-credentials-secret-key", "a/b"}, "backups.credentialsSecretKey"},
		{"disable auth on every interface", []string{"--insecure-disable-auth", "--listen-address", ":8080"}, "needs a loopback listenAddress"},
		{"disable auth on a routable address", []string{"--insecure-disable-auth", "--listen-address", "10.1.2.3:8080"}, "needs a loopback listenAddress"},
		{"disable auth on 0.0.0.0", []string{"--insecure-disable-auth", "--listen-address", "0.0.0.0:8080"}, "needs a loopback listenAddress"},
		{"disable auth on ::", []string{"--insecure-disable-auth", "--listen-address", "[::]:8080"}, "needs a loopback listenAddress"},
		{"pprof on every interface", []string{"--pprof-bind-address", ":6060"}, "pprofAddress (--pprof-bind-address) must be a loopback"},
		{"pprof on a routable address", []string{"--pprof-bind-address", "10.1.2.3:6060"}, "pprofAddress (--pprof-bind-address) must be a loopback"},
		{"tls cert without key", []string{"--tls-cert-file", "/tls/tls.crt"}, "go together"},
		{"tls key without cert", []string{"--tls-private-key-file", "/tls/tls.key"}, "go together"},
		{"empty audience", []string{"--auth-token-audiences", "ops-server,"}, "empty audience"},
		{"negative client limit", []string{"--client-rate-limit-qps", "-1"}, "clientRateLimitQPS"},
		{"zero kube API QPS", []string{"--kube-api-qps", "0"}, "kubeAPIQPS must be -1 (no client-side limit) or positive"},
		{"negative kube API QPS other than -1", []string{"--kube-api-qps", "-2"}, "kubeAPIQPS must be -1"},
		{"zero kube API burst", []string{"--kube-api-burst", "0"}, "kubeAPIBurst must be positive"},
		{"no cache", []string{"--auth-cache-max-entries", "0"}, "cacheMaxEntries"},
		{"relative fs root", []string{"--backup-fs-roots", "/ok,relative"}, `backups.fsRoots: backup fs root "relative": must be an absolute path`},
		{"fs root with dot-dot", []string{"--backup-fs-roots", "/var/../etc"}, "must not contain '..'"},
		{"fs default without roots", []string{"--backup-destination", "fs:///var/backups"}, "backups.destination: fs:// destinations are not allowed: the administrator configured no backup fs roots"},
		{"fs default outside the roots", []string{"--backup-fs-roots", "/srv", "--backup-destination", "fs:///var/backups/../../srv2"}, "backups.destination: an fs:// destination must be inside one of the backup fs roots the administrator allowed: /srv"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := config.Load("test", tt.args)
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
		})
	}
}

func TestPprofOnLoopback(t *testing.T) {
	cfg, err := config.Load("test", []string{"--pprof-bind-address", "127.0.0.1:6060"})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(cfg.PprofAddress).To(Equal("127.0.0.1:6060"))
	cfg, err = config.Load("test", nil)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(cfg.PprofAddress).To(BeEmpty(), "profiling is off by default")
}

func TestDisableAuthOnLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:8080", "127.3.4.5:0", "[::1]:8080", "localhost:8080", "LOCALHOST:1"} {
		_, err := config.Load("test", []string{"--insecure-disable-auth", "--listen-address", addr})
		NewWithT(t).Expect(err).NotTo(HaveOccurred(), addr)
	}
	cfg, err := config.Load("test", []string{"--auth-token-audiences", "ops-server", "--tls-cert-file", "c", "--tls-private-key-file", "k"})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(cfg.Auth.TokenAudiences).To(Equal([]string{"ops-server"}))
	NewWithT(t).Expect(cfg.TLS.Enabled()).To(BeTrue())
}

func TestBackups(t *testing.T) {
	g := NewWithT(t)
	cfg, err := config.Load("test", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Backups).To(Equal(config.BackupsConfig{Namespace: "observability", RestoresEnabled: true}), "same namespace as the upgrades; no default destination; restores on")

	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	g.Expect(os.WriteFile(file, []byte(`
backups:
  namespace: backups
  destination: s3://o11y-backups/prod
  credentialsSecret: from-file
  credentialsSecretKey: credentials
  fsRoots: [/var/backups, /srv/vm]
  restoresEnabled: false
`), 0o600)).To(Succeed())
	cfg, err = config.Load("test", []string{"--config", file, "--backup-credentials-secret", "from-flag"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Backups).To(Equal(config.BackupsConfig{
		Namespace: "backups", Destination: "s3://o11y-backups/prod", CredentialsSecret: "from-flag", CredentialsSecretKey: "credentials",
		FSRoots: []string{"/var/backups", "/srv/vm"},
	}))

	cfg, err = config.Load("test", []string{"--backup-fs-roots", "/var/backups,/srv/vm", "--backup-destination", "fs:///var/backups/vm"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Backups.Destination).To(Equal("fs:///var/backups/vm"))
	g.Expect(cfg.Backups.FSRoots).To(Equal([]string{"/var/backups", "/srv/vm"}))
}

func TestCatalog(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		// wantErr is a substring of the error; empty: valid.
		wantErr string
	}{
		{name: "none", yaml: ""},
		{name: "baked and remote", yaml: `
catalog:
  charts:
    - name: vmagent
    - name: vector
      repository: https://helm.vector.dev
      version: 0.40.0
      versions: [0.39.0, 0.40.0]
      namespaces: [logging]
    - name: operator
      repository: oci://registry.example/charts
      version: 1.0.0
      insecure: true
`},
		{name: "the vmcluster chart is refused", yaml: "catalog:\n  charts:\n    - name: vmcluster\n", wantErr: "served by /vmclusters"},
		{name: "twice", yaml: "catalog:\n  charts:\n    - name: a\n    - name: a\n", wantErr: `catalog.charts[1].name "a": listed twice`},
		{name: "bad name", yaml: "catalog:\n  charts:\n    - name: A_b\n", wantErr: "catalog.charts[0].name"},
		{name: "remote without version", yaml: "catalog:\n  charts:\n    - name: a\n      repository: https://charts.example\n", wantErr: "catalog.charts[0].version is required"},
		{name: "default version not allowed", yaml: "catalog:\n  charts:\n    - name: a\n      version: 1.0.0\n      versions: [2.0.0]\n", wantErr: "not one of versions"},
		{name: "bad version", yaml: "catalog:\n  charts:\n    - name: a\n      versions: [latest]\n", wantErr: "not a semantic version"},
		{name: "credentials in URL", yaml: "catalog:\n  charts:\n    - name: a\n      version: 1.0.0\n      repository: https://u:p@charts.example\n", wantErr: "credentials do not belong"},
		{name: "insecure https", yaml: "catalog:\n  charts:\n    - name: a\n      version: 1.0.0\n      repository: https://charts.example\n      insecure: true\n", wantErr: "insecure only applies"},
		{name: "bad namespace", yaml: "catalog:\n  charts:\n    - name: a\n      namespaces: [Bad]\n", wantErr: "catalog.charts[0].namespaces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			cfg, err := config.Parse([]byte(tc.yaml))
			g.Expect(err).NotTo(HaveOccurred())
			err = cfg.Validate()
			if tc.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
		})
	}
}

func TestCatalogLocalDir(t *testing.T) {
	g := NewWithT(t)
	cfg := config.Default()
	g.Expect(cfg.CatalogLocalDir()).To(Equal(cfg.Chart.LocalDir), "defaults to chart.localDir")
	cfg.Catalog.LocalDir = "/etc/catalog"
	g.Expect(cfg.CatalogLocalDir()).To(Equal("/etc/catalog"))
	cfg.Chart.Repository, cfg.Chart.Version = "https://charts.example", "1.0.0"
	g.Expect(cfg.HasLocalCharts()).To(BeFalse())
	cfg.Catalog.Charts = []config.CatalogChart{{Name: "vmagent"}}
	g.Expect(cfg.HasLocalCharts()).To(BeTrue(), "a baked catalog chart needs the local repository")
}

func TestValidateWatch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*config.WatchConfig)
		ok     bool
	}{
		{"defaults", func(*config.WatchConfig) {}, true},
		{"heartbeat below 1s", func(w *config.WatchConfig) { w.Heartbeat.Duration = 500 * time.Millisecond }, false},
		{"maxDuration below 1m", func(w *config.WatchConfig) { w.MaxDuration.Duration = 30 * time.Second }, false},
		{"heartbeat not below maxDuration", func(w *config.WatchConfig) { w.Heartbeat.Duration = w.MaxDuration.Duration }, false},
		{"no stream per caller", func(w *config.WatchConfig) { w.MaxPerCaller = 0 }, false},
		{"total below per caller", func(w *config.WatchConfig) { w.MaxTotal = w.MaxPerCaller - 1 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := config.Default()
			tc.change(&c.Watch)
			if tc.ok {
				g.Expect(c.Validate()).To(Succeed())
			} else {
				g.Expect(c.Validate()).To(MatchError(ContainSubstring("watch:")))
			}
		})
	}
}
