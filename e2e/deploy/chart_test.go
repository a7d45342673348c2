package deploy

import (
	"context"
	"encoding/json"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/providers"
	"github.com/tidbcloud/ops-server/operator/testenv"

	"github.com/tidbcloud/ops-server/e2e/deploy/render"
)

// renderCase is one set of values the chart is rendered with.
type renderCase struct {
	name  string
	files []string
}

// renderCases are the default values and every example values file.
func renderCases(t *testing.T) []renderCase {
	cases := []renderCase{{name: "default"}}
	examples := exampleValues(t)
	names := make([]string, 0, len(examples))
	for n := range examples {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		cases = append(cases, renderCase{name: n, files: []string{examples[n]}})
	}
	return cases
}

// TestChartAppliesToAPIServer renders the chart for the default values and
// every example values file and applies every object — CRDs first — to the
// real API server with server-side dry-run: each must be accepted.
func TestChartAppliesToAPIServer(t *testing.T) {
	for _, tc := range renderCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := env.NewNamespace(t)
			res := renderChart(t, "ops-server", ns, nil, tc.files...)

			g.Expect(res.CRDs).NotTo(BeEmpty())
			for _, crd := range res.CRDs {
				g.Expect(crd.GetKind()).To(Equal("CustomResourceDefinition"))
				g.Expect(apply(ctx, crd, true)).To(Succeed(), describe(crd))
			}

			// The namespaces the objects go to must exist (a dry-run
			// Namespace is not there for the objects that follow it).
			kinds := map[string]int{}
			for _, obj := range res.Objects {
				kinds[obj.GetKind()]++
				if obj.GetKind() == "Namespace" {
					g.Expect(ensureNamespace(ctx, obj.GetName())).To(Succeed())
				}
				if n := obj.GetNamespace(); n != "" {
					g.Expect(ensureNamespace(ctx, n)).To(Succeed())
				}
			}
			for _, obj := range res.Objects {
				g.Expect(apply(ctx, obj, true)).To(Succeed(), describe(obj))
			}

			g.Expect(kinds).To(HaveKeyWithValue("Deployment", 2))
			g.Expect(kinds).To(HaveKeyWithValue("ServiceAccount", 2))
			g.Expect(kinds).To(HaveKeyWithValue("Service", 3))
			g.Expect(kinds).To(HaveKey("ConfigMap"))
			g.Expect(kinds).To(HaveKey("ClusterRole"))
			g.Expect(kinds).To(HaveKey("Role"))
		})
	}
}

// TestNamespacedObjectsNameTheirNamespace: `helm template` output (and so
// the kustomize base) is only complete when every namespaced object says
// where it goes.
func TestNamespacedObjectsNameTheirNamespace(t *testing.T) {
	g := NewWithT(t)
	res := renderChart(t, "ops-server", "observability", nil)
	clusterScoped := map[string]bool{"ClusterRole": true, "ClusterRoleBinding": true, "Namespace": true,
		"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true}
	for _, obj := range res.Objects {
		if clusterScoped[obj.GetKind()] {
			g.Expect(obj.GetNamespace()).To(BeEmpty(), describe(obj))
			continue
		}
		g.Expect(obj.GetNamespace()).NotTo(BeEmpty(), describe(obj))
	}
}

// TestSchemaRejectsMisspelledKeys: values.schema.json has
// additionalProperties false at every level, so a typo is an error that
// names the key, not a silently ignored setting.
func TestSchemaRejectsMisspelledKeys(t *testing.T) {
	cases := []struct {
		name   string
		values string
		want   string
	}{
		{name: "top level", values: `imagePullSecret: []`, want: "imagePullSecret"},
		{name: "operator", values: `operator: {replicaz: 2}`, want: "replicaz"},
		{name: "nested chart source", values: `apiserver: {chart: {repo: https://charts.example.com}}`, want: "repo"},
		{name: "flux sidecar", values: `flux: {sourceController: {resource: {}}}`, want: "resource"},
		{name: "network policy", values: `networkPolicy: {enable: true}`, want: "enable"},
		{name: "image", values: `operator: {image: {tags: v1}}`, want: "tags"},
		{name: "env item", values: `operator: {env: [{name: A, vaule: b}]}`, want: "vaule"},
		{name: "wrong type", values: `operator: {replicas: two}`, want: "replicas"},
		{name: "bad duration", values: `operator: {pollInterval: 10 seconds}`, want: "pollInterval"},
		{name: "wildcard verb in extra rules", values: `flux: {helmController: {extraRules: [{apiGroups: [""], resources: [pods], verbs: ["*"]}]}}`, want: "verbs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			vals := map[string]any{}
			g.Expect(yaml.Unmarshal([]byte(tc.values), &vals)).To(Succeed())
			_, err := render.Render(render.Options{ChartDir: chartDir(), ReleaseName: "ops-server", Namespace: "observability", Values: vals})
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring("schema"))
			g.Expect(err.Error()).To(ContainSubstring(tc.want))
		})
	}
	// The control: the same keys spelled right render.
	t.Run("spelled right", func(t *testing.T) {
		g := NewWithT(t)
		vals := map[string]any{}
		g.Expect(yaml.Unmarshal([]byte(`{operator: {replicas: 2, pollInterval: 10s, image: {tag: v1}, env: [{name: A, value: b}]}, networkPolicy: {enabled: true}}`), &vals)).To(Succeed())
		_, err := render.Render(render.Options{ChartDir: chartDir(), ReleaseName: "ops-server", Namespace: "observability", Values: vals})
		g.Expect(err).NotTo(HaveOccurred())
	})
}

// TestSchemaIsStrictEverywhere walks values.schema.json: every object
// schema either lists its properties with additionalProperties false, or is
// a typed map (additionalProperties is a schema), or is a Kubernetes type
// passed through as is, marked with a $comment.
func TestSchemaIsStrictEverywhere(t *testing.T) {
	g := NewWithT(t)
	b, err := os.ReadFile(filepath.Join(chartDir(), "values.schema.json"))
	g.Expect(err).NotTo(HaveOccurred())
	var schema map[string]any
	g.Expect(json.Unmarshal(b, &schema)).To(Succeed())
	checked := 0
	var walk func(path string, node any)
	walk = func(path string, node any) {
		m, ok := node.(map[string]any)
		if !ok {
			return
		}
		if m["type"] == "object" {
			checked++
			switch ap := m["additionalProperties"].(type) {
			case bool:
				g.Expect(ap).To(BeFalse(), "%s: additionalProperties must be false", path)
				g.Expect(m).To(HaveKey("properties"), "%s: a closed object lists its properties", path)
			case map[string]any:
				g.Expect(m).NotTo(HaveKey("properties"), "%s: a typed map has no fixed properties", path)
			case nil:
				g.Expect(m).To(HaveKey("$comment"), "%s: an open object must say why ($comment)", path)
			}
		}
		for k, v := range m {
			switch k {
			case "properties", "definitions":
				for name, sub := range v.(map[string]any) {
					walk(path+"."+name, sub)
				}
			case "items", "additionalProperties":
				walk(path+"["+k+"]", v)
			}
		}
	}
	walk("$", schema)
	g.Expect(checked).To(BeNumerically(">", 30))
}

// TestValuesDocumentEverySchemaKey: every key the schema allows has its
// default in values.yaml (where it is documented), and the defaults pass
// the schema (Render validates them).
func TestValuesDocumentEverySchemaKey(t *testing.T) {
	g := NewWithT(t)
	b, err := os.ReadFile(filepath.Join(chartDir(), "values.schema.json"))
	g.Expect(err).NotTo(HaveOccurred())
	var schema map[string]any
	g.Expect(json.Unmarshal(b, &schema)).To(Succeed())
	defs := schema["definitions"].(map[string]any)
	vb, err := os.ReadFile(filepath.Join(chartDir(), "values.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var values map[string]any
	g.Expect(yaml.Unmarshal(vb, &values)).To(Succeed())

	var walk func(path string, s map[string]any, v map[string]any)
	walk = func(path string, s map[string]any, v map[string]any) {
		if ref, ok := s["$ref"].(string); ok {
			s = defs[strings.TrimPrefix(ref, "#/definitions/")].(map[string]any)
		}
		props, ok := s["properties"].(map[string]any)
		if !ok {
			return
		}
		for name, sub := range props {
			if path == "" && name == "global" {
				continue
			}
			val, ok := v[name]
			g.Expect(ok).To(BeTrue(), "values.yaml has no default for %s%s", path, name)
			// An empty map (affinity: {}) is a slot for a Kubernetes
			// type; its schema's properties are not defaults to document.
			if child, ok := val.(map[string]any); ok && len(child) > 0 {
				walk(path+name+".", sub.(map[string]any), child)
			}
		}
	}
	walk("", schema, values)
	_ = renderChart(t, "ops-server", "observability", nil)
}

// TestServerPodShape: the ops-server Pod is the shape of DESIGN.md — three
// containers (ops-apiserver, source-controller, helm-controller), locked
// down, two replicas in production and one in the dev values — with the
// chart repository on localhost, the artifact storage on localhost (one
// replica) or the Pod IP (two), and the Flux controllers started with the
// flags of the local harness (operator/testenv/flux.go) plus leader
// election.
func TestServerPodShape(t *testing.T) {
	for _, tc := range renderCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			res := renderChart(t, "ops-server", "observability", nil, tc.files...)
			dep := toDeployment(t, find(t, res.Objects, "Deployment", "ops-server"))
			// Production (the defaults) runs two Pods; the dev values one.
			ha := tc.name != "values-dev.yaml"
			if ha {
				g.Expect(*dep.Spec.Replicas).To(Equal(int32(2)))
				g.Expect(dep.Spec.Strategy.Type).To(Equal(appsv1.RollingUpdateDeploymentStrategyType))
			} else {
				g.Expect(*dep.Spec.Replicas).To(Equal(int32(1)))
				g.Expect(dep.Spec.Strategy.Type).To(Equal(appsv1.RecreateDeploymentStrategyType))
			}
			pod := dep.Spec.Template.Spec
			g.Expect(containerNames(pod.Containers)).To(Equal([]string{"ops-apiserver", "source-controller", "helm-controller"}))
			g.Expect(pod.ServiceAccountName).To(Equal("ops-server"))
			g.Expect(pod.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()))
			g.Expect(pod.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
			assertLockedDown(g, pod.Containers)

			// Every port of the shared network namespace is distinct.
			ports := map[int32]string{}
			for _, c := range pod.Containers {
				for _, p := range c.Ports {
					g.Expect(ports).NotTo(HaveKey(p.ContainerPort), "port %d of %s already used by %s", p.ContainerPort, c.Name, ports[p.ContainerPort])
					ports[p.ContainerPort] = c.Name
				}
			}

			// The apiserver serves the baked-in charts on localhost; the
			// source-controller reads them there.
			cfg := apiserverConfig(t, res)
			local := cfg["localRepository"].(map[string]any)
			host, port, err := net.SplitHostPort(local["listenAddress"].(string))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(host).To(Equal("127.0.0.1"))
			u, err := url.Parse(local["url"].(string))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(u.Hostname()).To(Equal("127.0.0.1"))
			g.Expect(u.Port()).To(Equal(port))
			apiserver := container(t, pod, "ops-apiserver")
			g.Expect(apiserver.Args).To(ContainElement("--config=/etc/ops-server/apiserver.yaml"))
			g.Expect(apiserver.Args).To(ContainElement("--namespace=$(VMCLUSTER_NAMESPACE)"))

			// Both Flux controllers: the harness's flags and leader
			// election; storage on localhost with one replica, on the Pod
			// IP with two (the helm-controller leader may be in the other
			// Pod).
			src := flagMap(t, container(t, pod, "source-controller").Args)
			helm := flagMap(t, container(t, pod, "helm-controller").Args)
			if ha {
				g.Expect(src["storage-addr"]).To(HavePrefix(":"))
				g.Expect(src["storage-adv-addr"]).To(Equal("$(POD_IP)" + src["storage-addr"]))
				g.Expect(envVar(t, container(t, pod, "source-controller"), "POD_IP")).To(Equal("fieldRef:status.podIP"))
				g.Expect(ports).To(HaveKeyWithValue(portOf(t, "0.0.0.0"+src["storage-addr"]), "source-controller"), "the storage port is source-controller's")
			} else {
				g.Expect(src["storage-addr"]).To(HavePrefix("127.0.0.1:"))
				g.Expect(src["storage-adv-addr"]).To(Equal(src["storage-addr"]))
				g.Expect(ports).NotTo(HaveKey(portOf(t, src["storage-addr"])), "the storage port must not clash with a container port")
			}
			leaderElection := []string{"enable-leader-election", "leader-election-lease-duration", "leader-election-renew-deadline", "leader-election-retry-period"}
			g.Expect(keys(src)).To(Equal(harnessFlagNames(t, append([]string{"storage-path", "storage-addr", "storage-adv-addr", "metrics-addr", "health-addr", "watch-all-namespaces", "watch-label-selector"}, leaderElection...), testenv.FluxArgs.Source)))
			g.Expect(keys(helm)).To(Equal(harnessFlagNames(t, append([]string{"metrics-addr", "health-addr", "watch-all-namespaces", "watch-label-selector"}, leaderElection...), testenv.FluxArgs.Helm)))
			for _, args := range []map[string]string{src, helm} {
				g.Expect(args).To(HaveKeyWithValue("enable-leader-election", "true"))
				g.Expect(args).To(HaveKeyWithValue("leader-election-lease-duration", "35s"))
				g.Expect(args).To(HaveKeyWithValue("leader-election-renew-deadline", "30s"))
				g.Expect(args).To(HaveKeyWithValue("leader-election-retry-period", "5s"))
			}
			// Flux sharding: both watch ops-server's shard only, the one
			// ops-apiserver labels its objects with.
			shard := opsv1.FluxShardLabel + "=" + opsv1.DefaultFluxShard
			g.Expect(src["watch-label-selector"]).To(Equal(shard))
			g.Expect(helm["watch-label-selector"]).To(Equal(shard))
			g.Expect(cfg).To(HaveKeyWithValue("flux", HaveKeyWithValue("shard", opsv1.DefaultFluxShard)))
			for name, args := range map[string]struct {
				chart   map[string]string
				harness []string
			}{"source-controller": {src, testenv.FluxArgs.Source}, "helm-controller": {helm, testenv.FluxArgs.Helm}} {
				for flag, want := range flagMap(t, args.harness) {
					if slices.Contains(leaderElection, flag) {
						continue // the chart's own values, checked above
					}
					if flag == "log-encoding" && tc.name != "values-dev.yaml" {
						// Production logs are JSON; the dev values use the
						// harness's console encoding (checked exactly).
						g.Expect(args.chart[flag]).To(Equal("json"), "%s --%s", name, flag)
						continue
					}
					g.Expect(args.chart[flag]).To(Equal(want), "%s --%s", name, flag)
				}
			}
			// Both controllers watch the namespace the apiserver writes to.
			for _, c := range []string{"source-controller", "helm-controller"} {
				g.Expect(envVar(t, container(t, pod, c), "RUNTIME_NAMESPACE")).To(Equal(envVar(t, apiserver, "VMCLUSTER_NAMESPACE")))
			}
		})
	}
}

// TestOperatorDeployment: leader election is on everywhere, and two
// replicas are possible (the EKS example) but not without it.
func TestOperatorDeployment(t *testing.T) {
	g := NewWithT(t)
	for _, tc := range renderCases(t) {
		res := renderChart(t, "ops-server", "observability", nil, tc.files...)
		dep := toDeployment(t, find(t, res.Objects, "Deployment", "ops-server-operator"))
		pod := dep.Spec.Template.Spec
		g.Expect(containerNames(pod.Containers)).To(Equal([]string{"ops-operator"}), tc.name)
		assertLockedDown(g, pod.Containers)
		args := flagMap(t, pod.Containers[0].Args)
		g.Expect(args).To(HaveKeyWithValue("leader-elect", "true"), tc.name)
		g.Expect(args).To(HaveKeyWithValue("leader-election-namespace", "$(POD_NAMESPACE)"), tc.name)
		g.Expect(pod.ServiceAccountName).To(Equal("ops-server-operator"), tc.name)
		if _, bootstraps := args["bootstrap-chart-repository"]; bootstraps {
			// The ObservabilityStack's Flux objects are in ops-server's shard.
			g.Expect(args).To(HaveKeyWithValue("flux-shard", opsv1.DefaultFluxShard), tc.name)
		}
		g.Expect(args).To(HaveKeyWithValue("leader-election-lease-duration", "15s"), tc.name)
		g.Expect(args).To(HaveKeyWithValue("leader-election-renew-deadline", "10s"), tc.name)
		g.Expect(args).To(HaveKeyWithValue("leader-election-retry-period", "2s"), tc.name)
		if tc.name == "values-dev.yaml" {
			g.Expect(*dep.Spec.Replicas).To(Equal(int32(1)), "one on a development cluster")
		} else {
			g.Expect(*dep.Spec.Replicas).To(Equal(int32(2)), "%s: production runs a standby", tc.name)
		}
		if tc.name == "values-eks.yaml" {
			sa := find(t, res.Objects, "ServiceAccount", "ops-server-operator")
			g.Expect(sa.GetAnnotations()).To(HaveKey("eks.amazonaws.com/role-arn"))
		}
		if tc.name == "values-dev.yaml" {
			g.Expect(args).To(HaveKeyWithValue("enable-mock-cloud", "true"))
			g.Expect(args).To(HaveKeyWithValue("mock-namespace", "ops-mock-cloud"))
		} else {
			g.Expect(args).NotTo(HaveKey("enable-mock-cloud"), tc.name)
		}
	}
	_, err := render.Render(render.Options{ChartDir: chartDir(), ReleaseName: "ops-server", Namespace: "observability",
		Values: map[string]any{"operator": map[string]any{"replicas": 2, "leaderElection": map[string]any{"enabled": false}}}})
	g.Expect(err).To(MatchError(ContainSubstring("leaderElection")))
}

// TestCloudConfiguration: where the values configure clouds, both
// ops-apiserver and ops-operator get the same providers' configuration
// file, mounted where --cloud-config points, and the file passes the
// providers package's own strict parser (operator/pkg/cloud/providers).
func TestCloudConfiguration(t *testing.T) {
	configured := 0
	for _, tc := range renderCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			res := renderChart(t, "ops-server", "observability", nil, tc.files...)
			server := toDeployment(t, find(t, res.Objects, "Deployment", "ops-server")).Spec.Template.Spec
			operator := toDeployment(t, find(t, res.Objects, "Deployment", "ops-server-operator")).Spec.Template.Spec
			var cm *unstructured.Unstructured
			for _, o := range res.Objects {
				if o.GetKind() == "ConfigMap" && o.GetName() == "ops-server-cloud" {
					cm = o
				}
			}
			for _, pod := range []corev1.PodSpec{server, operator} {
				c := pod.Containers[0]
				args := flagMap(t, c.Args)
				if cm == nil {
					g.Expect(args).NotTo(HaveKey("cloud-config"), c.Name)
					continue
				}
				path := args["cloud-config"]
				g.Expect(path).NotTo(BeEmpty(), c.Name)
				mounted := false
				for _, m := range c.VolumeMounts {
					if filepath.Dir(path) == m.MountPath {
						for _, v := range pod.Volumes {
							if v.Name == m.Name && v.ConfigMap != nil && v.ConfigMap.Name == cm.GetName() {
								mounted = m.ReadOnly
							}
						}
					}
				}
				g.Expect(mounted).To(BeTrue(), "%s: %s is not the read-only cloud ConfigMap", c.Name, path)
			}
			if cm == nil {
				return
			}
			configured++
			data := nestedString(cm, "data", filepath.Base(flagMap(t, server.Containers[0].Args)["cloud-config"]))
			_, err := providers.Parse([]byte(data))
			g.Expect(err).NotTo(HaveOccurred(), data)
		})
	}
	if configured < 2 {
		t.Fatalf("expected the EKS and GKE examples to configure clouds, %d did", configured)
	}

	// A typo in the cloud configuration is caught by the same parser.
	res := renderChart(t, "ops-server", "observability", map[string]any{"cloud": map[string]any{"config": map[string]any{"eks": map[string]any{"regoin": "us-west-2"}}}})
	cm := find(t, res.Objects, "ConfigMap", "ops-server-cloud")
	_, err := providers.Parse([]byte(nestedString(cm, "data", "cloud.yaml")))
	if err == nil || !strings.Contains(err.Error(), "regoin") {
		t.Fatalf("a misspelled cloud configuration key must be rejected, got %v", err)
	}
}

// TestServiceMonitorAndNetworkPolicyPorts: the ServiceMonitor selects the
// metrics Services and scrapes ports they have; the NetworkPolicies admit
// ports the selected Pods have.
func TestServiceMonitorAndNetworkPolicyPorts(t *testing.T) {
	g := NewWithT(t)
	res := renderChart(t, "ops-server", "observability", nil, exampleValues(t)["values-eks.yaml"])
	sm := find(t, res.Objects, "ServiceMonitor", "ops-server")
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	g.Expect(sel).NotTo(BeEmpty())
	servicePorts := map[string]bool{}
	selected := 0
	for _, obj := range res.Objects {
		if obj.GetKind() != "Service" || !matches(sel, obj.GetLabels()) {
			continue
		}
		selected++
		svc := &corev1.Service{}
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, svc)).To(Succeed())
		for _, p := range svc.Spec.Ports {
			servicePorts[p.Name] = true
		}
	}
	g.Expect(selected).To(Equal(2), "the two metrics Services")
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	g.Expect(endpoints).To(HaveLen(4))
	for _, e := range endpoints {
		port := e.(map[string]any)["port"].(string)
		g.Expect(servicePorts).To(HaveKey(port))
	}

	for _, np := range []struct{ policy, deployment string }{{"ops-server", "ops-server"}, {"ops-server-operator", "ops-server-operator"}} {
		obj := find(t, res.Objects, "NetworkPolicy", np.policy)
		dep := toDeployment(t, find(t, res.Objects, "Deployment", np.deployment))
		podSel, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "podSelector", "matchLabels")
		g.Expect(matches(podSel, dep.Spec.Template.Labels)).To(BeTrue(), np.policy)
		named := map[string]bool{}
		for _, c := range dep.Spec.Template.Spec.Containers {
			for _, p := range c.Ports {
				named[p.Name] = true
			}
		}
		rules, _, _ := unstructured.NestedSlice(obj.Object, "spec", "ingress")
		g.Expect(rules).NotTo(BeEmpty())
		for _, r := range rules {
			for _, p := range r.(map[string]any)["ports"].([]any) {
				g.Expect(named).To(HaveKey(p.(map[string]any)["port"]), np.policy)
			}
		}
	}
}

// TestChartCRDsMatchCRDsDir: the chart ships exactly our CRDs and the Flux
// ones from crds/ (copied by `make manifests`), byte for byte, and not the
// VictoriaMetrics operator's VMCluster CRD.
func TestChartCRDsMatchCRDsDir(t *testing.T) {
	g := NewWithT(t)
	var want []string
	for _, pattern := range []string{"ops.observability.tidbcloud.com_*.yaml", "helm.toolkit.fluxcd.io_*.yaml", "source.toolkit.fluxcd.io_*.yaml"} {
		m, err := filepath.Glob(filepath.Join(root, "crds", pattern))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(m).NotTo(BeEmpty(), pattern)
		want = append(want, m...)
	}
	got, err := filepath.Glob(filepath.Join(chartDir(), "crds", "*"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(baseNames(got)).To(ConsistOf(baseNames(want)), "run `make manifests`")
	for _, f := range want {
		a, err := os.ReadFile(f)
		g.Expect(err).NotTo(HaveOccurred())
		b, err := os.ReadFile(filepath.Join(chartDir(), "crds", filepath.Base(f)))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(b)).To(Equal(string(a)), "%s differs from crds/; run `make manifests`", filepath.Base(f))
	}
}

// TestKustomizeBaseIsTheChart: deploy/kustomize/base is what the chart
// renders (no hand-kept copy), and the example overlay builds with kubectl's
// kustomize and is accepted by the API server.
func TestKustomizeBaseIsTheChart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	res := renderChart(t, "ops-server", "observability", nil)
	base := filepath.Join(root, "deploy", "kustomize", "base")
	for file, want := range map[string]string{"ops-server.yaml": res.Manifest, "crds.yaml": res.CRDManifest} {
		b, err := os.ReadFile(filepath.Join(base, file))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(b)).To(HaveSuffix(want), "%s is stale: run `make manifests`", file)
		g.Expect(string(b)).To(HavePrefix("# Generated by hack/render-kustomize.sh"))
	}

	kubectl, err := testenv.Binary("kubectl")
	g.Expect(err).NotTo(HaveOccurred())
	out, err := exec.Command(kubectl, "kustomize", filepath.Join(root, "deploy", "kustomize", "overlays", "example")).Output()
	g.Expect(err).NotTo(HaveOccurred(), "kubectl kustomize: %s", stderrOf(err))
	objs, err := render.Decode(out)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(len(objs)).To(Equal(len(res.Objects) + len(res.CRDs) + 1)) // + its Namespace
	g.Expect(ensureNamespace(ctx, "ops-system")).To(Succeed())
	for _, obj := range objs {
		if obj.GetKind() != "Namespace" && obj.GetKind() != "CustomResourceDefinition" && obj.GetKind() != "ClusterRole" && obj.GetKind() != "ClusterRoleBinding" {
			g.Expect(obj.GetNamespace()).To(Equal("ops-system"), describe(obj))
		}
		g.Expect(apply(ctx, obj, true)).To(Succeed(), describe(obj))
	}
	dep := toDeployment(t, find(t, objs, "Deployment", "ops-server-operator"))
	g.Expect(*dep.Spec.Replicas).To(Equal(int32(2)))
}

// TestDockerfile: one Dockerfile with the two targets, static binaries on a
// distroless nonroot base running as the UID the chart sets, and the
// baked-in charts where the chart's default apiserver.chart.localDir looks.
func TestDockerfile(t *testing.T) {
	g := NewWithT(t)
	b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	g.Expect(err).NotTo(HaveOccurred())
	df := string(b)
	g.Expect(df).To(ContainSubstring("CGO_ENABLED=0"))
	g.Expect(df).To(MatchRegexp(`(?m)^ARG BASE_IMAGE=gcr.io/distroless/static(-debian\d+)?:nonroot$`))
	g.Expect(df).To(MatchRegexp(`(?m)^FROM \$\{BASE_IMAGE\} AS ops-apiserver$`))
	g.Expect(df).To(MatchRegexp(`(?m)^FROM \$\{BASE_IMAGE\} AS ops-operator$`))
	g.Expect(df).To(MatchRegexp(`(?m)^USER 65532:65532$`))
	for _, pkg := range []string{"./apiserver/cmd/ops-apiserver", "./operator/cmd/ops-operator"} {
		g.Expect(df).To(ContainSubstring(pkg))
		_, err := os.Stat(filepath.Join(root, pkg, "main.go"))
		g.Expect(err).NotTo(HaveOccurred(), pkg)
	}
	var values map[string]any
	vb, err := os.ReadFile(filepath.Join(chartDir(), "values.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(yaml.Unmarshal(vb, &values)).To(Succeed())
	localDir := values["apiserver"].(map[string]any)["chart"].(map[string]any)["localDir"].(string)
	g.Expect(df).To(ContainSubstring("COPY deploy/charts/vmcluster " + localDir + "/vmcluster"))
	// Every catalog chart (every chart but ops-server) is baked in.
	entries, err := os.ReadDir(filepath.Join(root, "deploy", "charts"))
	g.Expect(err).NotTo(HaveOccurred())
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "ops-server" {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, "deploy", "charts", e.Name(), "Chart.yaml")); err != nil {
			continue
		}
		g.Expect(df).To(ContainSubstring("COPY deploy/charts/"+e.Name()+" "+localDir+"/"+e.Name()), "catalog chart %s is not baked into the image", e.Name())
	}
}

// --- helpers ---

// nestedString is the string at fields of obj, "" when absent.
func nestedString(obj *unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(obj.Object, fields...)
	return s
}

func toDeployment(t *testing.T, u *unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, d, true); err != nil {
		t.Fatalf("%s: %v", describe(u), err)
	}
	return d
}

func containerNames(cs []corev1.Container) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func container(t *testing.T, pod corev1.PodSpec, name string) corev1.Container {
	t.Helper()
	for _, c := range pod.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %s", name)
	return corev1.Container{}
}

// assertLockedDown: non-root, read-only root filesystem, no privilege
// escalation, no capabilities, RuntimeDefault seccomp, probes and resources.
func assertLockedDown(g Gomega, cs []corev1.Container) {
	for _, c := range cs {
		sc := c.SecurityContext
		g.Expect(sc).NotTo(BeNil(), c.Name)
		g.Expect(sc.RunAsNonRoot).To(HaveValue(BeTrue()), c.Name)
		g.Expect(sc.RunAsUser).To(HaveValue(BeNumerically(">", 0)), c.Name)
		g.Expect(sc.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()), c.Name)
		g.Expect(sc.AllowPrivilegeEscalation).To(HaveValue(BeFalse()), c.Name)
		g.Expect(sc.Capabilities.Drop).To(Equal([]corev1.Capability{"ALL"}), c.Name)
		g.Expect(sc.Capabilities.Add).To(BeEmpty(), c.Name)
		g.Expect(sc.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault), c.Name)
		g.Expect(c.LivenessProbe).NotTo(BeNil(), c.Name)
		g.Expect(c.ReadinessProbe).NotTo(BeNil(), c.Name)
		g.Expect(c.Resources.Requests).NotTo(BeEmpty(), c.Name)
		g.Expect(c.Resources.Limits).To(HaveKey(corev1.ResourceMemory), c.Name)
		mounts := map[string]bool{}
		for _, m := range c.VolumeMounts {
			mounts[m.MountPath] = !m.ReadOnly
		}
		g.Expect(mounts).To(HaveKeyWithValue("/tmp", true), "%s needs a writable /tmp", c.Name)
	}
}

func apiserverConfig(t *testing.T, res *render.Result) map[string]any {
	t.Helper()
	cm := find(t, res.Objects, "ConfigMap", "ops-server-apiserver")
	data, _, _ := unstructured.NestedString(cm.Object, "data", "apiserver.yaml")
	cfg := map[string]any{}
	if err := yaml.UnmarshalStrict([]byte(data), &cfg); err != nil {
		t.Fatalf("apiserver.yaml: %v", err)
	}
	return cfg
}

// flagMap parses --name=value arguments.
func flagMap(t *testing.T, args []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, a := range args {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok || !strings.HasPrefix(a, "--") {
			t.Fatalf("argument %q is not --name=value", a)
		}
		if _, dup := out[name]; dup {
			t.Fatalf("flag --%s given twice", name)
		}
		out[name] = value
	}
	return out
}

// harnessFlagNames are the flags testenv.StartFlux passes: the fixed ones
// named in its code and those of FluxArgs.
func harnessFlagNames(t *testing.T, fixed, args []string) []string {
	names := append([]string(nil), fixed...)
	names = append(names, keys(flagMap(t, args))...)
	sort.Strings(names)
	return slices.Compact(names)
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func portOf(t *testing.T, hostport string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatal(err)
	}
	var n int32
	for _, r := range p {
		n = n*10 + int32(r-'0')
	}
	return n
}

func envVar(t *testing.T, c corev1.Container, name string) string {
	t.Helper()
	for _, e := range c.Env {
		if e.Name == name {
			if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
				return "fieldRef:" + e.ValueFrom.FieldRef.FieldPath
			}
			return e.Value
		}
	}
	t.Fatalf("container %s has no env %s", c.Name, name)
	return ""
}

func matches(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func baseNames(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		out = append(out, filepath.Base(p))
	}
	return out
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// TestGoMemLimitFollowsTheContainerLimit: every container of both
// Deployments runs a Go binary, and its GOMEMLIMIT is its own memory limit
// (docs/install.md, "Memory").
func TestGoMemLimitFollowsTheContainerLimit(t *testing.T) {
	g := NewWithT(t)
	res := renderChart(t, "ops-server", "observability", nil)
	for _, name := range []string{"ops-server", "ops-server-operator"} {
		pod := toDeployment(t, find(t, res.Objects, "Deployment", name)).Spec.Template.Spec
		for _, c := range pod.Containers {
			var limit *corev1.EnvVar
			for i := range c.Env {
				if c.Env[i].Name == "GOMEMLIMIT" {
					limit = &c.Env[i]
				}
			}
			g.Expect(limit).NotTo(BeNil(), "%s/%s has no GOMEMLIMIT", name, c.Name)
			g.Expect(limit.ValueFrom).NotTo(BeNil())
			g.Expect(limit.ValueFrom.ResourceFieldRef).To(HaveValue(And(
				HaveField("ContainerName", c.Name), HaveField("Resource", "limits.memory"))), "%s/%s", name, c.Name)
			g.Expect(c.Resources.Limits.Memory().IsZero()).To(BeFalse(), "%s/%s has no memory limit to follow", name, c.Name)
		}
	}
}

// TestKubeAPIRateLimitValues: both binaries default to no client-side
// limit (-1, docs/apiserver.md, "Client-side rate limits"); the schema
// takes -1 or a positive number, nothing else.
func TestKubeAPIRateLimitValues(t *testing.T) {
	g := NewWithT(t)
	res := renderChart(t, "ops-server", "observability", nil)
	args := flagMap(t, toDeployment(t, find(t, res.Objects, "Deployment", "ops-server-operator")).Spec.Template.Spec.Containers[0].Args)
	g.Expect(args).To(HaveKeyWithValue("kube-api-qps", "-1"))
	cm := find(t, res.Objects, "ConfigMap", "ops-server-apiserver")
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	g.Expect(strings.Join(slices.Collect(maps.Values(data)), "\n")).To(ContainSubstring("kubeAPIQPS: -1"))
	for _, v := range []float64{-1, 20} {
		_, err := render.Render(render.Options{ChartDir: chartDir(), ReleaseName: "ops-server", Namespace: "observability",
			Values: map[string]any{"apiserver": map[string]any{"kubeAPIQPS": v}, "operator": map[string]any{"kubeAPIQPS": v}}})
		g.Expect(err).NotTo(HaveOccurred(), "kubeAPIQPS %v", v)
	}
	for _, v := range []float64{0, -2} {
		_, err := render.Render(render.Options{ChartDir: chartDir(), ReleaseName: "ops-server", Namespace: "observability",
			Values: map[string]any{"apiserver": map[string]any{"kubeAPIQPS": v}}})
		g.Expect(err).To(MatchError(ContainSubstring("kubeAPIQPS")), "kubeAPIQPS %v", v)
	}
}
