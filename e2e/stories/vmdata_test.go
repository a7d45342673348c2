package stories

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/e2e/stack"
	"github.com/tidbcloud/ops-server/e2e/suite"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
)

// storyVMData: a vmcluster created through REST ingests 10,000 samples at
// its remote_write endpoint's import path and answers a PromQL query for
// them at its prometheus endpoint, both as the API prints them (the
// stack's Service proxy in front of the real vminsert, vmselect and
// vmstorage processes); after a blue-green upgrade that moves vmstorage
// onto a new node group, the same query returns the same 10,000 samples.
//
// The upgrade moves observability/vmcluster, so the story (re-)creates
// that vmcluster, on the node group that holds vmstorage now (vmstorage,
// or vmstorage-130 after story 2), at the cluster's current version.
func storyVMData(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	if code, _ := suite.Call(t, http.MethodGet, suite.VMClusters+"/vmcluster", nil); code == http.StatusOK {
		code, body := suite.Call(t, http.MethodDelete, suite.VMClusters+"/vmcluster", nil)
		g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
		g.Eventually(func(g Gomega) {
			code, _ := suite.Call(t, http.MethodGet, suite.VMClusters+"/vmcluster", nil)
			g.Expect(code).To(Equal(http.StatusNotFound))
			err := st.Env.Client.Get(ctx, client.ObjectKey{Namespace: obs, Name: "vmstorage-vmcluster"}, &appsv1.StatefulSet{})
			g.Expect(client.IgnoreNotFound(err)).To(Succeed())
			g.Expect(err).To(HaveOccurred(), "the old vmcluster's vmstorage is gone")
		}, 3*time.Minute, time.Second).Should(Succeed())
	}
	state, err := (&mock.Provider{Client: st.Env.Client}).State(ctx, stack.DevCluster)
	g.Expect(err).NotTo(HaveOccurred())
	var groups []string
	for name := range state.NodeGroups {
		if strings.HasPrefix(name, "vmstorage") {
			groups = append(groups, name)
		}
	}
	sort.Strings(groups)
	g.Expect(groups).To(HaveLen(1), "one vmstorage node group in %v", state.NodeGroups)
	from, to := groups[0], "vmstorage-data"

	code, body := suite.Call(t, http.MethodPost, suite.VMClusters, map[string]any{
		"name": "vmcluster",
		"values": map[string]any{"vmstorage": map[string]any{
			"replicaCount": 3, "nodeSelector": map[string]any{stack.NodeGroupLabel: from},
		}},
	})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	running := suite.WaitVMCluster(t, "vmcluster", "RUNNING", 3*time.Minute)
	g.Eventually(func(g Gomega) { stsReady(g, "vmstorage-vmcluster", 3) }, 3*time.Minute, time.Second).Should(Succeed())
	remoteWrite, _ := suite.Field(running, "endpoints.remote_write").(string)
	prometheus, _ := suite.Field(running, "endpoints.prometheus").(string)
	g.Expect(remoteWrite).To(HavePrefix(st.ServicesURL()+"/"), "%v", running["endpoints"])
	g.Expect(prometheus).To(HavePrefix(st.ServicesURL()+"/"), "%v", running["endpoints"])

	// 100 series of 100 samples, one per second, ending now.
	now := time.Now()
	g.Eventually(func() error {
		return stack.WriteSamples(ctx, stack.ImportURL(remoteWrite), "vmdata_story", 100, 100, now)
	}, 2*time.Minute, time.Second).Should(Succeed())
	const samples = `sum(count_over_time(vmdata_story[1d]))`
	g.Eventually(func() (float64, error) { return stack.QueryScalar(ctx, prometheus, samples) }, 2*time.Minute, time.Second).Should(Equal(10000.0))
	g.Expect(stack.QueryScalar(ctx, prometheus, `count(last_over_time(vmdata_story[1d]))`)).To(Equal(100.0))

	code, body = suite.Call(t, http.MethodPost, suite.Upgrades, map[string]any{
		"k8sClusterName": "dev-cluster", "region": "local", "cloudProvider": "mock", "targetVersion": state.Version,
		"nodeGroupUpgrades": []any{
			map[string]any{"nodeGroupName": from, "strategy": "blue-green", "requiresVMStorageRollout": true, "newNodeGroupName": to,
				"vmClusterHelmValues": map[string]any{"vmstorage": map[string]any{"nodeSelector": map[string]any{stack.NodeGroupLabel: to}}}},
		},
	})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	suite.WaitUpgrade(t, body["id"].(string), "Succeeded", 5*time.Minute)
	pods := &corev1.PodList{}
	g.Expect(st.Env.Client.List(ctx, pods, client.InNamespace(obs), client.MatchingLabels{"app.kubernetes.io/name": "vmstorage", "app.kubernetes.io/instance": "vmcluster"})).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(3))
	for _, p := range pods.Items {
		node := &corev1.Node{}
		g.Expect(st.Env.Client.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, node)).To(Succeed())
		g.Expect(node.Labels[stack.NodeGroupLabel]).To(Equal(to), "pod %s", p.Name)
	}

	// Every vmstorage Pod was re-created on the new group; its process runs
	// on the same volume, and the endpoints still answer with every sample.
	g.Eventually(func() (float64, error) { return stack.QueryScalar(ctx, prometheus, samples) }, 3*time.Minute, time.Second).Should(Equal(10000.0))
	g.Expect(stack.QueryScalar(ctx, prometheus, `count(last_over_time(vmdata_story[1d]))`)).To(Equal(100.0))
}
