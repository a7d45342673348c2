package stories

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/e2e/stack"
	"github.com/tidbcloud/ops-server/e2e/suite"
)

// storyCrashLoop: the vmstorage process of a vmcluster's Pod is killed and
// cannot start again for a while (its HTTP port is taken), as in a crash
// loop: GET …/resources marks the Pod and its StatefulSet Degraded with a
// reason, GET …/events shows why (the kubelet's BackOff Event on the Pod),
// and once the port is free the Pod is Healthy again, its restart visible
// in the Events.
func storyCrashLoop(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const name = "crashloop"
	base := runningVMCluster(t, name)

	var pod string
	g.Eventually(func(g Gomega) {
		nodes := treeNodes(t, g, base)
		for _, n := range nodes {
			g.Expect(n["health"]).To(Equal("Healthy"), "%s %s: %v", n["kind"], n["name"], n["healthReason"])
			if n["kind"] == "Pod" && strings.HasPrefix(n["name"].(string), "vmstorage-") {
				pod = n["name"].(string)
			}
		}
		g.Expect(pod).NotTo(BeEmpty())
	}, 3*time.Minute, 2*time.Second).Should(Succeed())

	// Kill the process (found in /proc by its -storageDataPath, which the
	// backer publishes on the Pod) and take its HTTP port.
	k8sPod := &corev1.Pod{}
	g.Expect(st.Env.Client.Get(ctx, client.ObjectKey{Namespace: obs, Name: pod}, k8sPod)).To(Succeed())
	dataDir := k8sPod.Annotations[stack.VMStorageDataPathAnnotation]
	g.Expect(dataDir).NotTo(BeEmpty())
	pid := processWithArg(t, "-storageDataPath="+dataDir)
	g.Expect(syscall.Kill(pid, syscall.SIGKILL)).To(Succeed())
	// (The port is free once the process is gone; the backer starts it
	// again after a back-off of 2 s.)
	var held net.Listener
	g.Eventually(func() (err error) {
		held, err = net.Listen("tcp", strings.TrimPrefix(k8sPod.Annotations[stack.VMStorageEndpointAnnotation], "http://"))
		return err
	}, 2*time.Second, 20*time.Millisecond).Should(Succeed())
	defer held.Close()

	g.Eventually(func(g Gomega) {
		var podNode, stsNode map[string]any
		for _, n := range treeNodes(t, g, base) {
			switch {
			case n["kind"] == "Pod" && n["name"] == pod:
				podNode = n
			case n["kind"] == "StatefulSet" && strings.HasPrefix(n["name"].(string), "vmstorage-"):
				stsNode = n
			}
		}
		g.Expect(podNode).To(HaveKeyWithValue("health", "Degraded"))
		g.Expect(podNode).To(HaveKeyWithValue("healthReason", ContainSubstring("vmstorage")))
		g.Expect(stsNode).To(HaveKeyWithValue("health", "Degraded"))
		g.Expect(stsNode).To(HaveKeyWithValue("healthReason", ContainSubstring(pod)))
	}, time.Minute, 500*time.Millisecond).Should(Succeed())

	podEvent := func(reason, message string) func(g Gomega) {
		return func(g Gomega) {
			code, list := suite.Call(t, http.MethodGet, base+"/events?reason="+reason+"&since=10m", nil)
			g.Expect(code).To(Equal(http.StatusOK), "%v", list)
			g.Expect(list["events"]).To(ContainElement(And(
				HaveKeyWithValue("object", And(HaveKeyWithValue("kind", "Pod"), HaveKeyWithValue("name", pod))),
				HaveKeyWithValue("message", ContainSubstring(message)))), "%v", list)
		}
	}
	g.Eventually(podEvent("BackOff", "process exited"), time.Minute, time.Second).Should(Succeed())
	code, warn := suite.Call(t, http.MethodGet, base+"/events?type=Warning", nil)
	g.Expect(code).To(Equal(http.StatusOK))
	for _, e := range warn["events"].([]any) {
		g.Expect(e).To(HaveKeyWithValue("type", "Warning"))
	}

	g.Expect(held.Close()).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, n := range treeNodes(t, g, base) {
			g.Expect(n["health"]).To(Equal("Healthy"), "%s %s: %v", n["kind"], n["name"], n["healthReason"])
		}
	}, 3*time.Minute, 2*time.Second).Should(Succeed())
	g.Eventually(podEvent("Started", "Started container vmstorage"), time.Minute, time.Second).Should(Succeed())

	// The diagnostics bundle opens with archive/tar and gzip and has every
	// part; no value of a Secret of the namespace is in it.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "crashloop-creds", Namespace: obs}, StringData: map[string]string{"token": "crashloop-secret-5b7e1d"}}
	g.Expect(st.Env.Client.Create(ctx, secret)).To(Succeed())
	t.Cleanup(func() { _ = st.Env.Client.Delete(context.Background(), secret) })
	code, raw := callText(t, http.MethodGet, base+"/diagnostics", st.Token)
	g.Expect(code).To(Equal(http.StatusOK), raw)
	files := map[string]string{}
	gz, err := gzip.NewReader(strings.NewReader(raw))
	g.Expect(err).NotTo(HaveOccurred())
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		g.Expect(err).NotTo(HaveOccurred())
		b, err := io.ReadAll(tr)
		g.Expect(err).NotTo(HaveOccurred())
		files[h.Name] = string(b)
	}
	for _, part := range []string{"resources.json", "pods.json", "events.json", "helmrelease.json", "manifest.json",
		"logs/" + pod + "/vmstorage.log", "metrics/" + pod + ".txt", "flags/" + pod + ".txt"} {
		g.Expect(files).To(HaveKey(part), "manifest: %s", files["manifest.json"])
	}
	g.Expect(files["logs/"+pod+"/vmstorage.log"]).To(ContainSubstring("opening storage at"))
	g.Expect(files["metrics/"+pod+".txt"]).To(ContainSubstring("vm_"))
	g.Expect(files["flags/"+pod+".txt"]).To(ContainSubstring("storageDataPath"))
	g.Expect(files["events.json"]).To(ContainSubstring(`"reason": "BackOff"`))
	g.Expect(files["helmrelease.json"]).To(ContainSubstring(`"history"`))
	g.Expect(files["manifest.json"]).NotTo(ContainSubstring(`"errors"`))
	for name, body := range files {
		g.Expect(body).NotTo(ContainSubstring("crashloop-secret-5b7e1d"), name)
	}
}

// treeNodes returns every node of GET …/resources.
func treeNodes(t *testing.T, g Gomega, base string) []map[string]any {
	code, tree := suite.Call(t, http.MethodGet, base+"/resources", nil)
	g.Expect(code).To(Equal(http.StatusOK), "%v", tree)
	var out []map[string]any
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		out = append(out, n)
		children, _ := n["children"].([]any)
		for _, c := range children {
			walk(c.(map[string]any))
		}
	}
	walk(tree["root"].(map[string]any))
	return out
}

// processWithArg returns the pid of the one process whose command line
// has arg.
func processWithArg(t *testing.T, arg string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(append(cmd, 0), []byte(arg+"\x00")) {
			pids = append(pids, pid)
		}
	}
	NewWithT(t).Expect(pids).To(HaveLen(1), "processes with %s", arg)
	return pids[0]
}
