package deploy

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/e2e/deploy/render"
)

// TestStackChartsApplyToAPIServer: the charts of the default
// ObservabilityStack (docs/bootstrap.md) render with their default values
// and every object they render is accepted by a real API server (the
// vm-operator chart's CRDs installed first, as Helm does), so the VMAgent
// the vmagent chart renders is checked against the VMAgent schema of the
// operator version the vm-operator chart installs.
func TestStackChartsApplyToAPIServer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)

	op, err := render.Render(render.Options{ChartDir: filepath.Join(root, "deploy", "charts", "vm-operator"), ReleaseName: "vm-operator", Namespace: ns})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(len(op.CRDs)).To(BeNumerically(">", 20), "the operator's CRDs (make manifests)")
	names := map[string]bool{}
	for _, crd := range op.CRDs {
		g.Expect(crd.GetKind()).To(Equal("CustomResourceDefinition"))
		names[crd.GetName()] = true
		// crds/ (installed by testenv) has the VMCluster CRD already.
		if crd.GetName() == "vmclusters.operator.victoriametrics.com" {
			g.Expect(apply(ctx, crd, true)).To(Succeed(), describe(crd))
			continue
		}
		g.Expect(apply(ctx, crd, false)).To(Succeed(), describe(crd))
	}
	g.Expect(names).To(HaveKey("vmagents.operator.victoriametrics.com"))
	g.Expect(names).To(HaveKey("vmservicescrapes.operator.victoriametrics.com"))
	g.Eventually(func(g Gomega) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "vmagents.operator.victoriametrics.com"}, crd)).To(Succeed())
		established := false
		for _, c := range crd.Status.Conditions {
			established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
		}
		g.Expect(established).To(BeTrue())
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	kinds := map[string]int{}
	for _, obj := range op.Objects {
		kinds[obj.GetKind()]++
		g.Expect(obj.GetKind()).NotTo(Equal("Namespace"))
		// Helm puts the chart's objects in the release namespace.
		obj.SetNamespace(ns)
		g.Expect(apply(ctx, obj, true)).To(Succeed(), describe(obj))
	}
	g.Expect(kinds).To(Equal(map[string]int{"ServiceAccount": 1, "Deployment": 1, "Role": 1, "RoleBinding": 1}))

	// Its cluster permissions: rendered by the chart only with clusterRBAC
	// (installed on its own); in a stack, by the ops-server chart, with the
	// same rules, bound to the component's ServiceAccount.
	standalone, err := render.Render(render.Options{ChartDir: filepath.Join(root, "deploy", "charts", "vm-operator"), ReleaseName: "vm-operator", Namespace: ns,
		Values: map[string]any{"clusterRBAC": true}})
	g.Expect(err).NotTo(HaveOccurred())
	ownRole := &rbacv1.ClusterRole{}
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(find(t, standalone.Objects, "ClusterRole", ns+"-vm-operator").Object, ownRole)).To(Succeed())
	server := renderChart(t, "ops-server", ns, nil)
	serverRole := &rbacv1.ClusterRole{}
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(find(t, server.Objects, "ClusterRole", "ops-server-vm-operator").Object, serverRole)).To(Succeed())
	g.Expect(serverRole.Rules).To(Equal(ownRole.Rules))
	binding := &rbacv1.ClusterRoleBinding{}
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(find(t, server.Objects, "ClusterRoleBinding", "ops-server-vm-operator").Object, binding)).To(Succeed())
	g.Expect(binding.Subjects).To(Equal([]rbacv1.Subject{{Kind: "ServiceAccount", Name: "vm-operator", Namespace: ns}}))
	g.Expect(find(t, op.Objects, "ServiceAccount", "vm-operator")).NotTo(BeNil())

	agent, err := render.Render(render.Options{ChartDir: filepath.Join(root, "deploy", "charts", "vmagent"), ReleaseName: "vmagent", Namespace: ns})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(agent.Objects).To(HaveLen(1))
	vmagent := agent.Objects[0]
	vmagent.SetNamespace(ns)
	g.Expect(vmagent.GetKind()).To(Equal("VMAgent"))
	g.Eventually(func() error { return apply(ctx, vmagent, true) }, time.Minute, 250*time.Millisecond).Should(Succeed(), describe(vmagent))
	url := vmagent.Object["spec"].(map[string]any)["remoteWrite"].([]any)[0].(map[string]any)["url"]
	g.Expect(url).To(Equal("http://vminsert-vmcluster." + ns + ".svc:8480/insert/0/prometheus/api/v1/write"))

	// The schemas are strict: an unknown key is refused at render time.
	_, err = render.Render(render.Options{ChartDir: filepath.Join(root, "deploy", "charts", "vmagent"), ReleaseName: "vmagent", Namespace: ns,
		Values: map[string]any{"remoteWriteURL": "http://elsewhere"}})
	g.Expect(err).To(MatchError(ContainSubstring("remoteWriteURL")))
	_, err = render.Render(render.Options{ChartDir: filepath.Join(root, "deploy", "charts", "vm-operator"), ReleaseName: "vm-operator", Namespace: ns,
		Values: map[string]any{"env": map[string]any{"KUBECONFIG": "/x"}}})
	g.Expect(err).To(MatchError(ContainSubstring("'KUBECONFIG' does not match pattern")))
}
