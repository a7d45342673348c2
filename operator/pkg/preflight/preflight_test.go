package preflight_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/eks"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/eks/ekstest"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
	"github.com/tidbcloud/ops-server/operator/pkg/preflight"
)

// world is a mock cloud and the Kubernetes objects of its cluster, on the
// controller-runtime fake client (the checks are pure reads).
type world struct {
	kube     client.Client
	provider *mock.Provider
	ref      cloud.ClusterRef
	log      *mock.CallLog
}

func newWorld(t *testing.T, version string, groups map[string]string, objs ...client.Object) *world {
	t.Helper()
	scheme := runtime.NewScheme()
	NewWithT(t).Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&corev1.Node{}).
		WithIndex(&corev1.Pod{}, "spec.nodeName", func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).
		Build()
	w := &world{kube: kube, log: &mock.CallLog{}, ref: cloud.ClusterRef{Provider: cloud.Mock, Name: "c1", Region: "local"}}
	w.provider = &mock.Provider{Client: kube, Log: w.log}
	st := mock.ClusterState{Version: version, NodeGroups: map[string]*mock.NodeGroupState{}, Addons: map[string]*mock.AddonState{
		"vpc-cni": {Version: "v1.18.3", AvailableVersions: []string{"v1.18.3", "v1.18.5"}},
	}}
	for g, v := range groups {
		st.NodeGroups[g] = &mock.NodeGroupState{Version: v, Size: 1, InstanceTypes: []string{"m5.large"}}
	}
	NewWithT(t).Expect(w.provider.Seed(context.Background(), w.ref, st)).To(Succeed())
	return w
}

func (w *world) run(t *testing.T, target string, spec opsv1.ClusterUpgradeOperationSpec) *opsv1.PreflightReport {
	t.Helper()
	rep, err := preflight.Run(context.Background(), preflight.Input{Spec: &spec, Target: target, Provider: w.provider, Ref: w.ref,
		Kube: w.kube, HelmNamespaces: []string{opsv1.VMClusterNamespace}, Now: time.Unix(1700000000, 0)})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return rep
}

func find(rep *opsv1.PreflightReport, name string) opsv1.PreflightCheck {
	for _, c := range rep.Checks {
		if c.Name == name {
			return c
		}
	}
	return opsv1.PreflightCheck{}
}

func inPlace(groups ...string) opsv1.ClusterUpgradeOperationSpec {
	s := opsv1.ClusterUpgradeOperationSpec{}
	for _, g := range groups {
		s.NodeGroupUpgrades = append(s.NodeGroupUpgrades, opsv1.NodeGroupUpgrade{NodeGroupName: g, Strategy: opsv1.StrategyInPlace})
	}
	return s
}

// nodeOf is the name of the mock cloud's first Node of a group.
func nodeOf(t *testing.T, w *world, group string) string {
	list := &corev1.NodeList{}
	NewWithT(t).Expect(w.kube.List(context.Background(), list, client.MatchingLabels{mock.NodeGroupLabel: group})).To(Succeed())
	NewWithT(t).Expect(list.Items).NotTo(BeEmpty())
	return list.Items[0].Name
}

func pod(ns, name, node string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
}

func pdb(ns, name string, maxUnavailable, minAvailable *intstr.IntOrString, allowed int32, app string) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: maxUnavailable, MinAvailable: minAvailable,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed, ExpectedPods: 1}}
}

func intOrStr(v intstr.IntOrString) *intstr.IntOrString { return &v }

// helmSecret is Helm's release Secret of a release rendering manifest.
func helmSecret(t *testing.T, ns, release, manifest string) *corev1.Secret {
	raw, err := json.Marshal(map[string]any{"name": release, "namespace": ns, "version": 1, "manifest": manifest})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(raw)
	NewWithT(t).Expect(zw.Close()).To(Succeed())
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sh.helm.release.v1." + release + ".v1",
			Labels: map[string]string{"owner": "helm", "status": "deployed", "name": release, "version": "1"}},
		Type: preflight.HelmReleaseSecretType,
		Data: map[string][]byte{"release": []byte(base64.StdEncoding.EncodeToString(gz.Bytes()))},
	}
}

func TestAllPass(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t, "1.29", map[string]string{"a": "1.29"})
	rep := w.run(t, "1.30", inPlace("a"))
	g.Expect(rep.Result).To(Equal(opsv1.PreflightPass), "%+v", rep.Checks)
	g.Expect(rep.TargetVersion).To(Equal("1.30"))
	names := []string{}
	for _, c := range rep.Checks {
		names = append(names, c.Name)
	}
	g.Expect(names).To(Equal([]string{opsv1.PreflightCheckVersionSkew, opsv1.PreflightCheckNodeGroups, opsv1.PreflightCheckAddons,
		opsv1.PreflightCheckAddonCompatibility, opsv1.PreflightCheckDisruptionBudgets, opsv1.PreflightCheckRemovedAPIs, opsv1.PreflightCheckCapacity}))
	g.Expect(w.log.Mutations()).To(BeEmpty())
}

func TestVersionSkew(t *testing.T) {
	cases := []struct {
		name    string
		cluster string
		groups  map[string]string
		target  string
		result  opsv1.PreflightResult
		want    string
	}{
		{"one minor", "1.29", map[string]string{"a": "1.29"}, "1.30", opsv1.PreflightPass, "control plane 1.29 → 1.30"},
		{"two minors", "1.29", map[string]string{"a": "1.29"}, "1.31", opsv1.PreflightFail, "more than one minor version ahead"},
		{"back", "1.29", map[string]string{"a": "1.29"}, "1.28", opsv1.PreflightFail, "older than the cluster's"},
		{"kubelet three behind is allowed", "1.29", map[string]string{"a": "1.27"}, "1.30", opsv1.PreflightPass, `node group "a" at 1.27`},
		{"kubelet four behind", "1.29", map[string]string{"a": "1.29", "old": "1.26"}, "1.30", opsv1.PreflightFail,
			`node group "old" runs kubelet 1.26, more than 3 minor versions older than the target 1.30`},
		{"kubelet skew before 1.28 is two", "1.26", map[string]string{"old": "1.24"}, "1.27", opsv1.PreflightFail, "more than 2 minor versions older"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := newWorld(t, tc.cluster, tc.groups)
			c := find(w.run(t, tc.target, inPlace()), opsv1.PreflightCheckVersionSkew)
			g.Expect(c.Result).To(Equal(tc.result), "%+v", c)
			g.Expect(strings.Join(c.Evidence, "\n")).To(ContainSubstring(tc.want))
		})
	}
}

func TestNodeGroupsAndAddons(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t, "1.29", map[string]string{"a": "1.29", "b": "1.29"})
	spec := opsv1.ClusterUpgradeOperationSpec{
		NodeGroupUpgrades: []opsv1.NodeGroupUpgrade{{NodeGroupName: "nope", Strategy: opsv1.StrategyInPlace},
			{NodeGroupName: "a", Strategy: opsv1.StrategyBlueGreen, NewNodeGroupName: "b"}},
		ClusterAddons: []opsv1.ClusterAddon{{Name: "vpc-cni", Version: "v9"}, {Name: "coredns", Version: "v1"}},
	}
	rep := w.run(t, "1.30", spec)
	g.Expect(rep.Result).To(Equal(opsv1.PreflightFail))
	g.Expect(find(rep, opsv1.PreflightCheckNodeGroups).Evidence).To(Equal([]string{`node group "nope" does not exist`, `new node group name "b" is already taken`}),
		"only the problems of a failed check are its evidence")
	g.Expect(find(rep, opsv1.PreflightCheckAddons).Evidence).To(ConsistOf(`addon "vpc-cni" has no version "v9" (available: v1.18.3, v1.18.5)`, `addon "coredns" is not installed`))
	// The mock cloud has no compatibility data: said, not guessed.
	compat := find(rep, opsv1.PreflightCheckAddonCompatibility)
	g.Expect(compat.Result).To(Equal(opsv1.PreflightWarn))
	g.Expect(compat.Evidence[0]).To(HavePrefix("not checked: mock does not expose"))
	capacity := find(rep, opsv1.PreflightCheckCapacity)
	g.Expect(capacity.Result).To(Equal(opsv1.PreflightWarn))
	g.Expect(capacity.Evidence).To(ContainElement(`node group "a" needs 1 more nodes (m5.large) while "b" is created`))
	g.Expect(preflight.Failures(rep)).To(ContainSubstring(`node group "nope" does not exist; new node group name "b" is already taken; addon "vpc-cni" has no version "v9"`))
}

func TestPodDisruptionBudgets(t *testing.T) {
	cases := []struct {
		name   string
		budget *policyv1.PodDisruptionBudget
		result opsv1.PreflightResult
		want   string
	}{
		{"maxUnavailable 0", pdb("observability", "vmstorage", intOrStr(intstr.FromInt32(0)), nil, 0, "vmstorage"), opsv1.PreflightFail,
			"PodDisruptionBudget observability/vmstorage (maxUnavailable 0, disruptionsAllowed 0) guards Pods observability/vmstorage-0 on node %s of node group \"a\": it never allows an eviction"},
		{"maxUnavailable 0%", pdb("observability", "vmstorage", intOrStr(intstr.FromString("0%")), nil, 0, "vmstorage"), opsv1.PreflightFail, "it never allows an eviction"},
		{"minAvailable 100%", pdb("observability", "vmstorage", nil, intOrStr(intstr.FromString("100%")), 0, "vmstorage"), opsv1.PreflightFail, "it never allows an eviction"},
		{"no disruption allowed now", pdb("observability", "vmstorage", nil, intOrStr(intstr.FromInt32(1)), 0, "vmstorage"), opsv1.PreflightWarn, "it allows no eviction now"},
		{"allows one", pdb("observability", "vmstorage", intOrStr(intstr.FromInt32(1)), nil, 1, "vmstorage"), opsv1.PreflightPass, "disruptionsAllowed 1"},
		{"pending pod is not guarded", nil, opsv1.PreflightPass, "no PodDisruptionBudget guards the 0 Pods"},
		{"guards other pods", pdb("observability", "other", intOrStr(intstr.FromInt32(0)), nil, 0, "other"), opsv1.PreflightPass, "no PodDisruptionBudget guards the 1 Pods"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := newWorld(t, "1.29", map[string]string{"a": "1.29", "b": "1.29"})
			node := nodeOf(t, w, "a")
			ctx := context.Background()
			p := pod("observability", "vmstorage-0", node, map[string]string{"app": "vmstorage"})
			budget := tc.budget
			if budget == nil {
				// The Eviction API checks no budget for a Pod that is not
				// Running and Ready: nothing to block.
				p.Status = corev1.PodStatus{Phase: corev1.PodPending}
				budget = pdb("observability", "vmstorage", intOrStr(intstr.FromInt32(0)), nil, 0, "vmstorage")
			}
			g.Expect(w.kube.Create(ctx, p)).To(Succeed())
			// A Pod on a group not being upgraded is not the drain's.
			g.Expect(w.kube.Create(ctx, pod("observability", "vmstorage-1", nodeOf(t, w, "b"), map[string]string{"app": "vmstorage"}))).To(Succeed())
			g.Expect(w.kube.Create(ctx, budget)).To(Succeed())
			c := find(w.run(t, "1.30", inPlace("a")), opsv1.PreflightCheckDisruptionBudgets)
			g.Expect(c.Result).To(Equal(tc.result), "%+v", c)
			want := tc.want
			if strings.Contains(want, "%s") {
				want = strings.Replace(want, "%s", node, 1)
			}
			g.Expect(strings.Join(c.Evidence, "\n")).To(ContainSubstring(want))
			g.Expect(strings.Join(c.Evidence, "\n")).NotTo(ContainSubstring("vmstorage-1"))
		})
	}
}

const removedManifest = `---
# Source: app/templates/pdb.yaml
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata:
  name: app
spec:
  maxUnavailable: 1
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
`

func TestRemovedAPIsInHelmReleases(t *testing.T) {
	t.Run("crossing the removal", func(t *testing.T) {
		g := NewWithT(t)
		w := newWorld(t, "1.24", map[string]string{"a": "1.24"}, helmSecret(t, opsv1.VMClusterNamespace, "app", removedManifest))
		rep := w.run(t, "1.25", inPlace())
		c := find(rep, opsv1.PreflightCheckRemovedAPIs)
		g.Expect(c.Result).To(Equal(opsv1.PreflightFail))
		g.Expect(c.Evidence).To(ConsistOf(`Helm release observability/app renders PodDisruptionBudget "app" with apiVersion policy/v1beta1, removed in Kubernetes 1.25; use policy/v1`))
		g.Expect(c.Hint).To(ContainSubstring("deprecation-guide"))
	})
	t.Run("not crossing it", func(t *testing.T) {
		g := NewWithT(t)
		w := newWorld(t, "1.25", map[string]string{"a": "1.25"}, helmSecret(t, opsv1.VMClusterNamespace, "app", removedManifest))
		g.Expect(find(w.run(t, "1.26", inPlace()), opsv1.PreflightCheckRemovedAPIs).Result).To(Equal(opsv1.PreflightPass))
	})
	t.Run("a release outside the namespaces read", func(t *testing.T) {
		g := NewWithT(t)
		w := newWorld(t, "1.24", map[string]string{"a": "1.24"}, helmSecret(t, "elsewhere", "app", removedManifest))
		c := find(w.run(t, "1.25", inPlace()), opsv1.PreflightCheckRemovedAPIs)
		g.Expect(c.Result).To(Equal(opsv1.PreflightPass))
		g.Expect(c.Evidence).To(ContainElement("0 deployed Helm releases read in observability"))
	})
}

func TestRemovedAPITable(t *testing.T) {
	g := NewWithT(t)
	seen := map[string]bool{}
	for _, r := range preflight.RemovedAPIs {
		key := r.GroupVersion + " " + r.Kind
		g.Expect(seen[key]).To(BeFalse(), "duplicate %s", key)
		seen[key] = true
		_, _, ok := cloud.MajorMinor(r.RemovedIn)
		g.Expect(ok).To(BeTrue(), key)
		g.Expect(r.Resource).To(Equal(strings.ToLower(r.Resource)), key)
		g.Expect(r.Replacement).NotTo(Equal(r.GroupVersion), key)
	}
	g.Expect(seen).To(HaveKey("flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema"))
}

// TestAddonCompatibilityOnEKS runs the check against the EKS fake server:
// the real SDK's DescribeAddonVersions with the target's minor.
func TestAddonCompatibilityOnEKS(t *testing.T) {
	srv := ekstest.New(t)
	srv.AddCluster(ekstest.Cluster{Name: "prod", Region: "eu-west-1", Version: "1.29",
		NodeGroups: []ekstest.NodeGroup{{Name: "a", DesiredSize: 1, MinSize: 1, MaxSize: 2, InstanceTypes: []string{"m5.large"}}},
		Addons: []ekstest.Addon{{Name: "vpc-cni", Version: "v1.18.3-eksbuild.1", Versions: []string{"v1.18.5-eksbuild.1", "v1.18.3-eksbuild.1"},
			Compatible: map[string][]string{"1.30": {"v1.18.5-eksbuild.1"}}}}})
	p, err := eks.New(context.Background(), eks.Options{Region: "eu-west-1", Endpoint: srv.URL, PollInterval: time.Second,
		Credentials: credentials.NewStaticCredentialsProvider("AKIAFAKEFAKEFAKEFAKE", "fake", "")})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	ref := cloud.ClusterRef{Provider: cloud.EKS, Name: "prod", Region: "eu-west-1"}
	for _, tc := range []struct {
		version string
		result  opsv1.PreflightResult
		want    string
	}{
		{"v1.18.5-eksbuild.1", opsv1.PreflightPass, `addon "vpc-cni" v1.18.5-eksbuild.1 runs on Kubernetes 1.30`},
		{"v1.18.3-eksbuild.1", opsv1.PreflightFail, `addon "vpc-cni" v1.18.3-eksbuild.1 is not compatible with Kubernetes 1.30 (compatible: v1.18.5-eksbuild.1)`},
	} {
		t.Run(tc.version, func(t *testing.T) {
			g := NewWithT(t)
			spec := opsv1.ClusterUpgradeOperationSpec{ClusterAddons: []opsv1.ClusterAddon{{Name: "vpc-cni", Version: tc.version}}}
			rep, err := preflight.Run(context.Background(), preflight.Input{Spec: &spec, Target: "1.30", Provider: p, Ref: ref, Now: time.Now()})
			g.Expect(err).NotTo(HaveOccurred())
			c := find(rep, opsv1.PreflightCheckAddonCompatibility)
			g.Expect(c.Result).To(Equal(tc.result))
			g.Expect(c.Evidence).To(ContainElement(tc.want))
			// Without a Kubernetes client the Kubernetes-side checks say so.
			g.Expect(find(rep, opsv1.PreflightCheckDisruptionBudgets).Evidence).To(Equal([]string{"not checked: no Kubernetes client"}))
		})
	}
}
