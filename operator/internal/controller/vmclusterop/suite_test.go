package vmclusterop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/manager"
	"github.com/tidbcloud/ops-server/operator/internal/vmstorage"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.InfoLevel)))
	os.Exit(testenv.RunMain(m, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{opsv1.AddToScheme, helmv2.AddToScheme}},
		func(e *testenv.Environment) error { env = e; return nil }))
}

const vmcName = "vmc"

// cluster is one test's vmcluster: a HelmRelease, the VMCluster it
// installed, and the component workloads. Flux, the VictoriaMetrics
// operator and the workload controllers are not running here; play
// stands in for them, so the steps' waits have something to see.
type cluster struct {
	ns string
}

func newCluster(t *testing.T, storage, replicationFactor int) *cluster {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	c := &cluster{ns: env.NewNamespace(t)}
	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: vmcName},
		Spec: helmv2.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: time.Hour},
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart: "vmcluster", SourceRef: helmv2.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: vmcName},
			}},
			Values: &apiextensionsv1.JSON{Raw: []byte(fmt.Sprintf(`{"replicationFactor":%d,"vmstorage":{"replicaCount":%d}}`, replicationFactor, storage))},
		},
	}
	g.Expect(env.Client.Create(ctx, hr)).To(Succeed())
	vmc := vmstorage.NewVMCluster()
	vmc.SetNamespace(c.ns)
	vmc.SetName(vmcName)
	vmc.SetLabels(map[string]string{vmstorage.FluxNameLabel: vmcName, vmstorage.FluxNamespaceLabel: c.ns})
	vmc.Object["spec"] = map[string]any{
		"replicationFactor": int64(replicationFactor),
		"vmstorage":         map[string]any{"replicaCount": int64(storage)},
		"vmselect":          map[string]any{"replicaCount": int64(1)},
		"vminsert":          map[string]any{"replicaCount": int64(1)},
	}
	g.Expect(env.Client.Create(ctx, vmc)).To(Succeed())
	for _, comp := range []string{"vmstorage", "vmselect"} {
		labels := map[string]string{"app.kubernetes.io/name": comp, "app.kubernetes.io/instance": vmcName}
		sts := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: comp + "-" + vmcName},
			Spec: appsv1.StatefulSetSpec{
				Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels}, ServiceName: comp,
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: comp, Image: "victoriametrics/" + comp}}}},
			},
		}
		if comp == "vmstorage" {
			sts.Spec.Replicas = ptr.To(int32(storage))
		}
		g.Expect(env.Client.Create(ctx, sts)).To(Succeed())
	}
	labels := map[string]string{"app.kubernetes.io/name": "vminsert", "app.kubernetes.io/instance": vmcName}
	g.Expect(env.Client.Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: "vminsert-" + vmcName},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "vminsert", Image: "victoriametrics/vminsert"}}}}},
	})).To(Succeed())
	for i := 0; i < storage; i++ {
		c.createPod(t, fmt.Sprintf("vmstorage-%s-%d", vmcName, i))
	}
	return c
}

// createPod creates a vmstorage Pod, Ready.
func (c *cluster) createPod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	g := NewWithT(t)
	labels := map[string]string{"app.kubernetes.io/name": "vmstorage", "app.kubernetes.io/instance": vmcName}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "vmstorage", Image: "victoriametrics/vmstorage"}}}}
	g.Expect(env.Client.Create(context.Background(), p)).To(Succeed())
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	g.Expect(env.Client.Status().Update(context.Background(), p)).To(Succeed())
	return p
}

// play stands in for Flux (the HelmRelease becomes Ready at its
// generation, its values copied into the VMCluster), the VictoriaMetrics
// operator (the VMCluster becomes operational, the workloads get its
// replica counts) and the workload controllers (every replica ready)
// until the test ends.
func (c *cluster) play(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			_ = c.playOnce(ctx)
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func (c *cluster) playOnce(ctx context.Context) error {
	hr := &helmv2.HelmRelease{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: vmcName}, hr); err != nil {
		return err
	}
	vmc := vmstorage.NewVMCluster()
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: vmcName}, vmc); err != nil {
		return err
	}
	if hr.Status.ObservedGeneration < hr.Generation {
		values := map[string]any{}
		_ = json.Unmarshal(hr.Spec.Values.Raw, &values)
		for _, comp := range []string{"vmstorage", "vminsert", "vmselect"} {
			m, _ := values[comp].(map[string]any)
			if n, ok := m["replicaCount"].(float64); ok {
				_ = unstructured.SetNestedField(vmc.Object, int64(n), "spec", comp, "replicaCount")
			}
			if r, ok := m["resources"]; ok {
				_ = unstructured.SetNestedField(vmc.Object, runtime.DeepCopyJSONValue(r), "spec", comp, "resources")
			}
		}
		if err := env.Client.Update(ctx, vmc); err != nil {
			return err
		}
		hr.Status.ObservedGeneration = hr.Generation
		hr.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "UpgradeSucceeded",
			Message: "Helm upgrade succeeded", ObservedGeneration: hr.Generation, LastTransitionTime: metav1.Now()}}
		if err := env.Client.Status().Update(ctx, hr); err != nil {
			return err
		}
	}
	for _, comp := range []string{"vmstorage", "vmselect"} {
		want, _, _ := unstructured.NestedInt64(vmc.Object, "spec", comp, "replicaCount")
		sts := &appsv1.StatefulSet{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: comp + "-" + vmcName}, sts); err != nil {
			return err
		}
		if *sts.Spec.Replicas != int32(want) {
			sts.Spec.Replicas = ptr.To(int32(want))
			if err := env.Client.Update(ctx, sts); err != nil {
				return err
			}
		}
		n := *sts.Spec.Replicas
		sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: n, ReadyReplicas: n, AvailableReplicas: n,
			CurrentReplicas: n, UpdatedReplicas: n, CurrentRevision: "r1", UpdateRevision: "r1"}
		if err := env.Client.Status().Update(ctx, sts); err != nil {
			return err
		}
	}
	dep := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: "vminsert-" + vmcName}, dep); err != nil {
		return err
	}
	want, _, _ := unstructured.NestedInt64(vmc.Object, "spec", "vminsert", "replicaCount")
	if *dep.Spec.Replicas != int32(want) {
		dep.Spec.Replicas = ptr.To(int32(want))
		if err := env.Client.Update(ctx, dep); err != nil {
			return err
		}
	}
	n := *dep.Spec.Replicas
	dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: n, ReadyReplicas: n, UpdatedReplicas: n, AvailableReplicas: n}
	if err := env.Client.Status().Update(ctx, dep); err != nil {
		return err
	}
	_ = unstructured.SetNestedField(vmc.Object, vmc.GetGeneration(), "status", "observedGeneration")
	_ = unstructured.SetNestedField(vmc.Object, vmstorage.UpdateStatusOperational, "status", "updateStatus")
	if err := env.Client.Status().Update(ctx, vmc); err != nil && !apierrors.IsConflict(err) {
		return err
	}
	return nil
}

// startOperator runs ops-operator for the namespace until the test ends;
// the returned function stops it earlier.
func startOperator(t *testing.T, ns string) func() {
	t.Helper()
	o := manager.DefaultOptions()
	o.MetricsAddr, o.HealthAddr, o.LeaderElection = "0", "0", false
	o.GracefulShutdownTime = 10 * time.Second
	o.SkipControllerNameValidation = true
	o.WatchNamespace = ns
	o.Operation.PollInterval = 100 * time.Millisecond
	mgr, err := manager.New(env.Config, o, nil)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

func getOp(g Gomega, ns, name string) *opsv1.VMClusterOperation {
	op := &opsv1.VMClusterOperation{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, op)).To(Succeed())
	return op
}
