package deploy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"

	"github.com/tidbcloud/ops-server/e2e/deploy/render"
)

// The high-availability shape of the chart (docs/install.md, "High
// availability"): two ops-server Pods whose Flux sidecars elect leaders,
// two leader-elected ops-operators, anti-affinity, PodDisruptionBudgets,
// and the Lease RBAC each elector needs.

// haValues are value sets beyond the defaults (which are HA already) that
// must render and pass server-side dry-run.
var haValues = map[string]map[string]any{
	"three replicas, required anti-affinity, zone spread, network policies": {
		"server": map[string]any{
			"replicaCount":    3,
			"podAntiAffinity": "required",
			"topologySpreadConstraints": []any{map[string]any{
				"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
				"labelSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/component": "server"}},
			}},
		},
		"operator":      map[string]any{"replicas": 3, "podAntiAffinity": "required"},
		"networkPolicy": map[string]any{"enabled": true},
	},
	"no shard, slower leases, no anti-affinity": {
		"flux":     map[string]any{"shard": "", "leaderElection": map[string]any{"leaseDuration": "60s", "renewDeadline": "40s", "retryPeriod": "10s"}},
		"server":   map[string]any{"podAntiAffinity": "none"},
		"operator": map[string]any{"podAntiAffinity": "none", "leaderElection": map[string]any{"leaseDuration": "30s", "renewDeadline": "20s", "retryPeriod": "4s"}},
	},
}

// TestChartHAAppliesToAPIServer renders the chart with each of haValues and
// applies every object to the real API server with server-side dry-run.
func TestChartHAAppliesToAPIServer(t *testing.T) {
	for name, values := range haValues {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := env.NewNamespace(t)
			res := renderChart(t, "ops-server", ns, values)
			for _, crd := range res.CRDs {
				g.Expect(apply(ctx, crd, true)).To(Succeed(), describe(crd))
			}
			for _, obj := range res.Objects {
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
			server := toDeployment(t, find(t, res.Objects, "Deployment", "ops-server"))
			g.Expect(*server.Spec.Replicas).To(BeNumerically(">=", 2))
		})
	}
}

// TestHAShape: the defaults run two ops-server Pods and two ops-operators,
// spread by preferred anti-affinity, each Deployment behind a PDB that
// lets a drain take one Pod at a time; the Flux sidecars and the operator
// elect leaders with the chart's timings; replicas without leader election
// are refused.
func TestHAShape(t *testing.T) {
	g := NewWithT(t)
	res := renderChart(t, "ops-server", "observability", nil)
	for _, d := range []struct{ name, component string }{{"ops-server", "server"}, {"ops-server-operator", "operator"}} {
		dep := toDeployment(t, find(t, res.Objects, "Deployment", d.name))
		g.Expect(*dep.Spec.Replicas).To(Equal(int32(2)), d.name)
		// Preferred anti-affinity on the hostname, selecting these Pods.
		aff := dep.Spec.Template.Spec.Affinity
		g.Expect(aff).NotTo(BeNil(), d.name)
		g.Expect(aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution).To(BeEmpty(), d.name)
		terms := aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
		g.Expect(terms).To(HaveLen(1), d.name)
		g.Expect(terms[0].PodAffinityTerm.TopologyKey).To(Equal("kubernetes.io/hostname"))
		g.Expect(matches(terms[0].PodAffinityTerm.LabelSelector.MatchLabels, dep.Spec.Template.Labels)).To(BeTrue(), d.name)
		g.Expect(terms[0].PodAffinityTerm.LabelSelector.MatchLabels).To(HaveKeyWithValue("app.kubernetes.io/component", d.component))

		// The PDB selects exactly these Pods and keeps one of two up.
		pdb := &policyv1.PodDisruptionBudget{}
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(find(t, res.Objects, "PodDisruptionBudget", d.name).Object, pdb)).To(Succeed())
		g.Expect(pdb.Spec.MaxUnavailable.IntValue()).To(Equal(1), d.name)
		g.Expect(pdb.Spec.Selector.MatchLabels).To(Equal(dep.Spec.Selector.MatchLabels), d.name)
	}
	// ops-server rolls one Pod at a time and adds none (required
	// anti-affinity needs no spare node).
	server := toDeployment(t, find(t, res.Objects, "Deployment", "ops-server"))
	g.Expect(server.Spec.Strategy.RollingUpdate).NotTo(BeNil())
	g.Expect(server.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue()).To(Equal(1))
	g.Expect(server.Spec.Strategy.RollingUpdate.MaxSurge.IntValue()).To(Equal(0))

	// Required anti-affinity, and the caller's own affinity used as is.
	res = renderChart(t, "ops-server", "observability", map[string]any{
		"server":   map[string]any{"podAntiAffinity": "required"},
		"operator": map[string]any{"affinity": map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "pool", "operator": "In", "values": []any{"system"}}}}}}}}},
	})
	server = toDeployment(t, find(t, res.Objects, "Deployment", "ops-server"))
	required := server.Spec.Template.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	g.Expect(required).To(HaveLen(1))
	g.Expect(matches(required[0].LabelSelector.MatchLabels, server.Spec.Template.Labels)).To(BeTrue())
	g.Expect(server.Spec.Template.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution).To(BeEmpty())
	operator := toDeployment(t, find(t, res.Objects, "Deployment", "ops-server-operator"))
	g.Expect(operator.Spec.Template.Spec.Affinity.PodAntiAffinity).To(BeNil(), "the caller's affinity replaces the generated one")
	g.Expect(operator.Spec.Template.Spec.Affinity.NodeAffinity).NotTo(BeNil())

	// none: no affinity at all.
	res = renderChart(t, "ops-server", "observability", map[string]any{"server": map[string]any{"podAntiAffinity": "none"}})
	g.Expect(toDeployment(t, find(t, res.Objects, "Deployment", "ops-server")).Spec.Template.Spec.Affinity).To(BeNil())

	// With network policies, the other ops-server Pods reach the
	// source-controller leader's artifacts; nobody else does.
	res = renderChart(t, "ops-server", "observability", map[string]any{"networkPolicy": map[string]any{"enabled": true}})
	np := find(t, res.Objects, "NetworkPolicy", "ops-server")
	rules, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
	storageRules := 0
	for _, r := range rules {
		rule := r.(map[string]any)
		if rule["ports"].([]any)[0].(map[string]any)["port"] != "src-storage" {
			continue
		}
		storageRules++
		from := rule["from"].([]any)
		g.Expect(from).To(HaveLen(1))
		sel, _, _ := unstructured.NestedStringMap(from[0].(map[string]any), "podSelector", "matchLabels")
		g.Expect(sel).To(HaveKeyWithValue("app.kubernetes.io/component", "server"))
	}
	g.Expect(storageRules).To(Equal(1))

	// Two Pods need leader-elected Flux controllers.
	_, err := render.Render(render.Options{ChartDir: chartDir(), ReleaseName: "ops-server", Namespace: "observability",
		Values: map[string]any{"flux": map[string]any{"leaderElection": map[string]any{"enabled": false}}}})
	g.Expect(err).To(MatchError(ContainSubstring("server.replicaCount > 1 needs flux.leaderElection.enabled")))
	// One Pod without it is the old single-replica shape.
	res = renderChart(t, "ops-server", "observability", map[string]any{
		"server": map[string]any{"replicaCount": 1},
		"flux":   map[string]any{"leaderElection": map[string]any{"enabled": false}},
	})
	server = toDeployment(t, find(t, res.Objects, "Deployment", "ops-server"))
	g.Expect(server.Spec.Strategy.Type).To(Equal(appsv1.RecreateDeploymentStrategyType))
	src := flagMap(t, container(t, server.Spec.Template.Spec, "source-controller").Args)
	g.Expect(src).To(HaveKeyWithValue("enable-leader-election", "false"))
	g.Expect(src).NotTo(HaveKey("leader-election-lease-duration"))
	g.Expect(src["storage-addr"]).To(HavePrefix("127.0.0.1:"))
	for _, obj := range res.Objects {
		g.Expect(obj.GetName()).NotTo(HaveSuffix("-flux-leader-election"), "no Lease RBAC without leader election: %s", describe(obj))
	}
}

// fluxLeaseName is the Lease a Flux controller elects its leader with:
// "<controller>-leader-election", with a watch label selector suffixed by
// the first 8 hex digits of its SHA-256 (fluxcd/pkg/runtime/leaderelection
// GenerateID, as source-controller's and helm-controller's main.go call it).
func fluxLeaseName(controller, shard string) string {
	id := controller + "-leader-election"
	if shard == "" {
		return id
	}
	sum := sha256.Sum256([]byte(opsv1.FluxShardLabel + "=" + shard))
	return id + "-" + hex.EncodeToString(sum[:])[:8]
}

// TestLeaderElectionRBAC runs a real client-go leader election (the Lease
// lock controller-runtime uses: get, create, update) as each elector's
// ServiceAccount on the Lease it uses — both Flux sidecars as the
// ops-server ServiceAccount, ops-operator as its own — after applying the
// chart's RBAC; then the Leases each must not touch. The vmcluster namespace
// is another one here, so the release namespace holds only the election
// rules.
func TestLeaderElectionRBAC(t *testing.T) {
	for _, shard := range []string{opsv1.DefaultFluxShard, ""} {
		t.Run("shard="+shard, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			vmns := env.NewNamespace(t)
			in := install(t, map[string]any{"vmclusterNamespace": vmns, "flux": map[string]any{"shard": shard}})
			ns := in.ns
			other := env.NewNamespace(t)
			admin := env.Client

			serverCS, err := kubernetes.NewForConfig(impersonate(ns, in.serverSA()))
			g.Expect(err).NotTo(HaveOccurred())
			operatorCS, err := kubernetes.NewForConfig(impersonate(ns, in.operatorSA()))
			g.Expect(err).NotTo(HaveOccurred())
			server := clientAs(t, ns, in.serverSA())
			operator := clientAs(t, ns, in.operatorSA())

			operatorLease := "ops-operator.ops.observability.tidbcloud.com"
			fluxLeases := []string{fluxLeaseName("source-controller", shard), fluxLeaseName("helm-controller", shard)}
			if shard == "" {
				g.Expect(fluxLeases).To(Equal([]string{"source-controller-leader-election", "helm-controller-leader-election"}))
			}

			// Each elector leads on its Lease, in the release namespace.
			for _, name := range fluxLeases {
				g.Expect(leadOnce(ctx, serverCS, ns, name)).To(Succeed(), "ops-server ServiceAccount leads on %s", name)
			}
			g.Expect(leadOnce(ctx, operatorCS, ns, operatorLease)).To(Succeed(), "ops-operator leads on its Lease")
			for _, name := range append(fluxLeases, operatorLease) {
				lease := &coordinationv1.Lease{}
				g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, lease)).To(Succeed(), name)
				g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil(), name)
			}
			// A second round renews (get + update) what the first created.
			g.Expect(leadOnce(ctx, serverCS, ns, fluxLeases[0])).To(Succeed())

			// Not each other's Leases, nor any other, nor elsewhere.
			for _, name := range fluxLeases {
				forbidden(g, operator.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &coordinationv1.Lease{}), "ops-operator gets the Flux Lease "+name)
				lease := &coordinationv1.Lease{}
				g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, lease)).To(Succeed())
				forbidden(g, operator.Update(ctx, lease), "ops-operator updates the Flux Lease "+name)
			}
			forbidden(g, server.Get(ctx, client.ObjectKey{Namespace: ns, Name: operatorLease}, &coordinationv1.Lease{}), "the ops-server ServiceAccount gets the operator's Lease")
			opLease := &coordinationv1.Lease{}
			g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: operatorLease}, opLease)).To(Succeed())
			forbidden(g, server.Update(ctx, opLease), "the ops-server ServiceAccount updates the operator's Lease")
			g.Expect(admin.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "someone-else", Namespace: ns}})).To(Succeed())
			for who, c := range map[string]client.Client{"ops-server": server, "ops-operator": operator} {
				forbidden(g, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "someone-else"}, &coordinationv1.Lease{}), who+" gets another Lease of the release namespace")
				forbidden(g, c.List(ctx, &coordinationv1.LeaseList{}, client.InNamespace(ns)), who+" lists Leases")
				forbidden(g, c.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: operatorLease, Namespace: ns}}), who+" deletes a Lease")
				for _, name := range append(fluxLeases, operatorLease) {
					forbidden(g, c.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: other}}), who+" creates "+name+" in another namespace")
				}
			}
			// The Leases are the release namespace's: with the vmclusters
			// elsewhere, neither Deployment needs a Lease rule there beyond
			// ops-apiserver's upgrade locks.
			g.Expect(ns).NotTo(Equal(vmns))
			dep := toDeployment(t, find(t, in.res.Objects, "Deployment", in.fullname))
			for _, c := range []string{"source-controller", "helm-controller"} {
				args := flagMap(t, container(t, dep.Spec.Template.Spec, c).Args)
				g.Expect(args).To(HaveKeyWithValue("enable-leader-election", "true"), c)
				if shard == "" {
					g.Expect(args).NotTo(HaveKey("watch-label-selector"), c)
				} else {
					g.Expect(args).To(HaveKeyWithValue("watch-label-selector", opsv1.FluxShardLabel+"="+shard), c)
				}
			}
			g.Expect(dep.Spec.Template.Spec.ServiceAccountName).To(Equal(in.serverSA()))
		})
	}
}
