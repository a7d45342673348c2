package stack

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// vmagent in the local stack. The VictoriaMetrics operator renders a
// VMAgent as a Deployment whose vmagent container reads
// -promscrape.config from an emptyDir that its config-reloader sidecar
// fills from the Secret vmagent-<name> (key vmagent.yaml.gz), and whose
// scrape jobs discover their targets with kubernetes_sd_configs from
// inside the cluster. The backer runs bin/vmagent for such a Pod with:
//
//   - the Secret's configuration translated by localScrapeConfig: the
//     discovery talks to the local API server (kubeconfig_file), and a
//     target that is the port of a backed Pod is scraped at that Pod's
//     local port (relabeling rules appended to every job, keyed on the
//     __meta_kubernetes_* labels the discovery sets), its instance label
//     left as the in-cluster address;
//   - every -remoteWrite.url of a Service (http://<svc>.<ns>.svc:<port>/...)
//     pointing at the Service proxy (localRemoteWrite);
//   - -promscrape.configCheckInterval, so that vmagent reloads the file
//     when the Secret or the backed Pods change (the config-reloader's job).

// vmagentConfigKey is the key of the operator's Secret holding the
// gzipped scrape configuration.
const vmagentConfigKey = "vmagent.yaml.gz"

// vmagentConfigVolume is the Pod volume of that Secret.
const vmagentConfigVolume = "config"

// containerEnv is the container's environment with literal values (a
// value from a Secret or a field is left out).
func containerEnv(c *corev1.Container) []string {
	var out []string
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			out = append(out, e.Name+"="+e.Value)
		}
	}
	return out
}

// localRemoteWrite points every -remoteWrite.url of args that names a
// Service (http://<service>.<namespace>[.svc[.<domain>]][:<port>]/<path>,
// a Service of ns without a namespace part) at the Service proxy:
// <services>/<namespace>/<service>/<path>. Other URLs are kept.
func localRemoteWrite(args []string, ns, services string) ([]string, error) {
	out := make([]string, 0, len(args))
	for _, a := range args {
		name, value, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !ok || name != "remoteWrite.url" {
			out = append(out, a)
			continue
		}
		var urls []string
		for _, raw := range strings.Split(value, ",") {
			u, err := url.Parse(raw)
			if err != nil {
				return nil, fmt.Errorf("-remoteWrite.url=%s: %w", raw, err)
			}
			host := u.Hostname()
			parts := strings.Split(host, ".")
			if host == "localhost" || strings.HasPrefix(host, "127.") || len(parts) < 1 || parts[0] == "" {
				urls = append(urls, raw)
				continue
			}
			svcNS := ns
			if len(parts) >= 2 {
				svcNS = parts[1]
			}
			urls = append(urls, strings.TrimSuffix(services, "/")+"/"+svcNS+"/"+parts[0]+u.EscapedPath()+querySuffix(u))
		}
		out = append(out, "-remoteWrite.url="+strings.Join(urls, ","))
	}
	return out, nil
}

func querySuffix(u *url.URL) string {
	if u.RawQuery == "" {
		return ""
	}
	return "?" + u.RawQuery
}

// localScrapeConfig translates the operator's scrape configuration for a
// vmagent on the host: every kubernetes_sd_configs entry reads the API
// server of kubeconfig (in-cluster settings dropped), and every job ends
// with relabeling rules that keep the in-cluster address as the instance
// label (when the job set none) and scrape a backed Pod's container port
// at its local port (ports: Pod, container port, local port).
func localScrapeConfig(raw []byte, kubeconfig string, ports map[types.NamespacedName]map[int]int) ([]byte, error) {
	var cfg map[string]any
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("parsing the scrape configuration: %w", err)
	}
	if cfg == nil {
		cfg = map[string]any{}
	}
	rules := localTargetRules(ports)
	jobs, _ := cfg["scrape_configs"].([]any)
	for _, j := range jobs {
		job, ok := j.(map[string]any)
		if !ok {
			continue
		}
		sds, _ := job["kubernetes_sd_configs"].([]any)
		for _, sd := range sds {
			m, ok := sd.(map[string]any)
			if !ok {
				continue
			}
			for _, k := range []string{"api_server", "bearer_token", "bearer_token_file", "basic_auth", "authorization", "tls_config", "oauth2"} {
				delete(m, k)
			}
			m["kubeconfig_file"] = kubeconfig
		}
		relabel, _ := job["relabel_configs"].([]any)
		for _, r := range rules {
			relabel = append(relabel, r)
		}
		job["relabel_configs"] = relabel
	}
	return yaml.Marshal(cfg)
}

// localTargetRules are the relabeling rules of localScrapeConfig, in a
// stable order.
func localTargetRules(ports map[types.NamespacedName]map[int]int) []map[string]any {
	rules := []map[string]any{{
		"source_labels": []string{"instance", "__address__"},
		"separator":     ";",
		"regex":         ";(.+)",
		"target_label":  "instance",
		"replacement":   "$1",
	}}
	pods := make([]types.NamespacedName, 0, len(ports))
	for p := range ports {
		pods = append(pods, p)
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].String() < pods[j].String() })
	for _, p := range pods {
		cps := make([]int, 0, len(ports[p]))
		for cp := range ports[p] {
			cps = append(cps, cp)
		}
		sort.Ints(cps)
		for _, cp := range cps {
			rules = append(rules, map[string]any{
				"source_labels": []string{"__meta_kubernetes_namespace", "__meta_kubernetes_pod_name", "__address__"},
				"separator":     ";",
				"regex":         regexp.QuoteMeta(p.Namespace) + ";" + regexp.QuoteMeta(p.Name) + ";.*:" + strconv.Itoa(cp),
				"target_label":  "__address__",
				"replacement":   fmt.Sprintf("127.0.0.1:%d", ports[p][cp]),
			})
		}
	}
	return rules
}

// gunzip returns the decompressed b, bounded to 16 MiB.
func gunzip(b []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	return io.ReadAll(io.LimitReader(r, 16<<20))
}

// snapshot returns a copy of every Pod's local ports.
func (r *portRegistry) snapshot() map[types.NamespacedName]map[int]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[types.NamespacedName]map[int]int, len(r.ports))
	for p, m := range r.ports {
		cp := make(map[int]int, len(m))
		for k, v := range m {
			cp[k] = v
		}
		out[p] = cp
	}
	return out
}

// writeScrapeConfig writes the vmagent Pod's local scrape configuration
// from the operator's Secret (named by the Pod's config volume), when it
// changed.
func (b *podBacker) writeScrapeConfig(ctx context.Context, p *corev1.Pod, bp *backedPod) error {
	secret := ""
	for _, v := range p.Spec.Volumes {
		if v.Name == vmagentConfigVolume && v.Secret != nil {
			secret = v.Secret.SecretName
		}
	}
	if secret == "" {
		return fmt.Errorf("no Secret volume %q with the scrape configuration", vmagentConfigVolume)
	}
	s, err := b.cs.CoreV1().Secrets(p.Namespace).Get(ctx, secret, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the scrape configuration: %w", err)
	}
	raw, err := gunzip(s.Data[vmagentConfigKey])
	if err != nil {
		return fmt.Errorf("Secret %s/%s key %s: %w", p.Namespace, secret, vmagentConfigKey, err)
	}
	out, err := localScrapeConfig(raw, b.kubeconfig, b.ports.snapshot())
	if err != nil {
		return fmt.Errorf("Secret %s/%s: %w", p.Namespace, secret, err)
	}
	if bytes.Equal(out, bp.wrote) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(bp.config), 0o755); err != nil {
		return err
	}
	tmp := bp.config + ".tmp"
	if err := os.WriteFile(tmp, out, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, bp.config); err != nil {
		return err
	}
	bp.wrote = out
	return nil
}
