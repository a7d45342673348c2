package stories

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/e2e/stack"
	"github.com/tidbcloud/ops-server/e2e/suite"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
)

// storyRolloutTarget: a vmcluster created under a name other than
// "vmcluster" is moved by a blue-green upgrade whose node-group upgrade
// names it, and a later PUT of its values — which still pin vmstorage to
// the old, deleted node group — keeps vmstorage on the new one: the
// rollout recorded its values on the vmcluster's HelmRelease, and Helm
// renders them into every upgrade. A cluster of its own in the simulated
// cloud keeps the story independent of the others.
func storyRolloutTarget(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ref := cloud.ClusterRef{Provider: cloud.Mock, Name: "target-cluster", Region: "local"}
	p := &mock.Provider{Client: st.Env.Client}
	g.Expect(p.Seed(ctx, ref, mock.ClusterState{
		Version:    "1.29",
		NodeGroups: map[string]*mock.NodeGroupState{"metrics-store": {Size: 2, InstanceTypes: []string{"r5.xlarge"}}},
	})).To(Succeed())

	// The vmcluster's own values place vmstorage on node group
	// metrics-store, by the node-group label.
	values := func(vmselectReplicas int) map[string]any {
		return map[string]any{
			"vmstorage": map[string]any{"replicaCount": 2, "nodeSelector": map[string]any{stack.NodeGroupLabel: "metrics-store"}},
			"vmselect":  map[string]any{"replicaCount": vmselectReplicas},
		}
	}
	code, body := suite.Call(t, http.MethodPost, suite.VMClusters, map[string]any{"name": "metrics", "values": values(1)})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	suite.WaitVMCluster(t, "metrics", "RUNNING", 3*time.Minute)
	g.Eventually(func(g Gomega) { stsReady(g, "vmstorage-metrics", 2) }, 3*time.Minute, time.Second).Should(Succeed())

	upgrade := func(target string) map[string]any {
		return map[string]any{
			"k8sClusterName": ref.Name, "region": ref.Region, "cloudProvider": "mock", "targetVersion": "1.30",
			"nodeGroupUpgrades": []any{map[string]any{
				"nodeGroupName": "metrics-store", "strategy": "blue-green", "newNodeGroupName": "metrics-store-130",
				"requiresVMStorageRollout": true, "vmCluster": target,
				"vmClusterHelmValues": map[string]any{"vmstorage": map[string]any{"nodeSelector": map[string]any{stack.NodeGroupLabel: "metrics-store-130"}}},
			}},
		}
	}
	// A target that does not exist is refused before anything is created.
	code, body = suite.Call(t, http.MethodPost, suite.Upgrades, upgrade("no-such-vmcluster"))
	g.Expect(code).To(Equal(http.StatusBadRequest), "%v", body)
	g.Expect(body["error"]).To(HaveKeyWithValue("message", ContainSubstring("rollout target")))
	g.Expect(fmt.Sprint(body)).To(ContainSubstring("nodeGroupUpgrades[0].vmCluster"))

	code, body = suite.Call(t, http.MethodPost, suite.Upgrades, upgrade("metrics"))
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	g.Expect(suite.Field(body, "spec.nodeGroupUpgrades")).To(ContainElement(HaveKeyWithValue("vmCluster", "metrics")))
	g.Expect(suite.Field(body, "spec.nodeGroupUpgrades")).To(ContainElement(HaveKeyWithValue("vmstorageSTSName", "vmstorage-metrics")))
	id := body["id"].(string)
	done := suite.WaitUpgrade(t, id, "Succeeded", 6*time.Minute)
	for _, s := range done["steps"].([]any) {
		g.Expect(suite.Field(s.(map[string]any), "phase")).To(Equal("Succeeded"), "%v", s)
	}
	onNewGroup := func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(st.Env.Client.List(ctx, pods, client.InNamespace(obs),
			client.MatchingLabels{"app.kubernetes.io/name": "vmstorage", "app.kubernetes.io/instance": "metrics"})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(2))
		for _, pod := range pods.Items {
			g.Expect(pod.Spec.NodeName).NotTo(BeEmpty(), "pod %s is not scheduled", pod.Name)
			node := &corev1.Node{}
			g.Expect(st.Env.Client.Get(ctx, client.ObjectKey{Name: pod.Spec.NodeName}, node)).To(Succeed())
			g.Expect(node.Labels).To(HaveKeyWithValue(stack.NodeGroupLabel, "metrics-store-130"), "pod %s", pod.Name)
			g.Expect(node.Labels).To(HaveKeyWithValue(mock.ClusterLabel, ref.Name), "pod %s", pod.Name)
		}
	}
	g.Eventually(onNewGroup, time.Minute, time.Second).Should(Succeed())

	// The overlay is recorded on the vmcluster's HelmRelease.
	hr := &helmv2.HelmRelease{}
	g.Expect(st.Env.Client.Get(ctx, client.ObjectKey{Namespace: obs, Name: "metrics"}, hr)).To(Succeed())
	g.Expect(hr.Spec.PostRenderers).To(HaveLen(1))
	g.Expect(hr.Spec.PostRenderers[0].Kustomize.Patches[0].Patch).To(HavePrefix("# ops-server-vmstorage-rollout\n"))
	g.Eventually(func(g Gomega) { releaseReady(g, "metrics", hr.Generation) }, 3*time.Minute, time.Second).Should(Succeed())

	// A PUT of values that still name the old node group: a change of
	// vmselect, allowed without allow_data_loss.
	code, body = suite.Call(t, http.MethodPut, suite.VMClusters+"/metrics", map[string]any{"values": values(2)})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	g.Expect(st.Env.Client.Get(ctx, client.ObjectKey{Namespace: obs, Name: "metrics"}, hr)).To(Succeed())
	g.Expect(hr.Spec.PostRenderers).To(HaveLen(1), "the PUT keeps the post-renderer")
	g.Eventually(func(g Gomega) { releaseReady(g, "metrics", hr.Generation) }, 3*time.Minute, time.Second).Should(Succeed())

	// Helm applied the new values with the overlay: the VMCluster keeps
	// vmstorage on the new node group, and so do its pods.
	vmc := &unstructured.Unstructured{}
	vmc.SetAPIVersion("operator.victoriametrics.com/v1beta1")
	vmc.SetKind("VMCluster")
	g.Expect(st.Env.Client.Get(ctx, client.ObjectKey{Namespace: obs, Name: "metrics"}, vmc)).To(Succeed())
	n, _, _ := unstructured.NestedInt64(vmc.Object, "spec", "vmselect", "replicaCount")
	g.Expect(n).To(Equal(int64(2)), "the PUT's values are applied")
	sel, _, _ := unstructured.NestedStringMap(vmc.Object, "spec", "vmstorage", "nodeSelector")
	g.Expect(sel).To(HaveKeyWithValue(stack.NodeGroupLabel, "metrics-store-130"))
	g.Eventually(func(g Gomega) { stsReady(g, "vmselect-metrics", 2) }, 3*time.Minute, time.Second).Should(Succeed())
	suite.WaitVMCluster(t, "metrics", "RUNNING", 3*time.Minute)
	g.Consistently(onNewGroup, 10*time.Second, time.Second).Should(Succeed())
}

// releaseReady checks that helm-controller reconciled generation gen (or a
// later one) of HelmRelease obs/name and it is Ready.
func releaseReady(g Gomega, name string, gen int64) {
	hr := &helmv2.HelmRelease{}
	g.Expect(st.Env.Client.Get(context.Background(), client.ObjectKey{Namespace: obs, Name: name}, hr)).To(Succeed())
	g.Expect(hr.Status.ObservedGeneration).To(BeNumerically(">=", gen))
	ready := apimeta.FindStatusCondition(hr.Status.Conditions, meta.ReadyCondition)
	g.Expect(ready).NotTo(BeNil())
	g.Expect(ready.Status).To(BeEquivalentTo("True"), "%s: %s", ready.Reason, ready.Message)
	g.Expect(ready.ObservedGeneration).To(BeNumerically(">=", gen))
}
