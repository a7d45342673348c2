package backup_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/controller/backup"
	"github.com/tidbcloud/ops-server/operator/internal/manager"
	"github.com/tidbcloud/ops-server/operator/internal/vmstorage"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.InfoLevel)))
	os.Exit(testenv.RunMain(m, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{opsv1.AddToScheme}},
		func(e *testenv.Environment) error { env = e; return nil }))
}

// fixture is one test's VMCluster: its objects in the test API server and
// the real vmstorage processes that stand for its replicas, pod
// vmstorage-<name>-<i> served by nodes[i].
type fixture struct {
	ns, name string
	nodes    []*vmStorage
	sts      *appsv1.StatefulSet
	// endpoints maps a pod name to the URL the resolver gives; tests may
	// change it (an unreachable replica).
	mu        sync.Mutex
	endpoints map[string]string
}

func podName(cluster string, i int) string { return fmt.Sprintf("vmstorage-%s-%d", cluster, i) }

var stsLabels = func(cluster string) map[string]string {
	return map[string]string{"app.kubernetes.io/name": "vmstorage", "app.kubernetes.io/instance": cluster}
}

// vmstorageTemplate is the pod spec the VictoriaMetrics operator renders
// for vmstorage (trimmed).
func vmstorageSpec(cluster string, claim string) corev1.PodSpec {
	spec := corev1.PodSpec{
		Containers: []corev1.Container{{
			Name:         "vmstorage",
			Image:        "victoriametrics/vmstorage:v1.100.0-cluster",
			Args:         []string{"-storageDataPath=/vmstorage-data", "-httpListenAddr=:8482", "-vminsertAddr=:8400", "-vmselectAddr=:8401"},
			Ports:        []corev1.ContainerPort{{Name: "http", ContainerPort: 8482}},
			VolumeMounts: []corev1.VolumeMount{{Name: "vmstorage-db", MountPath: "/vmstorage-data"}},
		}},
		SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](65534), FSGroup: ptr.To[int64](65534)},
	}
	if claim != "" {
		spec.Volumes = []corev1.Volume{{Name: "vmstorage-db", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
		}}}
	}
	return spec
}

// newFixture creates the VMCluster (operational), its rolled-out vmstorage
// StatefulSet and one Pod per node in a fresh namespace.
func newFixture(t *testing.T, nodes []*vmStorage) *fixture {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	f := &fixture{ns: env.NewNamespace(t), name: "vmc", nodes: nodes, endpoints: map[string]string{}}

	vmc := vmstorage.NewVMCluster()
	vmc.SetNamespace(f.ns)
	vmc.SetName(f.name)
	vmc.Object["spec"] = map[string]any{"retentionPeriod": "1", "vmstorage": map[string]any{"replicaCount": int64(len(nodes))}}
	g.Expect(env.Client.Create(ctx, vmc)).To(Succeed())
	f.setVMClusterStatus(t, vmstorage.UpdateStatusOperational)

	f.sts = &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "vmstorage-" + f.name},
		Spec: appsv1.StatefulSetSpec{
			Replicas:       ptr.To(int32(len(nodes))),
			Selector:       &metav1.LabelSelector{MatchLabels: stsLabels(f.name)},
			ServiceName:    "vmstorage-" + f.name,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: stsLabels(f.name)},
				Spec:       vmstorageSpec(f.name, ""),
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "vmstorage-db"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
				},
			}},
		},
	}
	g.Expect(env.Client.Create(ctx, f.sts)).To(Succeed())
	f.setSTSStatus(t, int32(len(nodes)))
	for i := range nodes {
		f.createPod(t, i)
		f.endpoints[podName(f.name, i)] = nodes[i].URL()
	}
	return f
}

func (f *fixture) setVMClusterStatus(t *testing.T, updateStatus string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	vmc := vmstorage.NewVMCluster()
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: f.name}, vmc)).To(Succeed())
	g.Expect(unstructured.SetNestedField(vmc.Object, vmc.GetGeneration(), "status", "observedGeneration")).To(Succeed())
	g.Expect(unstructured.SetNestedField(vmc.Object, updateStatus, "status", "updateStatus")).To(Succeed())
	g.Expect(env.Client.Status().Update(ctx, vmc)).To(Succeed())
}

// setSTSStatus plays the StatefulSet controller: updated replicas of the
// current revision, all ready.
func (f *fixture) setSTSStatus(t *testing.T, updated int32) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	sts := &appsv1.StatefulSet{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.sts), sts)).To(Succeed())
	n := *sts.Spec.Replicas
	sts.Status = appsv1.StatefulSetStatus{
		ObservedGeneration: sts.Generation, Replicas: n, ReadyReplicas: n, AvailableReplicas: n, CurrentReplicas: n,
		UpdatedReplicas: updated, CurrentRevision: sts.Name + "-1", UpdateRevision: sts.Name + "-1",
	}
	if updated < n {
		sts.Status.UpdateRevision = sts.Name + "-2"
	}
	g.Expect(env.Client.Status().Update(ctx, sts)).To(Succeed())
	f.sts = sts
}

// createPod creates vmstorage pod i (as the StatefulSet controller would)
// on node node-<i>, Running.
func (f *fixture) createPod(t *testing.T, i int) *corev1.Pod {
	t.Helper()
	g := NewWithT(t)
	name := podName(f.name, i)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: f.ns, Name: name, Labels: stsLabels(f.name),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "StatefulSet", Name: f.sts.Name, UID: f.sts.UID, Controller: ptr.To(true),
			}},
		},
		Spec: vmstorageSpec(f.name, "vmstorage-db-"+name),
	}
	pod.Spec.NodeName = fmt.Sprintf("node-%d", i)
	g.Expect(env.Client.Create(context.Background(), pod)).To(Succeed())
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1",
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	g.Expect(env.Client.Status().Update(context.Background(), pod)).To(Succeed())
	return pod
}

// resolve is the test's Resolver: pod name → its local vmstorage.
func (f *fixture) resolve(_ context.Context, pod *corev1.Pod) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ep, ok := f.endpoints[pod.Name]
	if !ok {
		return "", fmt.Errorf("no local vmstorage for pod %s", pod.Name)
	}
	return ep, nil
}

func (f *fixture) setEndpoint(pod, ep string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.endpoints[pod] = ep
}

// dataDir is the LocalRunner's map: pod → its vmstorage's data directory.
func (f *fixture) dataDir(pod *corev1.Pod) (string, error) {
	for i, n := range f.nodes {
		if pod.Name == podName(f.name, i) {
			return n.dataDir, nil
		}
	}
	return "", fmt.Errorf("no local vmstorage for pod %s", pod.Name)
}

func (f *fixture) localRunner(t *testing.T) *backup.LocalRunner {
	t.Helper()
	bin, err := testenv.Binary("vmbackup")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	r := &backup.LocalRunner{Binary: bin, StateDir: filepath.Join(t.TempDir(), "runner"), StorageDataPath: f.dataDir}
	t.Cleanup(r.Wait)
	return r
}

// operator is a running ops-operator manager.
type operator struct {
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

func (o *operator) stop() {
	o.once.Do(func() {
		o.cancel()
		<-o.done
	})
}

// startOperator starts an operator for the fixture's namespace, with the
// fixture's resolver and the given runner (nil: the JobRunner).
func startOperator(t *testing.T, f *fixture, runner backup.Runner, mutate func(*manager.Options)) *operator {
	t.Helper()
	o := manager.DefaultOptions()
	o.MetricsAddr, o.HealthAddr, o.LeaderElection = "0", "0", false
	o.GracefulShutdownTime = 10 * time.Second
	o.SkipControllerNameValidation = true
	o.WatchNamespace = f.ns
	o.Backup.PollInterval = 100 * time.Millisecond
	o.Backup.RetryInterval = 100 * time.Millisecond
	o.Backup.SnapshotTimeout = 2 * time.Second
	o.Backup.SnapshotCallTimeout = 10 * time.Second
	o.Backup.Runner = runner
	o.Backup.Resolver = f.resolve
	// The tests write their fs:// backups under t.TempDir(); /backups is
	// the destination of tests that never upload.
	o.Backup.FSRoots = []string{os.TempDir(), "/backups"}
	if mutate != nil {
		mutate(&o)
	}
	mgr, err := manager.New(env.Config, o, nil)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	op := &operator{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(op.done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(op.stop)
	return op
}

func newBackup(f *fixture, name, url string, mut func(*opsv1.ClusterBackup)) *opsv1.ClusterBackup {
	b := &opsv1.ClusterBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name},
		Spec: opsv1.ClusterBackupSpec{
			VMCluster:   opsv1.VMClusterReference{Name: f.name},
			Destination: opsv1.BackupDestination{URL: url},
		},
	}
	if mut != nil {
		mut(b)
	}
	return b
}

func get(g Gomega, b *opsv1.ClusterBackup) *opsv1.ClusterBackup {
	out := &opsv1.ClusterBackup{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), out)).To(Succeed())
	return out
}

func waitPhase(t *testing.T, b *opsv1.ClusterBackup, phase opsv1.BackupPhase, timeout time.Duration) *opsv1.ClusterBackup {
	t.Helper()
	var last *opsv1.ClusterBackup
	NewWithT(t).Eventually(func(g Gomega) {
		last = get(g, b)
		g.Expect(last.Status.Phase).To(Equal(phase), "status: %s", describe(last))
	}, timeout, 50*time.Millisecond).Should(Succeed())
	return last
}

func describe(b *opsv1.ClusterBackup) string {
	s := fmt.Sprintf("phase=%s progress=%s", b.Status.Phase, b.Status.Progress)
	for _, c := range b.Status.Conditions {
		s += fmt.Sprintf("\n  %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
	}
	for _, r := range b.Status.Replicas {
		s += fmt.Sprintf("\n  %s %s snapshot=%s job=%s bytes=%d err=%q", r.Pod, r.State, r.SnapshotName, r.JobName, r.Bytes, r.Error)
	}
	return s
}

func eventReasons(g Gomega, ns string) []string {
	events := &corev1.EventList{}
	g.Expect(env.Client.List(context.Background(), events, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range events.Items {
		out = append(out, e.Reason)
	}
	return out
}

func eventMessages(g Gomega, ns, reason string) []string {
	events := &corev1.EventList{}
	g.Expect(env.Client.List(context.Background(), events, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range events.Items {
		if e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}

// blockingTransport passes requests through, but for the first request
// whose path ends in blockPath it performs the request, signals hit, and
// then blocks until the request's context ends, returning its error: an
// operator killed after its call reached vmstorage, before it learnt the
// answer.
type blockingTransport struct {
	blockPath, host string
	// want is how many matching calls must have reached their server
	// before hit is closed (0 or 1: the first one). Every matching call
	// blocks after the server answered, until its context ends, as if the
	// operator died waiting for the answer.
	want int
	hit  chan struct{}
	mu   sync.Mutex
	seen int
}

func (bt *blockingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || !strings.HasSuffix(req.URL.Path, bt.blockPath) || (bt.host != "" && req.URL.Host != bt.host) {
		return resp, err
	}
	_ = resp.Body.Close()
	bt.mu.Lock()
	bt.seen++
	if bt.seen == max(bt.want, 1) {
		close(bt.hit)
	}
	bt.mu.Unlock()
	<-req.Context().Done()
	return nil, req.Context().Err()
}

// holdingRunner wraps a runner: uploads of the pods in hold are never
// started (they report Running for ever); with blockAfterStart, the first
// real Start is performed, then hit is signalled and Start blocks until
// its context ends.
type holdingRunner struct {
	inner           *backup.LocalRunner
	hold            map[string]bool
	blockAfterStart bool
	hit             chan struct{}
	once            sync.Once
	mu              sync.Mutex
	deleted         []string
}

func (h *holdingRunner) SharesFilesystem() bool { return true }

func (h *holdingRunner) held(id string) bool {
	for pod := range h.hold {
		if strings.Contains(id, pod) {
			return true
		}
	}
	return false
}

func (h *holdingRunner) Start(ctx context.Context, u backup.Upload) error {
	if h.held(u.ID) {
		return nil
	}
	if err := h.inner.Start(ctx, u); err != nil {
		return err
	}
	if h.blockAfterStart {
		block := false
		h.once.Do(func() { block = true })
		if block {
			close(h.hit)
			<-ctx.Done()
			return ctx.Err()
		}
	}
	return nil
}

func (h *holdingRunner) Status(ctx context.Context, ref backup.UploadRef) (backup.UploadStatus, error) {
	if h.held(ref.ID) {
		return backup.UploadStatus{State: backup.UploadRunning}, nil
	}
	return h.inner.Status(ctx, ref)
}

func (h *holdingRunner) Delete(ctx context.Context, ref backup.UploadRef) error {
	h.mu.Lock()
	h.deleted = append(h.deleted, ref.ID)
	h.mu.Unlock()
	return h.inner.Delete(ctx, ref)
}

func (h *holdingRunner) deletedIDs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.deleted...)
}
