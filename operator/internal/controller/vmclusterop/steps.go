package vmclusterop

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/outcome"
	"github.com/tidbcloud/ops-server/operator/internal/skeleton"
	"github.com/tidbcloud/ops-server/operator/internal/vmstorage"
)

// Labels the VictoriaMetrics operator gives every Pod of a component.
const (
	labelName     = "app.kubernetes.io/name"
	labelInstance = "app.kubernetes.io/instance"
)

// workloadName is the StatefulSet (vmstorage, vmselect) or Deployment
// (vminsert) the VictoriaMetrics operator creates for a component.
func workloadName(c opsv1.VMClusterComponent, vmcluster string) string {
	return string(c) + "-" + vmcluster
}

// preflight checks what the CRD cannot (the VMCluster, its HelmRelease, the
// replication factor) and reads the Current the plan starts from. A
// problem fails the operation with reason before anything changes.
func (r *Reconciler) preflight(ctx context.Context, op *opsv1.VMClusterOperation) (problem, reason string, cur Current, err error) {
	if ns := op.Spec.VMCluster.Namespace; ns != "" && ns != op.Namespace {
		return fmt.Sprintf("spec.vmCluster.namespace %s: a VMClusterOperation may only operate on a VMCluster in its own namespace %s", ns, op.Namespace),
			opsv1.InvalidSpecReason, cur, nil
	}
	ns, name := op.VMClusterKey()
	vmc := vmstorage.NewVMCluster()
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, vmc); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Sprintf("spec.vmCluster: VMCluster %s/%s does not exist", ns, name), opsv1.VMClusterNotFoundReason, cur, nil
		}
		return "", "", cur, fmt.Errorf("getting VMCluster %s/%s: %w", ns, name, err)
	}
	hr, err := vmstorage.OwningHelmRelease(ctx, r.APIReader, vmc)
	if err != nil {
		return "", "", cur, err
	}
	if hr == nil {
		return fmt.Sprintf("spec.vmCluster: VMCluster %s/%s is not installed by a Flux HelmRelease; operations change it through the HelmRelease's values", ns, name),
			opsv1.InvalidSpecReason, cur, nil
	}
	cur = Current{
		Replicas:  map[opsv1.VMClusterComponent]int32{},
		Resources: map[opsv1.VMClusterComponent]string{},
		Pods:      map[opsv1.VMClusterComponent][]string{},
	}
	rf, found, _ := unstructured.NestedInt64(vmc.Object, "spec", "replicationFactor")
	cur.ReplicationFactor = 1
	if found && rf > 0 {
		cur.ReplicationFactor = int32(rf)
	}
	for _, c := range opsv1.Components {
		n, found, _ := unstructured.NestedInt64(vmc.Object, "spec", string(c), "replicaCount")
		if !found {
			n = 1
		}
		cur.Replicas[c] = int32(n)
		res, _, _ := unstructured.NestedFieldNoCopy(vmc.Object, "spec", string(c), "resources")
		cur.Resources[c] = CanonicalResources(res)
		if op.Spec.Type == opsv1.OperationRestart {
			pods := &corev1.PodList{}
			if err := r.APIReader.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{labelName: string(c), labelInstance: name}); err != nil {
				return "", "", cur, fmt.Errorf("listing the %s Pods of VMCluster %s/%s: %w", c, ns, name, err)
			}
			for _, p := range pods.Items {
				cur.Pods[c] = append(cur.Pods[c], p.Name)
			}
			sort.Strings(cur.Pods[c])
		}
	}
	if t := op.Spec.HorizontalScaling.Replicas(opsv1.ComponentVMStorage); t != nil {
		if p := opsv1.ReplicationRiskProblem(cur.Replicas[opsv1.ComponentVMStorage], *t, cur.ReplicationFactor, op.Spec.AcknowledgeReplicationRisk); p != "" {
			return "spec.horizontalScaling.vmstorage: " + p, opsv1.InvalidSpecReason, cur, nil
		}
	}
	return "", "", cur, nil
}

// start records the start of step (for a restart: the UID of the Pod it
// will delete) before the step does anything; the next reconcile acts.
// A restart only starts once the component has converged: one Pod at a
// time, never while another is not Ready.
func (r *Reconciler) start(ctx context.Context, s *scope, key types.NamespacedName, step *opsv1.OperationStep) error {
	if step.Action == opsv1.ActionRestartPod {
		ok, msg, err := r.converged(ctx, key, step.Component, -1)
		if err != nil {
			return err
		}
		if !ok {
			step.Message = "Waiting for the component to be ready before restarting the next Pod: " + msg
			return nil
		}
		pod := &corev1.Pod{}
		found, err := skeleton.Get(ctx, r.APIReader, types.NamespacedName{Namespace: key.Namespace, Name: step.Pod}, pod)
		if err != nil {
			return err
		}
		if found {
			step.PodUID = string(pod.UID)
			step.From = string(pod.UID)
		}
	}
	step.Phase, step.StartTime, step.Message = opsv1.StepPhaseRunning, r.now(), "Started"
	s.op.Status.CurrentStep = step.ID
	s.requeue = time.Millisecond
	skeleton.Event(r.Recorder, s.op, "Normal", "StepStarted", "%s: %s", step.ID, describe(step))
	return nil
}

// run carries a started step forward; finished reports it done, msg says
// where it is.
func (r *Reconciler) run(ctx context.Context, op *opsv1.VMClusterOperation, key types.NamespacedName, step *opsv1.OperationStep) (finished bool, msg string, err error) {
	if step.Action == opsv1.ActionRestartPod {
		return r.restartPod(ctx, op, key, step)
	}
	vmc := vmstorage.NewVMCluster()
	if err := r.APIReader.Get(ctx, key, vmc); err != nil {
		if apierrors.IsNotFound(err) {
			return false, "", outcome.Terminal(fmt.Errorf("VMCluster %s no longer exists", key))
		}
		return false, "", fmt.Errorf("getting VMCluster %s: %w", key, err)
	}
	hr, err := vmstorage.OwningHelmRelease(ctx, r.APIReader, vmc)
	if err != nil {
		return false, "", err
	}
	if hr == nil {
		return false, "", outcome.Terminal(fmt.Errorf("VMCluster %s is no longer installed by a Flux HelmRelease", key))
	}
	hrKey := types.NamespacedName{Namespace: hr.GetNamespace(), Name: hr.GetName()}
	if step.HelmReleaseGeneration == 0 {
		gen, err := r.setValue(ctx, hrKey, step)
		if err != nil {
			return false, "", err
		}
		step.HelmReleaseGeneration = gen
		return false, fmt.Sprintf("HelmRelease %s values set (%s) at generation %d; waiting for it to be Ready", hrKey, describe(step), gen), nil
	}
	if msg, ok := helmReleaseReady(hr, step.HelmReleaseGeneration); !ok {
		return false, msg, nil
	}
	want := int32(-1)
	if step.Action == opsv1.ActionScale {
		n, _ := strconv.Atoi(step.To)
		want = int32(n)
	}
	ok, msg, err := r.converged(ctx, key, step.Component, want)
	if err != nil || !ok {
		return false, msg, err
	}
	return true, fmt.Sprintf("%s; HelmRelease %s Ready at generation %d; %s", describe(step), hrKey, step.HelmReleaseGeneration, msg), nil
}

// valuePath is the Helm value a step sets: <component>.replicaCount or
// <component>.resources, the keys of the vmcluster chart.
func valuePath(step *opsv1.OperationStep) (key string, value any, err error) {
	switch step.Action {
	case opsv1.ActionScale:
		n, err := strconv.Atoi(step.To)
		if err != nil {
			return "", nil, outcome.Terminal(fmt.Errorf("step %s: replica count %q: %w", step.ID, step.To, err))
		}
		return "replicaCount", int64(n), nil
	case opsv1.ActionResize:
		var v map[string]any
		if err := json.Unmarshal([]byte(step.To), &v); err != nil {
			return "", nil, outcome.Terminal(fmt.Errorf("step %s: resources %q: %w", step.ID, step.To, err))
		}
		return "resources", v, nil
	}
	return "", nil, outcome.Terminal(fmt.Errorf("step %s: action %s changes no value", step.ID, step.Action))
}

// setValue writes the step's value into the HelmRelease's spec.values (a
// JSON patch replacing spec.values, tested against the resourceVersion it
// was computed from, so a concurrent PUT is never overwritten) and returns
// the generation the HelmRelease has with it. A value already in place is
// not written again (a repeat after a crash).
func (r *Reconciler) setValue(ctx context.Context, hrKey types.NamespacedName, step *opsv1.OperationStep) (int64, error) {
	field, value, err := valuePath(step)
	if err != nil {
		return 0, err
	}
	hr := &unstructured.Unstructured{}
	hr.SetGroupVersionKind(vmstorage.HelmReleaseGVK)
	if err := r.APIReader.Get(ctx, hrKey, hr); err != nil {
		return 0, fmt.Errorf("getting HelmRelease %s: %w", hrKey, err)
	}
	values, _, err := unstructured.NestedMap(hr.Object, "spec", "values")
	if err != nil {
		return 0, outcome.Terminal(fmt.Errorf("HelmRelease %s spec.values: %w", hrKey, err))
	}
	if values == nil {
		values = map[string]any{}
	}
	comp, _ := values[string(step.Component)].(map[string]any)
	if comp == nil {
		comp = map[string]any{}
	}
	if sameJSON(comp[field], value) {
		return hr.GetGeneration(), nil
	}
	comp[field] = value
	values[string(step.Component)] = comp
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": hr.GetResourceVersion()},
		{"op": "add", "path": "/spec/values", "value": values},
		{"op": "add", "path": "/metadata/annotations", "value": annotationsWith(hr.GetAnnotations(), AnnotationLastOperation, hrKey.Namespace+"/"+step.ID)},
	})
	if err != nil {
		return 0, err
	}
	if err := r.Client.Patch(ctx, hr, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(skeleton.FieldOwner)); err != nil {
		return 0, fmt.Errorf("setting %s.%s in HelmRelease %s: %w", step.Component, field, hrKey, err)
	}
	return hr.GetGeneration(), nil
}

// AnnotationLastOperation records on a HelmRelease the last operation step
// that changed its values (for a person reading the HelmRelease).
const AnnotationLastOperation = "ops.observability.tidbcloud.com/last-operation-step"

func annotationsWith(a map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(a)+1)
	for x, y := range a {
		out[x] = y
	}
	out[k] = v
	return out
}

// sameJSON compares two values as JSON (1 equals 1.0).
func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var va, vb any
	_ = json.Unmarshal(ja, &va)
	_ = json.Unmarshal(jb, &vb)
	return reflect.DeepEqual(va, vb)
}

// helmReleaseReady tells whether Flux reconciled the HelmRelease at (at
// least) generation gen and it is Ready.
func helmReleaseReady(hr *unstructured.Unstructured, gen int64) (string, bool) {
	name := hr.GetNamespace() + "/" + hr.GetName()
	observed, _, _ := unstructured.NestedInt64(hr.Object, "status", "observedGeneration")
	conds, _, _ := unstructured.NestedSlice(hr.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Ready" {
			continue
		}
		cg, _, _ := unstructured.NestedInt64(m, "observedGeneration")
		status, _ := m["status"].(string)
		message, _ := m["message"].(string)
		switch {
		case observed < gen || cg < gen:
			return fmt.Sprintf("HelmRelease %s has not reconciled generation %d yet (observed %d)", name, gen, observed), false
		case status != "True":
			return fmt.Sprintf("HelmRelease %s is not Ready at generation %d: %s", name, gen, message), false
		}
		return "", true
	}
	return fmt.Sprintf("HelmRelease %s has no Ready condition yet (generation %d)", name, gen), false
}

// converged tells whether a component has rolled out: the VMCluster is
// operational at its generation and the component's workload has every
// replica updated and Ready, with want replicas (any when want < 0).
func (r *Reconciler) converged(ctx context.Context, key types.NamespacedName, c opsv1.VMClusterComponent, want int32) (bool, string, error) {
	wl := types.NamespacedName{Namespace: key.Namespace, Name: workloadName(c, key.Name)}
	if c != opsv1.ComponentVMInsert {
		ro, err := vmstorage.RolloutStatus(ctx, r.APIReader, key, 0, wl, "", "", false)
		if err != nil {
			return false, "", err
		}
		if !ro.Done {
			return false, ro.Message, nil
		}
		set := &appsv1.StatefulSet{}
		if err := r.APIReader.Get(ctx, wl, set); err != nil {
			return false, "", fmt.Errorf("getting StatefulSet %s: %w", wl, err)
		}
		if want >= 0 && (set.Spec.Replicas == nil || *set.Spec.Replicas != want) {
			return false, fmt.Sprintf("StatefulSet %s does not ask for %d replicas yet", wl, want), nil
		}
		return true, ro.Message, nil
	}
	dep := &appsv1.Deployment{}
	if err := r.APIReader.Get(ctx, wl, dep); err != nil {
		if apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("Deployment %s does not exist", wl), nil
		}
		return false, "", fmt.Errorf("getting Deployment %s: %w", wl, err)
	}
	spec := int32(1)
	if dep.Spec.Replicas != nil {
		spec = *dep.Spec.Replicas
	}
	st := dep.Status
	switch {
	case want >= 0 && spec != want:
		return false, fmt.Sprintf("Deployment %s does not ask for %d replicas yet (asks for %d)", wl, want, spec), nil
	case st.ObservedGeneration < dep.Generation:
		return false, fmt.Sprintf("Deployment %s: generation %d not observed yet", wl, dep.Generation), nil
	case st.UpdatedReplicas != spec || st.ReadyReplicas != spec || st.Replicas != spec:
		return false, fmt.Sprintf("Deployment %s: %d/%d replicas updated, %d ready, %d exist", wl, st.UpdatedReplicas, spec, st.ReadyReplicas, st.Replicas), nil
	}
	return true, fmt.Sprintf("Deployment %s rolled out (%d/%d ready)", wl, st.ReadyReplicas, spec), nil
}

// restartPod evicts the step's Pod once — only the Pod whose UID the step
// recorded — and waits for its replacement to be Ready (its readiness
// probe is VictoriaMetrics' /health).
func (r *Reconciler) restartPod(ctx context.Context, op *opsv1.VMClusterOperation, key types.NamespacedName, step *opsv1.OperationStep) (bool, string, error) {
	podKey := types.NamespacedName{Namespace: key.Namespace, Name: step.Pod}
	pod := &corev1.Pod{}
	found, err := skeleton.Get(ctx, r.APIReader, podKey, pod)
	if err != nil {
		return false, "", err
	}
	switch {
	case found && step.PodUID != "" && string(pod.UID) == step.PodUID && pod.DeletionTimestamp == nil:
		// An eviction, so PodDisruptionBudgets are respected (a refusal,
		// 429, is retried); the UID precondition makes sure it is the
		// recorded Pod and not its replacement.
		uid := pod.UID
		ev := &policyv1.Eviction{DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}}
		err := r.Client.SubResource("eviction").Create(ctx, pod, ev)
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return false, "", fmt.Errorf("evicting Pod %s: %w", podKey, err)
		}
		skeleton.Event(r.Recorder, op, "Normal", "PodRestarted", "Evicted Pod %s (uid %s) to restart it", podKey, uid)
		return false, fmt.Sprintf("Evicted Pod %s (uid %s); waiting for its replacement to be Ready", podKey, uid), nil
	case found && string(pod.UID) == step.PodUID:
		return false, fmt.Sprintf("Pod %s (uid %s) is terminating", podKey, pod.UID), nil
	case !found:
		return false, fmt.Sprintf("Waiting for Pod %s to be re-created", podKey), nil
	case !podReady(pod):
		return false, fmt.Sprintf("Replacement Pod %s (uid %s) is not Ready yet", podKey, pod.UID), nil
	}
	ok, msg, err := r.converged(ctx, key, step.Component, -1)
	if err != nil || !ok {
		return false, msg, err
	}
	step.To = string(pod.UID)
	return true, fmt.Sprintf("Pod %s restarted (uid %s → %s) and Ready", podKey, step.PodUID, pod.UID), nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
