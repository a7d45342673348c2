package stack

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestLocalArgs(t *testing.T) {
	self := types.NamespacedName{Namespace: "obs", Name: "vmselect-a-0"}
	// fakePorts: 10000 + a number per Pod + the container port's last digit.
	pods := map[string]int{"obs/vmstorage-a-0": 100, "obs/vmstorage-a-1": 200, "obs/vmselect-a-0": 300, "other/vmstorage-b-0": 400}
	fakePorts := func(pod types.NamespacedName, port int) (int, error) {
		n, ok := pods[pod.String()]
		if !ok {
			return 0, errors.New("unknown Pod " + pod.String())
		}
		return 10000 + n + port%10, nil
	}
	comp := func(name string) *component {
		for i := range components {
			if components[i].name == name {
				return &components[i]
			}
		}
		t.Fatalf("no component %s", name)
		return nil
	}
	for _, tc := range []struct {
		name      string
		comp      string
		self      types.NamespacedName
		args      []string
		paths     map[string]string
		want      []string
		wantPorts map[int]int
		wantErr   string
	}{
		{
			name: "vmselect as the VictoriaMetrics operator runs it",
			comp: "vmselect",
			args: []string{"-httpListenAddr=:8481", "-replicationFactor=2", "-dedup.minScrapeInterval=1ms",
				"-storageNode=vmstorage-a-0.vmstorage-a.obs:8401,vmstorage-a-1.vmstorage-a.obs:8401,",
				"-selectNode=vmselect-a-0.vmselect-a.obs.svc.cluster.local:8481", "-cacheDataPath=/select-cache"},
			want: []string{"-httpListenAddr=127.0.0.1:10301", "-replicationFactor=2", "-dedup.minScrapeInterval=1ms",
				"-storageNode=127.0.0.1:10101,127.0.0.1:10201", "-selectNode=127.0.0.1:10301",
				"-memory.allowedPercent=10", "-search.maxConcurrentRequests=2", "-search.disableCache"},
			wantPorts: map[int]int{8481: 10301},
		},
		{
			name:      "vmstorage: listen addresses the Pod leaves out get the defaults; the data path is the local one",
			comp:      "vmstorage",
			self:      types.NamespacedName{Namespace: "obs", Name: "vmstorage-a-1"},
			args:      []string{"--retentionPeriod=1", "-storageDataPath=/vmstorage-data", "-vminsertAddr=0.0.0.0:8400", "-enableTCP6"},
			paths:     map[string]string{"storageDataPath": "/state/volumes/obs/claim"},
			want:      []string{"--retentionPeriod=1", "-storageDataPath=/state/volumes/obs/claim", "-vminsertAddr=127.0.0.1:10200", "-enableTCP6", "-httpListenAddr=127.0.0.1:10202", "-vmselectAddr=127.0.0.1:10201"},
			wantPorts: map[int]int{8400: 10200, 8401: 10201, 8482: 10202},
		},
		{
			name:      "a path flag the Pod leaves out is added",
			comp:      "vmstorage",
			self:      types.NamespacedName{Namespace: "obs", Name: "vmstorage-a-0"},
			args:      []string{"-httpListenAddr=:8482", "-vminsertAddr=:8400", "-vmselectAddr=:8401"},
			paths:     map[string]string{"storageDataPath": "/d"},
			want:      []string{"-httpListenAddr=127.0.0.1:10102", "-vminsertAddr=127.0.0.1:10100", "-vmselectAddr=127.0.0.1:10101", "-storageDataPath=/d"},
			wantPorts: map[int]int{8400: 10100, 8401: 10101, 8482: 10102},
		},
		{
			name: "vminsert: a storage node in another namespace, an IP address kept",
			comp: "vminsert",
			args: []string{"-storageNode=vmstorage-b-0.vmstorage-b.other.svc:8400,10.0.0.7:8400"},
			want: []string{"-storageNode=127.0.0.1:10400,10.0.0.7:8400", "-httpListenAddr=127.0.0.1:10300", "-memory.allowedPercent=10"},
			// vminsert's default port 8480 of Pod vmselect-a-0 (self).
			wantPorts: map[int]int{8480: 10300},
		},
		{
			name:    "DNS SRV discovery is refused",
			comp:    "vminsert",
			args:    []string{"-storageNode=srv+_vminsert._tcp.vmstorage-a.obs.svc"},
			wantErr: "DNS SRV discovery",
		},
		{
			name:    "a listen address without a port",
			comp:    "vmselect",
			args:    []string{"-httpListenAddr=8481"},
			wantErr: "-httpListenAddr=8481",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			s := self
			if tc.self.Name != "" {
				s = tc.self
			}
			args, ports, err := localArgs(comp(tc.comp), tc.args, s, tc.paths, fakePorts)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(args).To(Equal(tc.want))
			g.Expect(ports).To(Equal(tc.wantPorts))
		})
	}
}

func TestComponentOf(t *testing.T) {
	pod := func(cs ...corev1.Container) *corev1.Pod { return &corev1.Pod{Spec: corev1.PodSpec{Containers: cs}} }
	for _, tc := range []struct {
		name          string
		pod           *corev1.Pod
		wantComp      string
		wantContainer string
	}{
		{"by container name", pod(corev1.Container{Name: "sidecar", Image: "busybox"}, corev1.Container{Name: "vmselect", Image: "x"}), "vmselect", "vmselect"},
		{"by image", pod(corev1.Container{Name: "main", Image: "registry.example/victoriametrics/vminsert:v1.100.0-cluster"}), "vminsert", "main"},
		{"by image with a digest", pod(corev1.Container{Name: "main", Image: "victoriametrics/vmstorage@sha256:abc"}), "vmstorage", "main"},
		{"vmagent before its config-reloader", pod(corev1.Container{Name: "config-reloader", Image: "victoriametrics/operator:config-reloader-v0.74.1"}, corev1.Container{Name: "vmagent", Image: "victoriametrics/vmagent:v1"}), "vmagent", "vmagent"},
		{"the VictoriaMetrics operator by its image", pod(corev1.Container{Name: "manager", Image: "victoriametrics/operator:v0.74.1"}), "vm-operator", "manager"},
		{"unknown", pod(corev1.Container{Name: "vmalert", Image: "victoriametrics/vmalert:v1"}), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c, ct := componentOf(tc.pod)
			if tc.wantComp == "" {
				g.Expect(c).To(BeNil())
				return
			}
			g.Expect(c.name).To(Equal(tc.wantComp))
			g.Expect(ct.Name).To(Equal(tc.wantContainer))
		})
	}
}

func TestRestartDelay(t *testing.T) {
	g := NewWithT(t)
	g.Expect(restartDelay(1)).To(Equal(2 * time.Second))
	g.Expect(restartDelay(2)).To(Equal(4 * time.Second))
	g.Expect(restartDelay(10)).To(Equal(time.Minute))
}

// stackProcesses returns the pids of the processes the backer of the stack
// in stateDir started that are still alive (found by StackEnv in their
// environment).
func stackProcesses(stateDir string) []int {
	marker := []byte(StackEnv + "=" + stateDir + "\x00")
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(env, marker) {
			out = append(out, pid)
		}
	}
	return out
}

// A VMCluster of one vmstorage, vminsert and vmselect through the real
// VictoriaMetrics operator: each Pod gets its process; samples written
// through the Service proxy's vminsert Service are read back through its
// vmselect Service; a killed vmstorage makes its Pod NotReady, the
// VMCluster reports it, the backer restarts it and the Pod is Ready again;
// stopping the backer leaves no process behind.
func TestVMClusterBacked(t *testing.T) {
	s := vmWorkloads(t)
	g := NewWithT(t)
	ctx := context.Background()
	c := s.Env.Client
	ns := s.Env.NewNamespace(t)

	createVMCluster(g, c, ns, "data", map[string]any{"storage": map[string]any{"emptyDir": map[string]any{}}}, map[string]any{
		"vmselect": map[string]any{"replicaCount": int64(1)},
		"vminsert": map[string]any{"replicaCount": int64(1)},
	})

	// Every Pod of the three components is Ready with its process.
	backedPods := func(g Gomega) map[string]corev1.Pod {
		pods := &corev1.PodList{}
		g.Expect(c.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		out := map[string]corev1.Pod{}
		for _, p := range pods.Items {
			out[p.Labels["app.kubernetes.io/name"]] = p
		}
		return out
	}
	g.Eventually(func(g Gomega) {
		pods := backedPods(g)
		for _, name := range []string{"vmstorage", "vminsert", "vmselect"} {
			p, ok := pods[name]
			g.Expect(ok).To(BeTrue(), "a %s Pod", name)
			g.Expect(podReady(&p)).To(BeTrue(), "%s Pod %s is Ready", name, p.Name)
			g.Expect(p.Annotations).To(HaveKeyWithValue(VMStorageEndpointAnnotation, HavePrefix("http://127.0.0.1:")))
			g.Expect(p.Annotations).To(HaveKey(PortsAnnotation))
			g.Expect(filepath.Join(s.stateDir, "pods", ns, p.Name, name+".log")).To(BeARegularFile())
		}
	}, 4*time.Minute, time.Second).Should(Succeed())

	base := s.ServicesURL() + "/" + ns
	// (The operator creates the Services after the workloads.)
	now := time.Now()
	g.Eventually(func() error {
		return WriteSamples(ctx, base+"/vminsert-data/insert/0/prometheus/api/v1/import/prometheus", "backed_test", 10, 100, now)
	}, 2*time.Minute, time.Second).Should(Succeed())
	g.Eventually(func() (float64, error) {
		return QueryScalar(ctx, base+"/vmselect-data/select/0/prometheus", `sum(count_over_time(backed_test[1h]))`)
	}, 2*time.Minute, time.Second).Should(Equal(1000.0))

	// Kill the vmstorage process, and hold its HTTP port for a while, so
	// that it fails to start again (a crash loop): the Pod goes NotReady,
	// and the VictoriaMetrics operator, which waits for the Pods of a
	// changed StatefulSet to be Ready, reports the VMCluster "expanding"
	// (v0.74: it has no other status for a Pod that is not Ready).
	storage := backedPods(g)["vmstorage"]
	key := types.NamespacedName{Namespace: ns, Name: storage.Name}
	// vmstorage keeps the last seconds of samples in memory; a snapshot
	// writes them to disk, so that the SIGKILL below loses none.
	resp, herr := http.Get(storage.Annotations[VMStorageEndpointAnnotation] + "/snapshot/create")
	g.Expect(herr).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	s.backer.mu.Lock()
	proc := s.backer.procs[key].proc
	s.backer.mu.Unlock()
	g.Expect(proc.Kill()).To(Succeed())
	held, err := net.Listen("tcp", strings.TrimPrefix(storage.Annotations[VMStorageEndpointAnnotation], "http://"))
	g.Expect(err).NotTo(HaveOccurred())
	defer held.Close()
	vmclusterStatus := func(g Gomega) string {
		got := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "operator.victoriametrics.com/v1beta1", "kind": "VMCluster"}}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data"}, got)).To(Succeed())
		status, _, _ := unstructured.NestedString(got.Object, "status", "updateStatus")
		return status
	}
	g.Eventually(func(g Gomega) {
		p := &corev1.Pod{}
		g.Expect(c.Get(ctx, key, p)).To(Succeed())
		g.Expect(podReady(p)).To(BeFalse())
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Eventually(vmclusterStatus, 3*time.Minute, time.Second).Should(Equal("expanding"))
	g.Expect(held.Close()).To(Succeed())
	g.Eventually(func(g Gomega) {
		p := &corev1.Pod{}
		g.Expect(c.Get(ctx, key, p)).To(Succeed())
		g.Expect(p.UID).To(Equal(storage.UID), "the same Pod, not a new one")
		g.Expect(podReady(p)).To(BeTrue())
		g.Expect(p.Status.ContainerStatuses).To(ContainElement(And(
			HaveField("Name", "vmstorage"), HaveField("RestartCount", BeNumerically(">=", 2)), HaveField("Ready", true))))
	}, 3*time.Minute, time.Second).Should(Succeed())
	g.Eventually(vmclusterStatus, 5*time.Minute, time.Second).Should(Equal("operational"))
	// The data survived the restart (emptyDir: the same directory).
	g.Eventually(func() (float64, error) {
		return QueryScalar(ctx, base+"/vmselect-data/select/0/prometheus", `sum(count_over_time(backed_test[1h]))`)
	}, 2*time.Minute, time.Second).Should(Equal(1000.0))

	// Stopping the backer (as Stack.Stop does on Ctrl-C) leaves no process.
	g.Expect(stackProcesses(s.stateDir)).To(HaveLen(3), "the three processes are found")
	s.backer.stop()
	s.backer = nil
	g.Expect(stackProcesses(s.stateDir)).To(BeEmpty())
	g.Expect(s.startBacker()).To(Succeed(), "again, for the other tests")
}
