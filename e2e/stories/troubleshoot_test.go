package stories

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/e2e/stack"
	"github.com/tidbcloud/ops-server/e2e/suite"
)

// storyTroubleshoot: a vmcluster created through the REST API is
// diagnosed only through the REST API (docs/troubleshooting.md): its
// resource tree is all Healthy once RUNNING, its Pods are listed, the log
// of its vmstorage Pod is the real process's and follow=true delivers a
// line written after the request started, exec returns a command's real
// stdout and exit code, and exec is refused to the operator role.
func storyTroubleshoot(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const name = "trouble"
	base := runningVMCluster(t, name)

	// The tree: HelmRelease → VMCluster → workloads → Pods, all Healthy.
	g.Eventually(func(g Gomega) {
		code, tree := suite.Call(t, http.MethodGet, base+"/resources", nil)
		g.Expect(code).To(Equal(http.StatusOK), "%v", tree)
		kinds := map[string]int{}
		var walk func(n map[string]any)
		walk = func(n map[string]any) {
			kinds[n["kind"].(string)]++
			g.Expect(n["health"]).To(Equal("Healthy"), "%s %s: %v", n["kind"], n["name"], n["healthReason"])
			children, _ := n["children"].([]any)
			for _, c := range children {
				walk(c.(map[string]any))
			}
		}
		walk(tree["root"].(map[string]any))
		g.Expect(kinds).To(HaveKeyWithValue("HelmRelease", 1))
		g.Expect(kinds).To(HaveKeyWithValue("VMCluster", 1))
		g.Expect(kinds).To(HaveKey("StatefulSet"))
		g.Expect(kinds["Pod"]).To(BeNumerically(">=", 1))
	}, 3*time.Minute, 2*time.Second).Should(Succeed())

	// The Pods: the vmstorage one, Running and ready.
	var pod string
	g.Eventually(func(g Gomega) {
		code, list := suite.Call(t, http.MethodGet, base+"/pods", nil)
		g.Expect(code).To(Equal(http.StatusOK), "%v", list)
		for _, p := range list["pods"].([]any) {
			p := p.(map[string]any)
			if p["component"] == "vmstorage" {
				g.Expect(p["phase"]).To(Equal("Running"))
				g.Expect(p["ready"]).To(BeTrue())
				pod = p["name"].(string)
			}
		}
		g.Expect(pod).NotTo(BeEmpty(), "%v", list)
	}, time.Minute, time.Second).Should(Succeed())
	podPath := base + "/pods/" + pod

	// The log is the real vmstorage process's.
	g.Eventually(func(g Gomega) {
		code, out := callText(t, http.MethodGet, podPath+"/logs?container=vmstorage", st.Token)
		g.Expect(code).To(Equal(http.StatusOK), out)
		g.Expect(out).To(ContainSubstring("opening storage at"))
	}, 2*time.Minute, 2*time.Second).Should(Succeed())
	code, out := callText(t, http.MethodGet, podPath+"/logs?tailLines=2", st.Token)
	g.Expect(code).To(Equal(http.StatusOK), out)
	g.Expect(strings.Split(strings.TrimSuffix(out, "\n"), "\n")).To(HaveLen(2))

	// follow=true delivers a line the process writes after the request
	// started: the snapshot it makes when asked through its HTTP API.
	followCtx, stopFollow := context.WithCancel(ctx)
	defer stopFollow()
	req, err := http.NewRequestWithContext(followCtx, http.MethodGet, st.APIURL+podPath+"/logs?follow=true&tailLines=1", nil)
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Authorization", "Bearer "+st.Token)
	resp, err := suite.Client(t).Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	followed := gbytes.NewBuffer()
	go func() { _, _ = io.Copy(followed, resp.Body) }()
	g.Eventually(followed, time.Minute).Should(gbytes.Say("\n"), "the last line")
	g.Expect(string(followed.Contents())).NotTo(ContainSubstring("created Storage snapshot"))
	k8sPod := &corev1.Pod{}
	g.Expect(st.Env.Client.Get(ctx, client.ObjectKey{Namespace: obs, Name: pod}, k8sPod)).To(Succeed())
	snap, err := http.Post(k8sPod.Annotations[stack.VMStorageEndpointAnnotation]+"/snapshot/create", "", nil)
	g.Expect(err).NotTo(HaveOccurred())
	_ = snap.Body.Close()
	g.Expect(snap.StatusCode).To(Equal(http.StatusOK))
	g.Eventually(followed, time.Minute).Should(gbytes.Say("created Storage snapshot"))
	stopFollow()

	// exec: real stdout, exit codes.
	code, res := suite.Call(t, http.MethodPost, podPath+"/exec", map[string]any{"command": []string{"ls"}, "timeoutSeconds": 20})
	g.Expect(code).To(Equal(http.StatusOK), "%v", res)
	g.Expect(strings.Fields(res["stdout"].(string))).To(ContainElements("data", "indexdb"))
	g.Expect(res["exitCode"]).To(BeEquivalentTo(0))
	g.Expect(res["truncated"]).To(BeFalse())
	code, res = suite.Call(t, http.MethodPost, podPath+"/exec", map[string]any{"command": []string{"sh", "-c", "echo oops >&2; exit 3"}})
	g.Expect(code).To(Equal(http.StatusOK), "%v", res)
	g.Expect(res["exitCode"]).To(BeEquivalentTo(3))
	g.Expect(res["stderr"]).To(Equal("oops\n"))

	// The operator role (as the chart grants it on vmclusters) reads the
	// logs but may not exec.
	token := roleToken(t, "trouble-operator", []rbacv1.PolicyRule{
		{APIGroups: []string{"api.ops.observability.tidbcloud.com"}, Resources: []string{"vmclusters"}, Verbs: []string{"get", "list", "create", "update"}},
		{APIGroups: []string{"api.ops.observability.tidbcloud.com"}, Resources: []string{"vmclusters/logs"}, Verbs: []string{"get"}},
	})
	code, out = callText(t, http.MethodGet, podPath+"/logs?tailLines=1", token)
	g.Expect(code).To(Equal(http.StatusOK), out)
	code, out = callTextBody(t, http.MethodPost, podPath+"/exec", token, `{"command":["ls"]}`)
	g.Expect(code).To(Equal(http.StatusForbidden), out)
	g.Expect(out).To(ContainSubstring("vmclusters/exec"))

	// Another vmcluster's name for this Pod is a 404.
	code, out = callText(t, http.MethodGet, suite.VMClusters+"/no-such-vmcluster/pods/"+pod+"/logs", st.Token)
	g.Expect(code).To(Equal(http.StatusNotFound), out)
}

// callText sends a request and returns the raw body.
func callText(t *testing.T, method, path, token string) (int, string) {
	return callTextBody(t, method, path, token, "")
}

func callTextBody(t *testing.T, method, path, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, st.APIURL+path, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := suite.Client(t).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// roleToken creates a ServiceAccount bound to a Role with rules in the
// vmcluster namespace and returns a token of it.
func roleToken(t *testing.T, name string, rules []rbacv1.PolicyRule) string {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	c := st.Env.Client
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: obs}}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: obs}, Rules: rules}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: obs},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: obs}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
	}
	for _, o := range []client.Object{sa, role, rb} {
		g.Expect(c.Create(ctx, o)).To(Succeed())
		t.Cleanup(func() { _ = c.Delete(context.Background(), o) })
	}
	cs, err := kubernetes.NewForConfig(st.Env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	tr, err := cs.CoreV1().ServiceAccounts(obs).CreateToken(ctx, name, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return tr.Status.Token
}
