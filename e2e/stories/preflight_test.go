package stories

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/e2e/suite"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
)

// storyPreflight: a PodDisruptionBudget with maxUnavailable 0 over a
// vmstorage Pod on the node group being replaced makes POST
// …/preflight fail, naming the budget and the Pod; the same body POSTed
// as an operation ends Failed before any cloud change, with the same
// failed check in its preflight (ops-apiserver and ops-operator run the
// same checks).
func storyPreflight(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ref := cloud.ClusterRef{Provider: cloud.Mock, Name: "preflight-cluster", Region: "local"}
	p := &mock.Provider{Client: st.Env.Client}
	g.Expect(p.Seed(ctx, ref, mock.ClusterState{
		Version:    "1.31",
		NodeGroups: map[string]*mock.NodeGroupState{"pf-ng": {Size: 1, InstanceTypes: []string{"m5.large"}}},
	})).To(Succeed())
	nodes := &corev1.NodeList{}
	g.Expect(st.Env.Client.List(ctx, nodes, client.MatchingLabels{mock.NodeGroupLabel: "pf-ng"})).To(Succeed())
	g.Expect(nodes.Items).To(HaveLen(1))
	node := nodes.Items[0].Name

	labels := map[string]string{"app.kubernetes.io/name": "vmstorage", "ops.test/story": "preflight"}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: obs, Name: "vmstorage-preflight-0", Labels: labels},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "vmstorage", Image: "victoriametrics/vmstorage"}}},
	}
	g.Expect(st.Env.Client.Create(ctx, pod)).To(Succeed())
	t.Cleanup(func() { _ = st.Env.Client.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) })
	g.Eventually(func(g Gomega) {
		got := &corev1.Pod{}
		g.Expect(st.Env.Client.Get(ctx, client.ObjectKeyFromObject(pod), got)).To(Succeed())
		g.Expect(got.Status.Phase).To(Equal(corev1.PodRunning), "kwok runs the Pod on its Node")
		ready := false
		for _, c := range got.Status.Conditions {
			ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		}
		g.Expect(ready).To(BeTrue())
	}, time.Minute, 500*time.Millisecond).Should(Succeed())
	zero := intstr.FromInt32(0)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: obs, Name: "vmstorage-preflight"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero, Selector: &metav1.LabelSelector{MatchLabels: labels}},
	}
	g.Expect(st.Env.Client.Create(ctx, pdb)).To(Succeed())
	t.Cleanup(func() { _ = st.Env.Client.Delete(context.Background(), pdb) })

	req := map[string]any{
		"k8sClusterName": "preflight-cluster", "region": "local", "cloudProvider": "mock", "targetVersion": "1.32",
		"nodeGroupUpgrades": []any{map[string]any{"nodeGroupName": "pf-ng", "strategy": "blue-green", "newNodeGroupName": "pf-ng-132"}},
	}
	code, rep := suite.Call(t, http.MethodPost, suite.Upgrades+"/preflight", req)
	g.Expect(code).To(Equal(http.StatusOK), "%v", rep)
	g.Expect(rep["result"]).To(Equal("fail"))
	restPDB := check(g, rep, "PodDisruptionBudgets")
	g.Expect(restPDB["result"]).To(Equal("fail"))
	evidence := toString(restPDB["evidence"])
	g.Expect(evidence).To(ContainSubstring("PodDisruptionBudget observability/vmstorage-preflight (maxUnavailable 0"))
	g.Expect(evidence).To(ContainSubstring("observability/vmstorage-preflight-0 on node " + node))
	removed := check(g, rep, "RemovedAPIs")
	g.Expect(removed["result"]).To(Equal("pass"), "%v", removed)
	// 1.32 removes flowcontrol v1beta3: the Helm releases of the
	// vmcluster namespace are read (a Secret list the deployment's RBAC
	// allows: a refusal would be a "not checked" warning).
	g.Expect(toString(removed["evidence"])).To(MatchRegexp(`[0-9]+ deployed Helm releases read in observability`))
	g.Expect(toString(removed["evidence"])).NotTo(ContainSubstring("not checked"))
	code, list := suite.Call(t, http.MethodGet, suite.Upgrades+"?k8sClusterName=preflight-cluster", nil)
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(list["upgradeOperations"]).To(BeEmpty(), "a preflight creates nothing")

	// The same body as an operation: Failed before any cloud change, the
	// same failed check recorded by ops-operator.
	code, created := suite.Call(t, http.MethodPost, suite.Upgrades, req)
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", created)
	done := suite.WaitUpgrade(t, created["id"].(string), "Failed", 2*time.Minute)
	g.Expect(done["message"]).To(HavePrefix("Preflight: PodDisruptionBudget observability/vmstorage-preflight"))
	opPreflight, ok := done["preflight"].(map[string]any)
	g.Expect(ok).To(BeTrue(), "%v", done)
	g.Expect(opPreflight["result"]).To(Equal("fail"))
	g.Expect(check(g, opPreflight, "PodDisruptionBudgets")["evidence"]).To(Equal(restPDB["evidence"]), "ops-operator and ops-apiserver report the same")
	state, err := p.State(ctx, ref)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(state.Version).To(Equal("1.31"))
	g.Expect(state.NodeGroups).To(HaveLen(1), "no node group was created")
	g.Expect(state.Operations).To(BeEmpty(), "no cloud operation was started")
}

// check is the check name of a preflight report.
func check(g Gomega, rep map[string]any, name string) map[string]any {
	for _, c := range rep["checks"].([]any) {
		if m := c.(map[string]any); m["name"] == name {
			return m
		}
	}
	g.Expect(name).To(BeEmpty(), "no check %s in %v", name, rep)
	return nil
}

func toString(v any) string {
	var b strings.Builder
	if list, ok := v.([]any); ok {
		for _, x := range list {
			s, _ := x.(string)
			b.WriteString(s)
			b.WriteString("\n")
		}
	}
	return b.String()
}
