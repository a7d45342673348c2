// Package catalogrbac checks that the ops-server chart's RBAC for the
// helm-controller sidecar covers exactly what the catalog's charts create
// (issue #24, "RBAC that matches"): every chart directory under
// deploy/charts except ops-server is rendered with its default values
// (templates and crds/), the (API group, resource, scope) of each object
// collected with the verbs Helm uses on it (a chart's crds/ are never
// deleted by Helm; a Role or ClusterRole a chart renders needs every rule
// it grants held by its creator, RBAC's escalation check), and compared
// with the rules of the chart's
// <fullname>-helm-controller-charts Role (namespaced kinds) and
// <fullname>-helm-controller-charts-cluster ClusterRole (cluster-scoped
// kinds). Pure rendering: no API server.
package catalogrbac

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tidbcloud/ops-server/e2e/deploy/render"
)

// helmVerbs are the verbs Helm (through helm-controller) uses on what a
// chart renders: create, update/patch (three-way merge, server-side
// apply), get/list/watch (wait), delete (uninstall).
var helmVerbs = []string{"create", "delete", "get", "list", "patch", "update", "watch"}

// crdVerbs are the verbs on a chart's crds/: created on install, replaced
// on upgrade (HelmRelease crds: CreateReplace), never deleted.
var crdVerbs = []string{"create", "get", "list", "patch", "update", "watch"}

// need is what one kind needs: the verbs and the charts that need them.
type need struct {
	verbs  []string
	charts []string
}

func (n *need) add(chart string, verbs ...string) {
	n.verbs = append(n.verbs, verbs...)
	if !slices.Contains(n.charts, chart) {
		n.charts = append(n.charts, chart)
	}
}

// clusterScoped are the built-in kinds without a namespace that a chart
// may render. Kinds defined by a CRD take the CRD's scope.
var clusterScoped = map[schema.GroupKind]bool{
	{Group: "", Kind: "Namespace"}:                                                    true,
	{Group: "", Kind: "PersistentVolume"}:                                             true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                         true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                  true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:                 true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                             true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                               true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                   true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                                true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      true,
}

// kindRef is what RBAC grants on: a resource of an API group, in a
// namespace or cluster-wide.
type kindRef struct {
	Group, Resource string
	Namespaced      bool
}

func (k kindRef) String() string {
	g := k.Group
	if g == "" {
		g = `""`
	}
	scope := "cluster-scoped"
	if k.Namespaced {
		scope = "namespaced"
	}
	return fmt.Sprintf("apiGroups: [%s] resources: [%s] (%s)", g, k.Resource, scope)
}

// catalogCharts lists the chart directories under deploy/charts except
// ops-server: the charts ops-apiserver bakes and helm-controller installs.
func catalogCharts(t *testing.T, root string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, "deploy", "charts"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		dir := filepath.Join(root, "deploy", "charts", e.Name())
		if _, err := os.Stat(filepath.Join(dir, "Chart.yaml")); !e.IsDir() || e.Name() == "ops-server" || err != nil {
			continue
		}
		out = append(out, dir)
	}
	if len(out) == 0 {
		t.Fatal("no catalog chart under deploy/charts")
	}
	return out
}

// rendered renders every catalog chart and returns what their objects
// need, with the charts that render each kind.
func rendered(t *testing.T, charts []string) map[kindRef]*need {
	t.Helper()
	type object struct {
		u     *unstructured.Unstructured
		chart string
		crd   bool // from the chart's crds/
	}
	var objs []object
	crdScope := map[schema.GroupKind]bool{}
	for _, dir := range charts {
		res, err := render.Render(render.Options{ChartDir: dir, ReleaseName: "catalog", Namespace: "observability"})
		if err != nil {
			t.Fatalf("rendering %s with its default values: %v", dir, err)
		}
		for i, o := range append(res.CRDs, res.Objects...) {
			objs = append(objs, object{u: o, chart: filepath.Base(dir), crd: i < len(res.CRDs)})
			if o.GetKind() == "CustomResourceDefinition" {
				group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
				kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
				scope, _, _ := unstructured.NestedString(o.Object, "spec", "scope")
				crdScope[schema.GroupKind{Group: group, Kind: kind}] = scope != "Cluster"
			}
		}
	}
	out := map[kindRef]*need{}
	add := func(k kindRef, chart string, verbs ...string) {
		if out[k] == nil {
			out[k] = &need{}
		}
		out[k].add(chart, verbs...)
	}
	for _, o := range objs {
		gvk := o.u.GroupVersionKind()
		gk := gvk.GroupKind()
		namespaced := !clusterScoped[gk]
		if ns, ok := crdScope[gk]; ok {
			namespaced = ns
		}
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		verbs := helmVerbs
		if o.crd {
			verbs = crdVerbs
		}
		add(kindRef{Group: gvk.Group, Resource: plural.Resource, Namespaced: namespaced}, o.chart, verbs...)
		if gk.Group != rbacv1.GroupName || (gk.Kind != "Role" && gk.Kind != "ClusterRole") {
			continue
		}
		role := &rbacv1.ClusterRole{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.u.Object, role); err != nil {
			t.Fatalf("%s %s of %s: %v", gk.Kind, o.u.GetName(), o.chart, err)
		}
		for _, r := range role.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					add(kindRef{Group: g, Resource: res, Namespaced: gk.Kind == "Role"}, o.chart+" (granted by its "+gk.Kind+")", r.Verbs...)
				}
			}
		}
	}
	return out
}

// granted reads the helm-controller-charts roles of the rendered
// ops-server chart: what they grant, by kind, and the verbs.
func granted(t *testing.T, root string) (map[kindRef][]string, []string) {
	t.Helper()
	res, err := render.Render(render.Options{ChartDir: filepath.Join(root, "deploy", "charts", "ops-server"), ReleaseName: "ops-server", Namespace: "ops-system"})
	if err != nil {
		t.Fatalf("rendering the ops-server chart: %v", err)
	}
	out := map[kindRef][]string{}
	var problems []string
	for _, o := range res.Objects {
		if o.GetKind() != "Role" && o.GetKind() != "ClusterRole" {
			continue
		}
		var namespaced bool
		switch {
		case strings.HasSuffix(o.GetName(), "-helm-controller-charts"):
			namespaced = true
		case strings.HasSuffix(o.GetName(), "-helm-controller-charts-cluster"):
			namespaced = false
		default:
			continue
		}
		role := &rbacv1.ClusterRole{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, role); err != nil {
			t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
		}
		for _, r := range role.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					if g == "*" || res == "*" || slices.Contains(r.Verbs, "*") {
						problems = append(problems, fmt.Sprintf("%s %s has a wildcard rule %v", o.GetKind(), o.GetName(), r))
					}
					k := kindRef{Group: g, Resource: res, Namespaced: namespaced}
					out[k] = append(out[k], r.Verbs...)
				}
			}
		}
	}
	return out, problems
}

func TestHelmControllerRBACMatchesCatalogCharts(t *testing.T) {
	root, err := render.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	charts := catalogCharts(t, root)
	need := rendered(t, charts)
	have, problems := granted(t, root)
	if len(have) == 0 {
		t.Fatal("the ops-server chart renders no helm-controller-charts Role or ClusterRole (deploy/charts/ops-server/templates/rbac-server.yaml)")
	}

	for k, n := range need {
		verbs, ok := have[k]
		if !ok {
			problems = append(problems, fmt.Sprintf("missing: %s, needed by %s", k, strings.Join(n.charts, ", ")))
			continue
		}
		if got, want := set(verbs), set(n.verbs); !slices.Equal(got, want) {
			problems = append(problems, fmt.Sprintf("verbs of %s are %v, want exactly %v (%s)", k, got, want, strings.Join(n.charts, ", ")))
		}
	}
	for k := range have {
		if _, ok := need[k]; !ok {
			problems = append(problems, fmt.Sprintf("extra: %s, rendered by no catalog chart", k))
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		t.Errorf("deploy/charts/ops-server/templates/rbac-server.yaml (helm-controller-charts: namespaced kinds; "+
			"ops-server.catalogClusterRules in _helpers.tpl: cluster-scoped kinds) does not match what the catalog charts %v render:\n  %s",
			charts, strings.Join(problems, "\n  "))
	}
}

// set sorts and de-duplicates verbs.
func set(verbs []string) []string {
	out := slices.Clone(verbs)
	sort.Strings(out)
	return slices.Compact(out)
}
