package stack

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/tidbcloud/ops-server/operator/testenv"
)

func TestLocalRemoteWrite(t *testing.T) {
	const proxy = "http://127.0.0.1:8427"
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"a Service URL with its namespace",
			[]string{"-httpListenAddr=:8429", "-remoteWrite.url=http://vminsert-vmcluster.observability.svc:8480/insert/0/prometheus/api/v1/write"},
			[]string{"-httpListenAddr=:8429", "-remoteWrite.url=" + proxy + "/observability/vminsert-vmcluster/insert/0/prometheus/api/v1/write"}},
		{"a Service of the Pod's namespace, several URLs, a query",
			[]string{"-remoteWrite.url=http://vminsert-a:8480/insert/1/prometheus/api/v1/write?extra_label=x,http://vminsert-b.other.svc.cluster.local:8480/w"},
			[]string{"-remoteWrite.url=" + proxy + "/obs/vminsert-a/insert/1/prometheus/api/v1/write?extra_label=x," + proxy + "/other/vminsert-b/w"}},
		{"a local URL is kept",
			[]string{"--remoteWrite.url=http://127.0.0.1:9000/api/v1/write"},
			[]string{"-remoteWrite.url=http://127.0.0.1:9000/api/v1/write"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := localRemoteWrite(tc.args, "obs", proxy)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

// operatorScrapeConfig is the shape of the configuration the
// VictoriaMetrics operator (v0.74) generates for a VMServiceScrape of a
// VMCluster's vmstorage: endpoints discovery in one namespace, from inside
// the cluster.
const operatorScrapeConfig = `global:
  scrape_interval: 10s
  external_labels:
    prometheus: observability/vmagent
scrape_configs:
- job_name: serviceScrape/observability/vmstorage-vmcluster/0
  honor_labels: false
  kubernetes_sd_configs:
  - role: endpoints
    namespaces:
      names:
      - observability
    bearer_token_file: /var/run/secrets/kubernetes.io/serviceaccount/token
  relabel_configs:
  - action: keep
    source_labels: [__meta_kubernetes_service_label_app_kubernetes_io_name]
    regex: vmstorage
  - action: keep
    source_labels: [__meta_kubernetes_endpoint_port_name]
    regex: http
  - source_labels: [__meta_kubernetes_service_name]
    target_label: job
  metrics_path: /metrics
`

func TestLocalScrapeConfig(t *testing.T) {
	g := NewWithT(t)
	ports := map[types.NamespacedName]map[int]int{
		{Namespace: "observability", Name: "vmstorage-vmcluster-0"}:   {8482: 40001, 8400: 40002},
		{Namespace: "observability", Name: "vminsert-vmcluster-7d9f"}: {8480: 40003},
	}
	out, err := localScrapeConfig([]byte(operatorScrapeConfig), "/state/kubeconfig", ports)
	g.Expect(err).NotTo(HaveOccurred())

	var cfg struct {
		Global        map[string]any `json:"global"`
		ScrapeConfigs []struct {
			JobName     string           `json:"job_name"`
			SD          []map[string]any `json:"kubernetes_sd_configs"`
			Relabel     []map[string]any `json:"relabel_configs"`
			MetricsPath string           `json:"metrics_path"`
		} `json:"scrape_configs"`
	}
	g.Expect(yaml.Unmarshal(out, &cfg)).To(Succeed())
	g.Expect(cfg.Global).To(HaveKey("external_labels"), "the rest is kept")
	g.Expect(cfg.ScrapeConfigs).To(HaveLen(1))
	job := cfg.ScrapeConfigs[0]
	g.Expect(job.MetricsPath).To(Equal("/metrics"))
	g.Expect(job.SD).To(ConsistOf(And(
		HaveKeyWithValue("kubeconfig_file", "/state/kubeconfig"),
		HaveKeyWithValue("role", "endpoints"),
		HaveKey("namespaces"),
		Not(HaveKey("bearer_token_file")),
	)), "discovery reads the local API server")
	// The operator's rules first, unchanged, then ours: the instance
	// label, then one rule per backed Pod's port, sorted.
	g.Expect(job.Relabel).To(HaveLen(3 + 1 + 3))
	g.Expect(job.Relabel[0]).To(HaveKeyWithValue("action", "keep"))
	g.Expect(job.Relabel[3]).To(HaveKeyWithValue("target_label", "instance"))
	g.Expect(job.Relabel[4]).To(And(
		HaveKeyWithValue("regex", `observability;vminsert-vmcluster-7d9f;.*:8480`),
		HaveKeyWithValue("target_label", "__address__"),
		HaveKeyWithValue("replacement", "127.0.0.1:40003"),
	))
	g.Expect(job.Relabel[6]).To(And(
		HaveKeyWithValue("regex", `observability;vmstorage-vmcluster-0;.*:8482`),
		HaveKeyWithValue("replacement", "127.0.0.1:40001"),
	))
}

// The translated configuration is one the real vmagent accepts (its
// -dryRun checks -promscrape.config and exits).
func TestLocalScrapeConfigAcceptedByVMAgent(t *testing.T) {
	g := NewWithT(t)
	bin, err := testenv.Binary("vmagent")
	g.Expect(err).NotTo(HaveOccurred())
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	g.Expect(os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: admin
  user: {token: x}
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
`), 0o600)).To(Succeed())
	out, err := localScrapeConfig([]byte(operatorScrapeConfig), kubeconfig, map[types.NamespacedName]map[int]int{
		{Namespace: "observability", Name: "vmstorage-vmcluster-0"}: {8482: 40001},
	})
	g.Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(dir, "vmagent.yaml")
	g.Expect(os.WriteFile(path, out, 0o644)).To(Succeed())
	cmd := exec.Command(bin, "-dryRun", "-promscrape.config="+path, "-promscrape.config.strictParse=true")
	log, err := cmd.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "vmagent -dryRun:\n%s", log)
}

func TestContainerEnv(t *testing.T) {
	g := NewWithT(t)
	c := &corev1.Container{Env: []corev1.EnvVar{
		{Name: "WATCH_NAMESPACE", Value: ""},
		{Name: "VM_APPREADYTIMEOUT", Value: "60s"},
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
	}}
	g.Expect(containerEnv(c)).To(Equal([]string{"WATCH_NAMESPACE=", "VM_APPREADYTIMEOUT=60s"}))
}
