package stack

import (
	"bytes"
	"context"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kwokv1 "sigs.k8s.io/kwok/pkg/apis/v1alpha1"

	"github.com/tidbcloud/ops-server/operator/testenv"
)

type nopCloser struct{ *bytes.Buffer }

func (nopCloser) Close() error { return nil }

func TestCRILog(t *testing.T) {
	at := time.Date(2026, 12, 2, 8, 0, 0, 123456789, time.FixedZone("CET", 3600))
	const ts = "2026-12-02T07:00:00.123456789Z"
	long := strings.Repeat("x", maxCRILine+5)
	for _, tc := range []struct {
		name   string
		writes func(l *criLog)
		want   []string
	}{
		{
			name: "each stream's lines, tagged full",
			writes: func(l *criLog) {
				_, _ = l.stdout.Write([]byte("one\ntwo\n"))
				_, _ = l.stderr.Write([]byte("oops\n"))
			},
			want: []string{ts + " stdout F one", ts + " stdout F two", ts + " stderr F oops"},
		},
		{
			name: "a line written in pieces is one entry; an empty line is kept",
			writes: func(l *criLog) {
				_, _ = l.stdout.Write([]byte("sta"))
				_, _ = l.stderr.Write([]byte("err\n"))
				_, _ = l.stdout.Write([]byte("rting\n\n"))
			},
			want: []string{ts + " stderr F err", ts + " stdout F starting", ts + " stdout F "},
		},
		{
			name: "an unfinished last line is written on close",
			writes: func(l *criLog) {
				_, _ = l.stdout.Write([]byte("done\nbye"))
			},
			want: []string{ts + " stdout F done", ts + " stdout F bye"},
		},
		{
			name: "a line longer than the limit is split into a partial entry and the rest",
			writes: func(l *criLog) {
				_, _ = l.stdout.Write([]byte(long + "\n"))
			},
			want: []string{ts + " stdout P " + long[:maxCRILine], ts + " stdout F xxxxx"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var buf bytes.Buffer
			l := newCRILog(nopCloser{&buf}, func() time.Time { return at })
			tc.writes(l)
			g.Expect(l.Close()).To(Succeed())
			g.Expect(strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")).To(Equal(tc.want))
		})
	}
}

// A vmstorage Pod of a VMCluster, backed by a real vmstorage process:
// kubectl logs and kubectl exec go through kube-apiserver to kwok's kubelet
// server, which answers from the process's log file and runs the command in
// the process's data directory.
func TestKubectlLogsAndExec(t *testing.T) {
	s := vmWorkloads(t)
	g := NewWithT(t)
	ctx := context.Background()
	c := s.Env.Client
	ns := s.Env.NewNamespace(t)
	kubectlPath, err := testenv.Binary("kubectl")
	g.Expect(err).NotTo(HaveOccurred())
	kubectl := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, kubectlPath, append([]string{"--kubeconfig=" + s.Env.KubeconfigPath, "-n", ns}, args...)...)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return string(out), &kubectlError{err: err, stderr: stderr.String()}
		}
		return string(out), nil
	}

	createVMCluster(g, c, ns, "io", map[string]any{"nodeSelector": onVMStorageNodes}, nil)

	var pod corev1.Pod
	g.Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/name": "vmstorage"})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(1))
		g.Expect(pods.Items[0].Annotations).To(HaveKey(VMStorageDataPathAnnotation))
		pod = pods.Items[0]
	}, 4*time.Minute, time.Second).Should(Succeed())
	dataDir := pod.Annotations[VMStorageDataPathAnnotation]

	// kwok published its server as the Pod's Node's kubelet endpoint.
	node := &corev1.Node{}
	g.Expect(c.Get(ctx, client.ObjectKey{Name: pod.Spec.NodeName}, node)).To(Succeed())
	g.Expect(node.Status.DaemonEndpoints.KubeletEndpoint.Port).NotTo(BeZero())
	g.Expect(node.Status.Addresses).To(ContainElement(corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}))
	// The Pod's Logs and Exec, owned by the Pod.
	logs := &kwokv1.Logs{}
	g.Eventually(func() error { return c.Get(ctx, client.ObjectKeyFromObject(&pod), logs) }, time.Minute, time.Second).Should(Succeed())
	g.Expect(logs.OwnerReferences).To(ConsistOf(HaveField("UID", pod.UID)))
	g.Expect(logs.Spec.Logs).To(ContainElement(HaveField("LogsFile", HaveValue(Equal(s.PodLogPath(ns, pod.Name, "vmstorage"))))))

	// The log is the process's own: it names the data directory it opened.
	g.Eventually(func(g Gomega) {
		out, err := kubectl("logs", pod.Name, "-c", "vmstorage")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(ContainSubstring(`opening storage at "` + dataDir + `"`))
		g.Expect(out).To(ContainSubstring("build version"))
	}, 2*time.Minute, 2*time.Second).Should(Succeed())
	out, err := kubectl("logs", pod.Name, "-c", "vmstorage", "--tail=2")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Split(strings.TrimSuffix(out, "\n"), "\n")).To(HaveLen(2))

	// logs -f follows: a snapshot the process makes afterwards shows up.
	followCtx, stopFollow := context.WithCancel(ctx)
	defer stopFollow()
	followed := gbytes.NewBuffer()
	follow := exec.CommandContext(followCtx, kubectlPath, "--kubeconfig="+s.Env.KubeconfigPath, "-n", ns, "logs", "-f", "--tail=1", pod.Name)
	follow.Stdout = followed
	g.Expect(follow.Start()).To(Succeed())
	g.Eventually(followed, time.Minute).Should(gbytes.Say("\n"), "the last line")
	g.Expect(followed.Contents()).NotTo(ContainSubstring("Storage snapshot"))
	resp, err := http.Post(pod.Annotations[VMStorageEndpointAnnotation]+"/snapshot/create", "", nil)
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Eventually(followed, time.Minute).Should(gbytes.Say("created Storage snapshot"))
	stopFollow()
	_ = follow.Wait()

	// exec runs in the process's data directory, where vmstorage keeps its
	// storage.
	g.Eventually(func(g Gomega) {
		out, err := kubectl("exec", pod.Name, "-c", "vmstorage", "--", "pwd")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(strings.TrimSpace(out)).To(Equal(dataDir))
	}, 2*time.Minute, 2*time.Second).Should(Succeed())
	out, err = kubectl("exec", pod.Name, "--", "ls")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Fields(out)).To(ContainElements("data", "indexdb"))
	out, err = kubectl("exec", pod.Name, "--", "sh", "-c", "echo $POD_NAMESPACE/$POD_NAME")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.TrimSpace(out)).To(Equal(ns + "/" + pod.Name))
	// A failing command's exit code comes back.
	_, err = kubectl("exec", pod.Name, "--", "sh", "-c", "exit 3")
	g.Expect(err).To(MatchError(ContainSubstring("exit status 3")))

	// A Pod the stack runs no process for has neither.
	plain := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"},
		Spec:       corev1.PodSpec{NodeName: pod.Spec.NodeName, Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	}
	g.Expect(c.Create(ctx, plain)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(plain), plain)).To(Succeed())
		g.Expect(plain.Status.Phase).To(Equal(corev1.PodRunning))
	}, time.Minute, time.Second).Should(Succeed())
	_, err = kubectl("logs", "plain")
	g.Expect(err).To(MatchError(ContainSubstring(`no logs found for container "app"`)))
	_, err = kubectl("exec", "plain", "--", "true")
	g.Expect(err).To(MatchError(ContainSubstring(`no exec found for container "app"`)))

	// kwok started again on another port with the Nodes kept, as on every
	// `make dev` run: the Nodes publish the new port and logs work again.
	oldPort := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	for i, p := range s.procs {
		if p.Name == "kwok" {
			g.Expect(p.Kill()).To(Succeed())
			s.procs[i], err = s.startKwok()
			g.Expect(err).NotTo(HaveOccurred())
		}
	}
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(node), node)).To(Succeed())
		g.Expect(node.Status.DaemonEndpoints.KubeletEndpoint.Port).NotTo(Equal(oldPort))
		out, err := kubectl("logs", pod.Name, "--tail=1")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).NotTo(BeEmpty())
	}, 2*time.Minute, 2*time.Second).Should(Succeed())
}

type kubectlError struct {
	err    error
	stderr string
}

func (e *kubectlError) Error() string { return e.err.Error() + ": " + e.stderr }
