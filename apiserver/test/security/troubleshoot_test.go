package security

// Issue #21: logs and exec reach a Pod only when it is one of the
// vmcluster's (its owner references lead to the VMCluster the release
// installed), never a Pod elsewhere in the namespace or in another
// namespace, whatever the caller's role; the server's allowlist holds even
// for the admin.

import (
	"context"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/apiserver/internal/troubleshoot"
)

func TestLogsAndExecReachOnlyTheVMClustersPods(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := start(t, func(c *config.Config) { c.Troubleshoot.ExecAllowedCommands = []string{"ls"} })
	code, b := f.do(http.MethodPost, "/api/v1/observability-ops/vmclusters", `{"name":"sec"}`)
	g.Expect(code).To(Equal(http.StatusAccepted), string(b))

	// Pods a caller might aim at: one in the vmcluster namespace that no
	// vmcluster owns (named like a vmstorage Pod), one of that name in
	// another namespace, and the ops-server namespace's own.
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "vmstorage", Image: "x"}}}
	other := env.NewNamespace(t)
	for _, p := range []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "vmstorage-sec-0", Namespace: f.ns, Labels: map[string]string{"app.kubernetes.io/name": "vmstorage", "app.kubernetes.io/instance": "sec"}}, Spec: spec},
		{ObjectMeta: metav1.ObjectMeta{Name: "vmstorage-sec-0", Namespace: other}, Spec: spec},
	} {
		g.Expect(f.kube.Create(ctx, p)).To(Succeed())
	}
	for _, path := range []string{
		"/api/v1/observability-ops/vmclusters/sec/pods/vmstorage-sec-0",
		"/api/v1/observability-ops/vmclusters/sec/pods/..%2F..%2F" + other + "%2Fvmstorage-sec-0",
		"/api/v1/observability-ops/vmclusters/sec/pods/" + other + "%2Fvmstorage-sec-0",
	} {
		code, b := f.do(http.MethodGet, path+"/logs", "")
		g.Expect(code).To(Equal(http.StatusNotFound), path+": "+string(b))
		code, b = f.do(http.MethodPost, path+"/exec", `{"command":["ls"]}`)
		g.Expect(code).To(Equal(http.StatusNotFound), path+": "+string(b))
	}
	// The allowlist holds for the admin too, before any lookup.
	code, b = f.do(http.MethodPost, "/api/v1/observability-ops/vmclusters/sec/pods/vmstorage-sec-0/exec", `{"command":["sh","-c","ls"]}`)
	g.Expect(code).To(Equal(http.StatusForbidden), string(b))
	g.Expect(string(b)).To(ContainSubstring(troubleshoot.ReasonCommandNotAllowed))
	// The resource tree and the Pods list show none of them.
	code, b = f.do(http.MethodGet, "/api/v1/observability-ops/vmclusters/sec/pods", "")
	g.Expect(code).To(Equal(http.StatusOK), string(b))
	g.Expect(strings.TrimSpace(string(b))).To(Equal(`{"pods":[]}`))
	code, b = f.do(http.MethodGet, "/api/v1/observability-ops/vmclusters/sec/resources", "")
	g.Expect(code).To(Equal(http.StatusOK), string(b))
	g.Expect(string(b)).NotTo(ContainSubstring(`"Pod"`))
}
