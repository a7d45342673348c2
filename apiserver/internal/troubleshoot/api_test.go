package troubleshoot_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/apiserver/internal/server"
	"github.com/tidbcloud/ops-server/apiserver/internal/troubleshoot"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters/vmclusterstest"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

var (
	env       *testenv.Environment
	informers cache.Cache
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	var err error
	env, err = testenv.Start(testenv.Options{AddToScheme: []func(*runtime.Scheme) error{opsv1.AddToScheme}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	informers, err = vmclusterstest.StartCache(ctx, env)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

type api struct {
	t   *testing.T
	url string
	ns  string
	vm  *vmclusters.Service
}

func newAPI(t *testing.T, allowed ...string) *api {
	ns := env.NewNamespace(t)
	vm := &vmclusters.Service{
		Store: &vmclusters.KubeStore{Cache: informers, Client: client.WithFieldOwner(env.Client, "ops-server"), Namespace: ns, CacheWait: 10 * time.Second},
		Translator: vmclusters.Translator{
			Namespace: ns, Chart: vmclusters.ChartSource{Name: "vmcluster", DefaultVersion: "0.1.0", URL: "http://127.0.0.1:1"},
			Flux: config.Default().Flux,
		},
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	svc := &troubleshoot.Service{VMClusters: vm, HelmNamespace: ns, Reader: env.Client, Clientset: cs, RESTConfig: env.Config,
		MaxLogBytes: 1 << 20, FollowMaxDuration: time.Minute, ExecAllowed: allowed, ExecMaxOutputBytes: 1 << 20}
	e, err := server.New(server.Options{}, &troubleshoot.Handler{Svc: svc})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return &api{t: t, url: srv.URL, ns: ns, vm: vm}
}

func (a *api) do(method, path, body string) (int, []byte) {
	a.t.Helper()
	req, err := http.NewRequest(method, a.url+"/api/v1/observability-ops/vmclusters/"+path, bytes.NewBufferString(body))
	NewWithT(a.t).Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	resp, err := contractClient(a.t, nil).Do(req)
	NewWithT(a.t).Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (a *api) tree(id string) troubleshoot.Tree {
	a.t.Helper()
	code, b := a.do(http.MethodGet, id+"/resources", "")
	NewWithT(a.t).Expect(code).To(Equal(http.StatusOK), string(b))
	var t troubleshoot.Tree
	NewWithT(a.t).Expect(json.Unmarshal(b, &t)).To(Succeed())
	return t
}

// vmcluster creates the HelmRelease of a vmcluster (no Flux runs) and
// returns its id.
func (a *api) vmcluster(name string) string {
	a.t.Helper()
	g := NewWithT(a.t)
	hr := a.vm.Translator.Release(vmclusters.CreateRequest{Name: name, Values: []byte(`{}`)}, time.Now())
	g.Expect(env.Client.Create(context.Background(), hr)).To(Succeed())
	g.Eventually(func() error {
		_, err := a.vm.Get(context.Background(), string(hr.UID))
		return err
	}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
	return string(hr.UID)
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	NewWithT(t).Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
}

func owner(kind string, obj client.Object) []metav1.OwnerReference {
	api := "apps/v1"
	if kind == troubleshoot.VMClusterGVK.Kind {
		api = troubleshoot.VMClusterGVK.GroupVersion().String()
	}
	return []metav1.OwnerReference{{APIVersion: api, Kind: kind, Name: obj.GetName(), UID: obj.GetUID(), Controller: ptr.To(true)}}
}

// installed creates what Helm and the VM operator create for release
// name: the VMCluster with Helm's marks, a vmstorage StatefulSet with
// replicas Pods (each mounting a PVC), a vminsert Deployment with a
// ReplicaSet and a Pod, a Service. It returns the vmstorage Pods.
func installed(t *testing.T, ns, name string, replicas int) []*corev1.Pod {
	g := NewWithT(t)
	ctx := context.Background()
	vmc := &unstructured.Unstructured{}
	vmc.SetGroupVersionKind(troubleshoot.VMClusterGVK)
	vmc.SetName(name)
	vmc.SetNamespace(ns)
	vmc.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "Helm", "helm.toolkit.fluxcd.io/name": name})
	vmc.SetAnnotations(map[string]string{"meta.helm.sh/release-name": name, "meta.helm.sh/release-namespace": ns})
	g.Expect(unstructured.SetNestedField(vmc.Object, map[string]any{"replicationFactor": int64(1)}, "spec")).To(Succeed())
	create(t, vmc)
	g.Expect(unstructured.SetNestedField(vmc.Object, "operational", "status", "updateStatus")).To(Succeed())
	g.Expect(env.Client.Status().Update(ctx, vmc)).To(Succeed())

	sel := map[string]string{"app.kubernetes.io/name": "vmstorage", "app.kubernetes.io/instance": name}
	podSpec := corev1.PodSpec{Containers: []corev1.Container{{Name: "vmstorage", Image: "victoriametrics/vmstorage"}}}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "vmstorage-" + name, Namespace: ns, OwnerReferences: owner(troubleshoot.VMClusterGVK.Kind, vmc)},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(replicas)), Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: podSpec}},
	}
	create(t, sts)
	sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: int32(replicas), ReadyReplicas: int32(replicas), UpdatedReplicas: int32(replicas)}
	g.Expect(env.Client.Status().Update(ctx, sts)).To(Succeed())

	var pods []*corev1.Pod
	for i := range replicas {
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("vmstorage-db-vmstorage-%s-%d", name, i), Namespace: ns},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resourceQuantity("1Gi")}}},
		}
		create(t, pvc)
		pvc.Status.Phase = corev1.ClaimBound
		g.Expect(env.Client.Status().Update(ctx, pvc)).To(Succeed())
		spec := *podSpec.DeepCopy()
		spec.NodeName = "node-" + name
		spec.Volumes = []corev1.Volume{{Name: "db", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}}}
		pods = append(pods, runningPod(t, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("vmstorage-%s-%d", name, i), Namespace: ns, Labels: sel, OwnerReferences: owner("StatefulSet", sts)},
			Spec:       spec,
		}))
	}

	isel := map[string]string{"app.kubernetes.io/name": "vminsert", "app.kubernetes.io/instance": name}
	ispec := corev1.PodSpec{Containers: []corev1.Container{{Name: "vminsert", Image: "victoriametrics/vminsert"}}}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "vminsert-" + name, Namespace: ns, OwnerReferences: owner(troubleshoot.VMClusterGVK.Kind, vmc)},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: isel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: isel}, Spec: ispec}},
	}
	create(t, dep)
	dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: 1, ReadyReplicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}
	g.Expect(env.Client.Status().Update(ctx, dep)).To(Succeed())
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "vminsert-" + name + "-5d8f", Namespace: ns, OwnerReferences: owner("Deployment", dep)},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: isel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: isel}, Spec: ispec}},
	}
	create(t, rs)
	rs.Status = appsv1.ReplicaSetStatus{ObservedGeneration: rs.Generation, Replicas: 1, ReadyReplicas: 1}
	g.Expect(env.Client.Status().Update(ctx, rs)).To(Succeed())
	runningPod(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "vminsert-" + name + "-5d8f-abcde", Namespace: ns, Labels: isel, OwnerReferences: owner("ReplicaSet", rs)}, Spec: ispec})
	create(t, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "vminsert-" + name, Namespace: ns, OwnerReferences: owner(troubleshoot.VMClusterGVK.Kind, vmc)},
		Spec:       corev1.ServiceSpec{Selector: isel, Ports: []corev1.ServicePort{{Name: "http", Port: 8480}}},
	})
	return pods
}

// runningPod creates p and marks it Running and Ready, its container
// restarted once after an exit with code 137.
func runningPod(t *testing.T, p *corev1.Pod) *corev1.Pod {
	create(t, p)
	now := metav1.Now()
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Ready: true, RestartCount: 1, Image: c.Image, ImageID: c.Image,
			State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137, FinishedAt: now}},
		})
	}
	NewWithT(t).Expect(env.Client.Status().Update(context.Background(), p)).To(Succeed())
	return p
}

// find returns the nodes of kind in the tree.
func find(n troubleshoot.Node, kind string) []troubleshoot.Node {
	var out []troubleshoot.Node
	if n.Kind == kind {
		out = append(out, n)
	}
	for _, c := range n.Children {
		out = append(out, find(c, kind)...)
	}
	return out
}
