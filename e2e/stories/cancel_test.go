package stories

import (
	"context"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/e2e/suite"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
)

// storyCancelBlueGreen: a blue-green upgrade whose drain a
// PodDisruptionBudget holds is cancelled through the REST API; the old node
// group's Nodes are schedulable again, and the operation lists the new node
// group it leaves behind.
func storyCancelBlueGreen(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ref := cloud.ClusterRef{Provider: cloud.Mock, Name: "cancel-cluster", Region: "local"}
	g.Expect((&mock.Provider{Client: st.Env.Client}).Seed(ctx, ref, mock.ClusterState{
		Version:    "1.29",
		NodeGroups: map[string]*mock.NodeGroupState{"cancel-old": {Size: 2, InstanceTypes: []string{"m5.large"}}},
	})).To(Succeed())
	oldNodes := client.MatchingLabels{mock.NodeGroupLabel: "cancel-old", mock.ClusterLabel: ref.Name}

	// A workload on the old group that a PodDisruptionBudget keeps whole.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cancel-story"}}
	g.Expect(st.Env.Client.Create(ctx, ns)).To(Succeed())
	t.Cleanup(func() { _ = st.Env.Client.Delete(context.Background(), ns) })
	labels := map[string]string{"app": "pinned"}
	g.Expect(st.Env.Client.Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "pinned"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: oldNodes,
					Containers:   []corev1.Container{{Name: "c", Image: "busybox"}},
				},
			},
		},
	})).To(Succeed())
	g.Expect(st.Env.Client.Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "pinned"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(2)),
			Selector:     &metav1.LabelSelector{MatchLabels: labels},
		},
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(st.Env.Client.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "pinned"}, d)).To(Succeed())
		g.Expect(d.Status.ReadyReplicas).To(Equal(int32(2)))
	}, 2*time.Minute, time.Second).Should(Succeed())

	code, body := suite.Call(t, http.MethodPost, suite.Upgrades, map[string]any{
		"k8sClusterName": ref.Name, "region": "local", "cloudProvider": "mock", "targetVersion": "1.30",
		"nodeGroupUpgrades": []any{map[string]any{"nodeGroupName": "cancel-old", "strategy": "blue-green", "newNodeGroupName": "cancel-new"}},
	})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	id := body["id"].(string)
	g.Eventually(func(g Gomega) {
		_, body := suite.Call(t, http.MethodGet, suite.Upgrades+"/"+id, nil)
		g.Expect(suite.Field(body, "blockedBy.reason")).To(Equal("PodDisruptionBudget"), "currentStep=%v message=%v", body["currentStep"], body["message"])
	}, 3*time.Minute, time.Second).Should(Succeed())
	nodes := &corev1.NodeList{}
	g.Expect(st.Env.Client.List(ctx, nodes, oldNodes)).To(Succeed())
	g.Expect(nodes.Items).To(HaveLen(2))
	for _, n := range nodes.Items {
		g.Expect(n.Spec.Unschedulable).To(BeTrue(), "%s is cordoned while the drain waits", n.Name)
	}

	code, body = suite.Call(t, http.MethodDelete, suite.Upgrades+"/"+id, nil)
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	cancelled := suite.WaitUpgrade(t, id, "Cancelled", 2*time.Minute)

	g.Expect(st.Env.Client.List(ctx, nodes, oldNodes)).To(Succeed())
	g.Expect(nodes.Items).To(HaveLen(2), "the old node group is not deleted")
	for _, n := range nodes.Items {
		g.Expect(n.Spec.Unschedulable).To(BeFalse(), "%s is schedulable again", n.Name)
		g.Expect(n.Annotations).NotTo(HaveKey(opsv1.CordonedByAnnotation))
	}
	g.Expect(cancelled["leftBehind"]).To(ContainElement(And(
		HaveKeyWithValue("kind", "NodeGroup"), HaveKeyWithValue("name", "cancel-new"),
		HaveKeyWithValue("stepId", "nodegroup/cancel-old/CreateNodeGroup"))), "%v", cancelled["leftBehind"])
}
