package stories

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/e2e/stack"
	"github.com/tidbcloud/ops-server/e2e/suite"
)

// storyLogsExec: a vmcluster created through the REST API; `kubectl logs`
// of its vmstorage Pod returns the log of the real vmstorage process the
// stack runs for it, and `kubectl exec` runs in that process's data
// directory (kwok's Logs and Exec resources; docs/dev.md).
func storyLogsExec(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	code, body := suite.Call(t, http.MethodPost, suite.VMClusters, map[string]any{
		"name":   "logs",
		"values": map[string]any{"vmstorage": map[string]any{"replicaCount": 1}},
	})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	t.Cleanup(func() { suite.Call(t, http.MethodDelete, suite.VMClusters+"/logs", nil) })
	suite.WaitVMCluster(t, "logs", "RUNNING", 3*time.Minute)

	var pod corev1.Pod
	g.Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(st.Env.Client.List(ctx, pods, client.InNamespace(obs), client.MatchingLabels{"app.kubernetes.io/name": "vmstorage", "app.kubernetes.io/instance": "logs"})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(1))
		g.Expect(pods.Items[0].Annotations).To(HaveKey(stack.VMStorageDataPathAnnotation))
		pod = pods.Items[0]
	}, 3*time.Minute, time.Second).Should(Succeed())
	dataDir := pod.Annotations[stack.VMStorageDataPathAnnotation]

	g.Eventually(func(g Gomega) {
		out, err := suite.Kubectl("logs", "-n", obs, pod.Name, "-c", "vmstorage")
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(out).To(ContainSubstring(`opening storage at "` + dataDir + `"`))
	}, 2*time.Minute, 2*time.Second).Should(Succeed())
	out, err := suite.Kubectl("exec", "-n", obs, pod.Name, "-c", "vmstorage", "--", "ls", dataDir)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(strings.Fields(out)).To(ContainElements("data", "indexdb"))
	out, err = suite.Kubectl("exec", "-n", obs, pod.Name, "-c", "vmstorage", "--", "pwd")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(strings.TrimSpace(out)).To(Equal(dataDir))
}
