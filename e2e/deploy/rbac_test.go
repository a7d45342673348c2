package deploy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"

	"github.com/tidbcloud/ops-server/e2e/deploy/render"
)

// mockNamespace is the simulated cloud's namespace in the dev values.
const mockNamespace = "ops-mock-cloud"

// TestRBACHasNoWildcards: no rule of any rendering grants "*" (verbs,
// resources or API groups), nor non-resource URLs.
func TestRBACHasNoWildcards(t *testing.T) {
	g := NewWithT(t)
	cases := renderCases(t)
	cases = append(cases, renderCase{name: "watchAllNamespaces"})
	roles := 0
	for _, tc := range cases {
		var vals map[string]any
		if tc.name == "watchAllNamespaces" {
			vals = map[string]any{"flux": map[string]any{"watchAllNamespaces": true}}
		}
		res := renderChart(t, "ops-server", "observability", vals, tc.files...)
		for _, obj := range res.Objects {
			if obj.GetKind() != "Role" && obj.GetKind() != "ClusterRole" {
				continue
			}
			roles++
			role := &rbacv1.ClusterRole{}
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, role, true)).To(Succeed(), describe(obj))
			g.Expect(role.AggregationRule).To(BeNil())
			g.Expect(role.Rules).NotTo(BeEmpty(), describe(obj))
			for _, r := range role.Rules {
				g.Expect(r.NonResourceURLs).To(BeEmpty(), describe(obj))
				g.Expect(r.Resources).NotTo(BeEmpty(), describe(obj))
				for _, s := range append(append(append([]string{}, r.Verbs...), r.Resources...), r.APIGroups...) {
					g.Expect(s).NotTo(ContainSubstring("*"), "%s (%s): %+v", describe(obj), tc.name, r)
				}
			}
		}
	}
	g.Expect(roles).To(BeNumerically(">=", 8*len(cases)))
}

// installed is a chart rendering applied for real in its own namespace,
// with the release named after the namespace (so that its cluster-scoped
// objects do not collide with another test's).
type installed struct {
	ns       string
	fullname string
	res      *render.Result
}

func (i installed) serverSA() string   { return i.fullname }
func (i installed) operatorSA() string { return i.fullname + "-operator" }

// install renders the chart and applies every object for real (the CRDs
// are already installed by the test environment). Cluster-scoped objects
// and those in other namespaces are deleted when the test ends.
func install(t *testing.T, values map[string]any, files ...string) installed {
	t.Helper()
	ctx := context.Background()
	ns := env.NewNamespace(t)
	res := renderChart(t, ns, ns, values, files...)
	for _, obj := range res.Objects {
		if obj.GetKind() == "Namespace" {
			if err := ensureNamespace(ctx, obj.GetName()); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if n := obj.GetNamespace(); n != "" && n != ns {
			if err := ensureNamespace(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
		if err := apply(ctx, obj, false); err != nil {
			t.Fatalf("applying %s: %v", describe(obj), err)
		}
		if obj.GetNamespace() == "" || obj.GetNamespace() != ns {
			o := obj.DeepCopy()
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
		}
	}
	return installed{ns: ns, fullname: ns + "-ops-server", res: res}
}

// clientAs is an uncached client (with watches) acting as the
// ServiceAccount.
func clientAs(t *testing.T, namespace, sa string) client.WithWatch {
	t.Helper()
	c, err := client.NewWithWatch(impersonate(namespace, sa), client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// authorized: the call passed authorization. A NotFound (or any other
// error but Forbidden) still proves that: the API server authorises a
// request before it looks at the object.
func authorized(g Gomega, err error, what string) {
	g.ExpectWithOffset(1, apierrors.IsForbidden(err)).To(BeFalse(), "%s: %v", what, err)
	if err != nil && !apierrors.IsNotFound(err) {
		g.ExpectWithOffset(1, err).NotTo(HaveOccurred(), what)
	}
}

func forbidden(g Gomega, err error, what string) {
	g.ExpectWithOffset(1, apierrors.IsForbidden(err)).To(BeTrue(), "%s must be forbidden, got %v", what, err)
}

func watchOnce(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
	w, err := c.Watch(ctx, list, opts...)
	if err != nil {
		return err
	}
	w.Stop()
	return nil
}

// TestOperatorRBACCoversItsCalls runs the calls ops-operator makes —
// operator/internal/controller/upgrade, internal/drain, internal/vmstorage,
// the backup controller's Jobs, events, and a real client-go leader
// election — as the chart's operator ServiceAccount, after applying the
// chart's RBAC; then calls outside that set, which must be forbidden.
func TestOperatorRBACCoversItsCalls(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	in := install(t, nil)
	ns := in.ns
	op := clientAs(t, ns, in.operatorSA())
	admin := env.Client

	// ClusterUpgradeOperations: the controller's informer and Get, then
	// the status patch of each reconcile.
	cuo := &opsv1.ClusterUpgradeOperation{
		ObjectMeta: metav1.ObjectMeta{Name: "upgrade", Namespace: ns},
		Spec:       opsv1.ClusterUpgradeOperationSpec{K8sClusterName: "c1", Region: "local", CloudProvider: "mock", TargetVersion: "1.30"},
	}
	g.Expect(admin.Create(ctx, cuo)).To(Succeed())
	authorized(g, op.List(ctx, &opsv1.ClusterUpgradeOperationList{}), "list clusterupgradeoperations")
	authorized(g, watchOnce(ctx, op, &opsv1.ClusterUpgradeOperationList{}), "watch clusterupgradeoperations")
	got := &opsv1.ClusterUpgradeOperation{}
	authorized(g, op.Get(ctx, client.ObjectKeyFromObject(cuo), got), "get clusterupgradeoperation")
	authorized(g, op.Status().Patch(ctx, got, client.RawPatch(types.MergePatchType, []byte(`{"status":{"phase":"Pending","currentStep":"preflight"}}`)), client.FieldOwner("ops-operator")), "patch clusterupgradeoperations/status")
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(cuo), got)).To(Succeed())
	g.Expect(got.Status.CurrentStep).To(Equal("preflight"))
	forbidden(g, op.Patch(ctx, got, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"paused":true}}`))), "patch of a ClusterUpgradeOperation's spec")

	// ClusterBackups: the same shape.
	authorized(g, op.List(ctx, &opsv1.ClusterBackupList{}), "list clusterbackups")
	authorized(g, watchOnce(ctx, op, &opsv1.ClusterBackupList{}), "watch clusterbackups")
	cb := &opsv1.ClusterBackup{ObjectMeta: metav1.ObjectMeta{Name: "absent", Namespace: ns}}
	authorized(g, op.Status().Patch(ctx, cb, client.RawPatch(types.MergePatchType, []byte(`{"status":{}}`))), "patch clusterbackups/status")

	// ClusterBackupSchedules (operator/internal/controller/schedule): the
	// informer, the status patch, the scheduled ClusterBackups it creates
	// (owned by the schedule, blockOwnerDeletion) and the expired ones it
	// deletes.
	authorized(g, op.List(ctx, &opsv1.ClusterBackupScheduleList{}), "list clusterbackupschedules")
	authorized(g, watchOnce(ctx, op, &opsv1.ClusterBackupScheduleList{}), "watch clusterbackupschedules")
	sched := &opsv1.ClusterBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: ns},
		Spec: opsv1.ClusterBackupScheduleSpec{Schedule: "@daily", VMCluster: opsv1.VMClusterReference{Name: "vm"},
			Destination: opsv1.BackupDestination{URL: "s3://b/p"}, KeepLast: ptr.To[int32](2)},
	}
	g.Expect(admin.Create(ctx, sched)).To(Succeed())
	authorized(g, op.Status().Patch(ctx, sched, client.RawPatch(types.MergePatchType, []byte(`{"status":{"deletedTotal":1}}`))), "patch clusterbackupschedules/status")
	scheduled := &opsv1.ClusterBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly-202601010000", Namespace: ns, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: opsv1.GroupVersion.String(), Kind: opsv1.ClusterBackupScheduleKind, Name: sched.Name, UID: sched.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: opsv1.ClusterBackupSpec{VMCluster: opsv1.VMClusterReference{Name: "vm"}, Destination: opsv1.BackupDestination{URL: "s3://b/p"}},
	}
	authorized(g, op.Create(ctx, scheduled), "create a ClusterBackup owned by a schedule")
	authorized(g, op.Delete(ctx, scheduled), "delete clusterbackups")
	// VMClusterOperations: List/Watch/Get, status patches, and never a
	// patch of the spec (the user's request); the vminsert Deployment is
	// read, a restarted Pod is evicted (pods/eviction, above).
	authorized(g, op.List(ctx, &opsv1.VMClusterOperationList{}), "list vmclusteroperations")
	authorized(g, watchOnce(ctx, op, &opsv1.VMClusterOperationList{}), "watch vmclusteroperations")
	vmcop := &opsv1.VMClusterOperation{ObjectMeta: metav1.ObjectMeta{Name: "absent", Namespace: ns}}
	authorized(g, op.Status().Patch(ctx, vmcop, client.RawPatch(types.MergePatchType, []byte(`{"status":{}}`))), "patch vmclusteroperations/status")
	forbidden(g, op.Patch(ctx, vmcop, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"paused":true}}`))), "patch of a VMClusterOperation's spec")
	authorized(g, op.Get(ctx, client.ObjectKey{Namespace: ns, Name: "vminsert-vm"}, &appsv1.Deployment{}), "get deployments")

	// vmstorage: Get and JSON merge patch of the VMCluster, Get of its
	// StatefulSet, List of its pods.
	vmc := &unstructured.Unstructured{}
	vmc.SetAPIVersion("operator.victoriametrics.com/v1beta1")
	vmc.SetKind("VMCluster")
	vmc.SetNamespace(ns)
	vmc.SetName("vm")
	g.Expect(unstructured.SetNestedField(vmc.Object, "1", "spec", "retentionPeriod")).To(Succeed())
	g.Expect(admin.Create(ctx, vmc)).To(Succeed())
	vmcGot := vmc.DeepCopy()
	authorized(g, op.Get(ctx, client.ObjectKeyFromObject(vmc), vmcGot), "get vmcluster")
	authorized(g, op.Patch(ctx, vmcGot, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"retentionPeriod":"2"}}`)), client.FieldOwner("ops-operator")), "patch vmcluster")
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(vmc), vmcGot)).To(Succeed())
	g.Expect(nestedString(vmcGot, "spec", "retentionPeriod")).To(Equal("2"))
	authorized(g, op.Get(ctx, client.ObjectKey{Namespace: ns, Name: "vmstorage-vm"}, &appsv1.StatefulSet{}), "get statefulset")

	// drain: cordon, pods by node (cluster-wide), PDBs, evictions.
	nodeName := ns + "-node"
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{"test.ops/group": ns}}}
	g.Expect(admin.Create(ctx, node)).To(Succeed())
	t.Cleanup(func() { _ = admin.Delete(context.Background(), node) })
	nodes := &corev1.NodeList{}
	authorized(g, op.List(ctx, nodes, client.MatchingLabels{"test.ops/group": ns}), "list nodes")
	g.Expect(nodes.Items).To(HaveLen(1))
	authorized(g, op.Get(ctx, client.ObjectKey{Name: nodeName}, &corev1.Node{}), "get node")
	authorized(g, op.Patch(ctx, node, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`)), client.FieldOwner("ops-operator")), "cordon node")
	g.Expect(admin.Get(ctx, client.ObjectKey{Name: nodeName}, node)).To(Succeed())
	g.Expect(node.Spec.Unschedulable).To(BeTrue())

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "victim", Namespace: ns, Labels: map[string]string{"app": "victim"}},
		Spec:       corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	g.Expect(admin.Create(ctx, pod)).To(Succeed())
	pods := &corev1.PodList{}
	authorized(g, op.List(ctx, pods, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("spec.nodeName", nodeName)}), "list pods by node, all namespaces")
	g.Expect(pods.Items).To(HaveLen(1))
	authorized(g, op.List(ctx, &policyv1.PodDisruptionBudgetList{}, client.InNamespace(ns)), "list poddisruptionbudgets")
	// operator/pkg/preflight, before the first step: the same reads as
	// ops-apiserver's preflight.
	preflightReads(g, ctx, op, ns)
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns}, DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}}}
	authorized(g, op.SubResource("eviction").Create(ctx, pod, eviction), "create pods/eviction")
	gone := &corev1.Pod{}
	err := admin.Get(ctx, client.ObjectKeyFromObject(pod), gone)
	g.Expect(apierrors.IsNotFound(err) || gone.DeletionTimestamp != nil).To(BeTrue(), "the eviction deletes the pod (%v)", err)

	// Backups: the finalizer patch, the Secret with vmstorage's snapshot
	// auth key (in the vmcluster namespace only), vmbackup Jobs and the
	// log of a failed one.
	cbReal := &opsv1.ClusterBackup{ObjectMeta: metav1.ObjectMeta{Name: "absent", Namespace: ns}}
	authorized(g, op.Patch(ctx, cbReal, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":["ops.observability.tidbcloud.com/backup"]}}`))), "patch clusterbackup (finalizer)")
	authKey := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "snapshot-auth", Namespace: ns}, StringData: map[string]string{"authKey": "k"}}
	g.Expect(admin.Create(ctx, authKey)).To(Succeed())
	authorized(g, op.Get(ctx, client.ObjectKeyFromObject(authKey), &corev1.Secret{}), "get the snapshot auth key Secret")
	var logs kubernetes.Interface
	logs, err = kubernetes.NewForConfig(impersonate(ns, in.operatorSA()))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = logs.CoreV1().Pods(ns).GetLogs("vmbackup-absent", &corev1.PodLogOptions{}).DoRaw(ctx)
	authorized(g, err, "get pods/log")
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "vmbackup", Namespace: ns},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "vmbackup", Image: "victoriametrics/vmbackup"}},
		}}},
	}
	authorized(g, op.Create(ctx, job), "create job")
	authorized(g, op.Get(ctx, client.ObjectKeyFromObject(job), &batchv1.Job{}), "get job")
	authorized(g, op.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)), "delete job")

	// Jobs and pod logs only in the managed namespaces
	// (operator.managedNamespaces; by default the vmcluster namespace and
	// observability), through Roles: allowed in observability as well,
	// forbidden in any other namespace.
	newJob := func(namespace, name string) *batchv1.Job {
		return &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "vmbackup", Image: "victoriametrics/vmbackup"}},
			}}},
		}
	}
	obsJob := newJob("observability", "vmbackup-"+ns)
	authorized(g, op.Create(ctx, obsJob), "create job in observability")
	authorized(g, op.Delete(ctx, obsJob, client.PropagationPolicy(metav1.DeletePropagationBackground)), "delete job in observability")
	_, err = logs.CoreV1().Pods("observability").GetLogs("vmbackup-absent", &corev1.PodLogOptions{}).DoRaw(ctx)
	authorized(g, err, "get pods/log in observability")
	unmanaged := env.NewNamespace(t)
	strayJob := newJob(unmanaged, "vmbackup")
	forbidden(g, op.Create(ctx, strayJob), "create job in an unmanaged namespace")
	forbidden(g, op.Get(ctx, client.ObjectKeyFromObject(strayJob), &batchv1.Job{}), "get job in an unmanaged namespace")
	forbidden(g, op.Delete(ctx, strayJob), "delete job in an unmanaged namespace")
	_, err = logs.CoreV1().Pods(unmanaged).GetLogs("vmbackup-absent", &corev1.PodLogOptions{}).DoRaw(ctx)
	forbidden(g, err, "get pods/log in an unmanaged namespace")
	forbidden(g, op.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "vm-vmstorage-hold", Namespace: unmanaged}}), "create a hold configmap in an unmanaged namespace")

	// Restores (restore/configmap.go): the hold ConfigMap in the vmcluster
	// namespace (Get, Create, merge patch of one key), the held pod's
	// Delete with a UID precondition; nowhere else.
	hold := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "vm-vmstorage-hold", Namespace: ns}, Data: map[string]string{"vmstorage-vm-0": "ns/r uid"}}
	authorized(g, op.Create(ctx, hold), "create the hold configmap")
	authorized(g, op.Get(ctx, client.ObjectKeyFromObject(hold), &corev1.ConfigMap{}), "get the hold configmap")
	authorized(g, op.Patch(ctx, hold, client.RawPatch(types.MergePatchType, []byte(`{"data":{"vmstorage-vm-0":null}}`))), "patch the hold configmap")
	heldPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "vmstorage-held", Namespace: ns}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "vmstorage", Image: "x"}}}}
	g.Expect(admin.Create(ctx, heldPod)).To(Succeed())
	authorized(g, op.Delete(ctx, heldPod, client.Preconditions{UID: &heldPod.UID}), "delete the held vmstorage pod")

	// Events: events.k8s.io (the manager's recorder) and core (leader
	// election).
	now := metav1.NowMicro()
	authorized(g, op.Create(ctx, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "upgrade-", Namespace: ns},
		EventTime:  now, ReportingController: "ops-operator", ReportingInstance: "ops-operator-0",
		Action: "Reconcile", Reason: "Planned", Type: corev1.EventTypeNormal, Note: "Planned 3 steps",
		Regarding: corev1.ObjectReference{Kind: "ClusterUpgradeOperation", Namespace: ns, Name: cuo.Name, UID: cuo.UID},
	}), "create events.k8s.io event")
	authorized(g, op.Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: "lease-", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Lease", Namespace: ns, Name: "ops-operator"},
		Reason:         "LeaderElection", Message: "became leader", Type: corev1.EventTypeNormal,
	}), "create core event")

	// Leader election: a real client-go elector on a Lease in the release
	// namespace, as controller-runtime runs it.
	g.Expect(leadOnce(ctx, logs, ns, "ops-operator.ops.observability.tidbcloud.com")).To(Succeed())
	lease := &coordinationv1.Lease{}
	g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ops-operator.ops.observability.tidbcloud.com"}, lease)).To(Succeed())
	g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())

	// vmstorage.OwningHelmRelease and RecordOverlay: the Flux HelmRelease
	// of a VMCluster, and the post-renderer a rollout records on it.
	authorized(g, op.List(ctx, &helmv2.HelmReleaseList{}), "list helmreleases")
	authorized(g, op.Get(ctx, client.ObjectKey{Namespace: ns, Name: "absent"}, &helmv2.HelmRelease{}), "get helmreleases")
	authorized(g, op.Patch(ctx, &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "absent", Namespace: ns}}, client.RawPatch(types.MergePatchType, []byte(`{}`))), "patch helmreleases")

	// operator/internal/controller/bootstrap (bootstrap.enabled, the
	// default): the ObservabilityStack informer, Get and status patch; the
	// HelmRelease informer, server-side apply of the HelmReleases and the
	// HelmRepository, Delete of a removed component's HelmRelease.
	stack := &opsv1.ObservabilityStack{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns},
		Spec: opsv1.ObservabilityStackSpec{Components: []opsv1.StackComponent{{Name: "vmagent", Chart: "vmagent"}}}}
	g.Expect(admin.Create(ctx, stack)).To(Succeed())
	authorized(g, op.List(ctx, &opsv1.ObservabilityStackList{}), "list observabilitystacks")
	authorized(g, watchOnce(ctx, op, &opsv1.ObservabilityStackList{}), "watch observabilitystacks")
	authorized(g, op.Get(ctx, client.ObjectKeyFromObject(stack), &opsv1.ObservabilityStack{}), "get observabilitystack")
	authorized(g, op.Status().Patch(ctx, stack, client.RawPatch(types.MergePatchType, []byte(`{"status":{"observedGeneration":1}}`))), "patch observabilitystacks/status")
	authorized(g, watchOnce(ctx, op, &helmv2.HelmReleaseList{}), "watch helmreleases")
	hrApply := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
		"metadata": map[string]any{"name": "vmagent", "namespace": ns},
		"spec": map[string]any{"interval": "10m", "chart": map[string]any{"spec": map[string]any{
			"chart": "vmagent", "sourceRef": map[string]any{"kind": "HelmRepository", "name": "default-charts"}}}},
	}}
	authorized(g, op.Apply(ctx, client.ApplyConfigurationFromUnstructured(hrApply.DeepCopy()), client.FieldOwner("ops-operator"), client.ForceOwnership), "apply helmrelease")
	repoApply := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmRepository",
		"metadata": map[string]any{"name": "default-charts", "namespace": ns},
		"spec":     map[string]any{"interval": "10m", "url": "http://127.0.0.1:8089"},
	}}
	authorized(g, op.Apply(ctx, client.ApplyConfigurationFromUnstructured(repoApply.DeepCopy()), client.FieldOwner("ops-operator"), client.ForceOwnership), "apply helmrepository")
	authorized(g, op.Apply(ctx, client.ApplyConfigurationFromUnstructured(repoApply.DeepCopy()), client.FieldOwner("ops-operator"), client.ForceOwnership), "apply helmrepository again (patch)")
	authorized(g, op.Delete(ctx, &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "vmagent", Namespace: ns}}), "delete helmrelease")

	// Outside the needed set.
	other := env.NewNamespace(t)
	forbidden(g, op.DeleteAllOf(ctx, &corev1.Secret{}, client.InNamespace(other)), "delete secrets")
	forbidden(g, op.List(ctx, &corev1.SecretList{}), "list secrets cluster-wide")
	forbidden(g, op.List(ctx, &corev1.ConfigMapList{}), "list configmaps cluster-wide")
	forbidden(g, op.Get(ctx, client.ObjectKey{Namespace: other, Name: "x"}, &corev1.Secret{}), "get secrets outside the vmcluster namespace")
	forbidden(g, op.List(ctx, &batchv1.JobList{}), "list jobs")
	forbidden(g, op.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x-vmstorage-hold", Namespace: other}}), "create configmaps outside the vmcluster namespace")
	forbidden(g, op.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: other}}), "delete pods outside the vmcluster namespace")
	forbidden(g, op.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns}, Spec: pod.Spec}), "create pods")
	forbidden(g, op.Delete(ctx, node), "delete nodes (mock cloud disabled)")
	forbidden(g, op.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-new"}}), "create nodes (mock cloud disabled)")
	forbidden(g, op.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: other}}), "create leases in another namespace")
	forbidden(g, op.Patch(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "vmstorage-vm", Namespace: ns}}, client.RawPatch(types.MergePatchType, []byte(`{}`))), "patch statefulsets")
	forbidden(g, op.Delete(ctx, &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Name: "default-charts", Namespace: ns}}), "delete helmrepositories")
	forbidden(g, op.Patch(ctx, stack, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"allowDataRemoval":true}}`))), "patch of an ObservabilityStack's spec")
}

// leadOnce runs a client-go leader election until this client leads.
func leadOnce(ctx context.Context, cs kubernetes.Interface, ns, name string) error {
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, ns, name, cs.CoreV1(), cs.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: "e2e-deploy"})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	led := make(chan struct{})
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   15 * time.Second,
		RenewDeadline:   10 * time.Second,
		RetryPeriod:     200 * time.Millisecond,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { close(led) },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return err
	}
	done := make(chan struct{})
	runCtx, stop := context.WithCancel(ctx)
	go func() { le.Run(runCtx); close(done) }()
	select {
	case <-led:
		stop()
		<-done
		return nil
	case <-ctx.Done():
		stop()
		<-done
		return ctx.Err()
	}
}

// TestMockCloudRBAC runs the simulated cloud (operator/pkg/cloud/mock) as
// both binaries run it with the dev values — with an uncached client, as
// ops-operator's ServiceAccount creating, upgrading and deleting node groups
// (Node objects), and as ops-apiserver's reading them.
func TestMockCloudRBAC(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	in := install(t, nil, exampleValues(t)["values-dev.yaml"])
	ref := cloud.ClusterRef{Provider: cloud.Mock, Name: in.ns, Region: "local"}
	seed := &mock.Provider{Client: env.Client, Namespace: mockNamespace}
	g.Expect(seed.Seed(ctx, ref, mock.ClusterState{Version: "1.29", NodeGroups: map[string]*mock.NodeGroupState{"ng1": {Size: 1}}})).To(Succeed())
	t.Cleanup(func() {
		_ = env.Client.DeleteAllOf(context.Background(), &corev1.Node{}, client.MatchingLabels{mock.ClusterLabel: in.ns})
	})

	op := clientAs(t, in.ns, in.operatorSA())
	p := &mock.Provider{Client: op, Namespace: mockNamespace, OperationDuration: time.Millisecond}
	call := func(what string, fn func() (string, error)) {
		t.Helper()
		id, err := fn()
		g.Expect(err).NotTo(HaveOccurred(), what)
		g.Eventually(func(g Gomega) {
			st, err := p.PollOperation(ctx, ref, id)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st.State).To(Equal(cloud.OperationSucceeded), "%s: %s", what, st.Message)
		}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	}
	c, err := p.DescribeCluster(ctx, ref)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Version).To(Equal("1.29"))

	call("create node group", func() (string, error) {
		return p.StartCreateNodeGroup(ctx, ref, cloud.NodeGroup{Name: "ng2", Version: "1.29", DesiredSize: 2, MinSize: 1, MaxSize: 3}, "create-ng2")
	})
	groupNodes := func(group string) []corev1.Node {
		list := &corev1.NodeList{}
		g.Expect(env.Client.List(ctx, list, client.MatchingLabels{mock.ClusterLabel: in.ns, mock.NodeGroupLabel: group})).To(Succeed())
		return list.Items
	}
	g.Expect(groupNodes("ng2")).To(HaveLen(2))
	call("upgrade node group", func() (string, error) {
		return p.StartNodeGroupUpgrade(ctx, ref, "ng2", "1.30", "upgrade-ng2")
	})
	for _, n := range groupNodes("ng2") {
		g.Expect(n.Status.NodeInfo.KubeletVersion).To(Equal("v1.30"), n.Name)
	}
	call("delete node group", func() (string, error) {
		return p.StartDeleteNodeGroup(ctx, ref, "ng1", "delete-ng1")
	})
	g.Expect(groupNodes("ng1")).To(BeEmpty())

	// ops-apiserver's nodeGroups and addons endpoints read the same state.
	api := &mock.Provider{Client: clientAs(t, in.ns, in.serverSA()), Namespace: mockNamespace}
	groups, err := api.ListNodeGroups(ctx, ref)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(groups).To(HaveLen(1))
	g.Expect(groups[0].Name).To(Equal("ng2"))

	forbidden(g, op.List(ctx, &corev1.SecretList{}), "list secrets")
	// (Not in.ns: the vmcluster namespace, where restores write their hold
	// ConfigMap.)
	forbidden(g, op.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: env.NewNamespace(t)}}), "create configmaps outside the mock namespace")
	forbidden(g, clientAs(t, in.ns, in.serverSA()).Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: in.ns + "-api"}}), "create nodes as ops-apiserver")
}

// TestAPIServerRBACCoversItsCalls runs ops-apiserver's calls
// (apiserver/internal/vmclusters/store.go and app.go, the upgrade and backup
// APIs, TokenReview and SubjectAccessReview) as the ops-server
// ServiceAccount, then calls outside that set.
func TestAPIServerRBACCoversItsCalls(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	in := install(t, nil)
	ns := in.ns
	api := clientAs(t, ns, in.serverSA())
	admin := env.Client
	labels := map[string]string{"app.kubernetes.io/managed-by": "ops-server", "observability.tidbcloud.com/vmcluster": "vm1"}

	// HelmRelease: the informer (list, watch), Create, Get, JSON patch,
	// Delete with a UID precondition.
	authorized(g, api.List(ctx, &helmv2.HelmReleaseList{}, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/managed-by": "ops-server"}), "list helmreleases")
	// apiserver/internal/stacks: GET /bootstrap lists the ObservabilityStacks.
	authorized(g, api.List(ctx, &opsv1.ObservabilityStackList{}, client.InNamespace(ns)), "list observabilitystacks")
	authorized(g, watchOnce(ctx, api, &helmv2.HelmReleaseList{}, client.InNamespace(ns)), "watch helmreleases")
	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Name: "vm1", Namespace: ns, Labels: labels},
		Spec: helmv2.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: 10 * time.Minute},
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart: "vmcluster", Version: "0.1.0",
				SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "vm1"},
			}},
		},
	}
	authorized(g, api.Create(ctx, hr, client.FieldOwner("ops-server")), "create helmrelease")
	authorized(g, api.Get(ctx, client.ObjectKeyFromObject(hr), hr), "get helmrelease")
	authorized(g, api.Patch(ctx, hr, client.RawPatch(types.JSONPatchType, []byte(`[{"op":"test","path":"/metadata/uid","value":"`+string(hr.UID)+`"},{"op":"replace","path":"/spec/chart/spec/version","value":"0.1.1"}]`)), client.FieldOwner("ops-server")), "JSON-patch helmrelease")
	g.Expect(hr.Spec.Chart.Spec.Version).To(Equal("0.1.1"))

	// HelmRepository: server-side apply (create, then change), DeleteAllOf.
	repo := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": sourcev1.GroupVersion.String(), "kind": sourcev1.HelmRepositoryKind,
		"metadata": map[string]any{"name": "vm1", "namespace": ns, "labels": map[string]any{"app.kubernetes.io/managed-by": "ops-server", "observability.tidbcloud.com/vmcluster": "vm1"}},
		"spec":     map[string]any{"url": "http://127.0.0.1:8089", "interval": "10m"},
	}}
	authorized(g, api.Apply(ctx, client.ApplyConfigurationFromUnstructured(repo.DeepCopy()), client.FieldOwner("ops-server"), client.ForceOwnership), "apply (create) helmrepository")
	g.Expect(unstructured.SetNestedField(repo.Object, "5m", "spec", "interval")).To(Succeed())
	authorized(g, api.Apply(ctx, client.ApplyConfigurationFromUnstructured(repo.DeepCopy()), client.FieldOwner("ops-server"), client.ForceOwnership), "apply (change) helmrepository")
	gotRepo := &sourcev1.HelmRepository{}
	g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "vm1"}, gotRepo)).To(Succeed())
	g.Expect(gotRepo.Spec.Interval.Duration).To(Equal(5 * time.Minute))
	authorized(g, api.DeleteAllOf(ctx, &sourcev1.HelmRepository{}, client.InNamespace(ns), client.MatchingLabels(labels), client.PropagationPolicy(metav1.DeletePropagationBackground)), "deletecollection helmrepositories")
	g.Expect(apierrors.IsNotFound(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "vm1"}, gotRepo))).To(BeTrue())
	authorized(g, api.Delete(ctx, hr, client.Preconditions{UID: &hr.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground)), "delete helmrelease")

	// The upgrade and backup APIs.
	cuo := &opsv1.ClusterUpgradeOperation{
		ObjectMeta: metav1.ObjectMeta{Name: "up1", Namespace: ns},
		Spec:       opsv1.ClusterUpgradeOperationSpec{K8sClusterName: "c1", Region: "local", CloudProvider: "mock", TargetVersion: "1.30"},
	}
	authorized(g, api.Create(ctx, cuo.DeepCopy(), client.DryRunAll), "dry-run create clusterupgradeoperation")
	authorized(g, api.Create(ctx, cuo, client.FieldOwner("ops-server")), "create clusterupgradeoperation")
	authorized(g, api.Get(ctx, client.ObjectKeyFromObject(cuo), cuo), "get clusterupgradeoperation")
	authorized(g, api.List(ctx, &opsv1.ClusterUpgradeOperationList{}, client.InNamespace(ns)), "list clusterupgradeoperations")
	authorized(g, watchOnce(ctx, api, &opsv1.ClusterUpgradeOperationList{}, client.InNamespace(ns)), "watch clusterupgradeoperations")
	authorized(g, api.Patch(ctx, cuo, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"paused":true}}`)), client.FieldOwner("ops-server")), "pause (patch) clusterupgradeoperation")
	g.Expect(cuo.Spec.Paused).To(BeTrue())
	authorized(g, api.Delete(ctx, cuo), "delete clusterupgradeoperation")
	authorized(g, api.List(ctx, &opsv1.ClusterBackupList{}, client.InNamespace(ns)), "list clusterbackups")
	authorized(g, api.Get(ctx, client.ObjectKey{Namespace: ns, Name: "absent"}, &opsv1.ClusterBackup{}), "get clusterbackup")

	// restore_from (apiserver/internal/restores/seed.go): the new
	// vmcluster's hold ConfigMap, created (or its keys merged into a
	// left-over one) before the HelmRelease, read on a repeat.
	hold := opsv1.SeedHoldConfigMap(ns, "vm1", ns, 2)
	authorized(g, api.Create(ctx, hold, client.FieldOwner("ops-server")), "create the vmstorage hold configmap")
	authorized(g, api.Patch(ctx, hold, client.RawPatch(types.MergePatchType, []byte(`{"data":{"vmstorage-vm1-0":"x "}}`)), client.FieldOwner("ops-server")), "merge-patch the vmstorage hold configmap")
	authorized(g, api.Get(ctx, client.ObjectKeyFromObject(hold), hold), "get the vmstorage hold configmap")

	// Authentication and authorisation of REST callers.
	caller := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "caller", Namespace: ns}}
	g.Expect(admin.Create(ctx, caller)).To(Succeed())
	tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
	g.Expect(admin.SubResource("token").Create(ctx, caller, tr)).To(Succeed())
	review := &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: tr.Status.Token}}
	authorized(g, api.Create(ctx, review), "create tokenreview")
	g.Expect(review.Status.Authenticated).To(BeTrue())
	g.Expect(review.Status.User.Username).To(Equal("system:serviceaccount:" + ns + ":caller"))
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: review.Status.User.Username, Groups: review.Status.User.Groups,
		ResourceAttributes: &authzv1.ResourceAttributes{Group: apiPermissionGroup, Resource: "vmclusters", Verb: "create", Namespace: ns},
	}}
	authorized(g, api.Create(ctx, sar), "create subjectaccessreview")
	g.Expect(sar.Status.Allowed).To(BeFalse(), "the caller has no binding yet")

	// The troubleshooting API (apiserver/internal/troubleshoot): live
	// lists of the VMClusters, workloads, Pods and Services, the PVCs the
	// Pods mount, the Nodes' node group, logs and exec.
	vmcs := &unstructured.UnstructuredList{}
	vmcs.SetAPIVersion("operator.victoriametrics.com/v1beta1")
	vmcs.SetKind("VMClusterList")
	authorized(g, api.List(ctx, vmcs, client.InNamespace(ns)), "list vmclusters.operator.victoriametrics.com")
	for _, l := range []client.ObjectList{&appsv1.StatefulSetList{}, &appsv1.DeploymentList{}, &appsv1.ReplicaSetList{}, &corev1.PodList{}, &corev1.ServiceList{}} {
		authorized(g, api.List(ctx, l, client.InNamespace(ns)), fmt.Sprintf("list %T", l))
	}
	authorized(g, api.Get(ctx, client.ObjectKey{Namespace: ns, Name: "absent"}, &corev1.PersistentVolumeClaim{}), "get persistentvolumeclaim")
	authorized(g, api.Get(ctx, client.ObjectKey{Name: "absent"}, &corev1.Node{}), "get node")
	apiCS, err := kubernetes.NewForConfig(impersonate(in.ns, in.serverSA()))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = apiCS.CoreV1().Pods(ns).GetLogs("absent", &corev1.PodLogOptions{}).DoRaw(ctx)
	authorized(g, err, "get pods/log")
	err = apiCS.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name("absent").SubResource("exec").Param("command", "ls").Do(ctx).Error()
	authorized(g, err, "create pods/exec")
	err = apiCS.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name("absent").SubResource("portforward").Do(ctx).Error()
	authorized(g, err, "create pods/portforward")
	// apiserver/internal/events: the Events of a vmcluster's or an
	// upgrade's objects; of Nodes, in "default".
	for _, evNS := range []string{ns, "default"} {
		authorized(g, api.List(ctx, &corev1.EventList{}, client.InNamespace(evNS)), "list events in "+evNS)
	}

	// operator/pkg/preflight (POST /upgradeOperations/preflight), read
	// live: Nodes by node-group label, Pods by node (all namespaces), the
	// PodDisruptionBudgets of their namespaces, Helm's release Secrets in
	// the vmcluster namespace, the metadata of FlowSchemas and
	// PriorityLevelConfigurations.
	preflightReads(g, ctx, api, ns)

	// What the API-access roles grant: TestAPIAccessRolesMatchDocs.

	// Outside the needed set (of all three containers of the Pod).
	other := env.NewNamespace(t)
	forbidden(g, api.Create(ctx, &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: other}, Spec: hr.Spec}), "create helmreleases in another namespace")
	forbidden(g, api.Create(ctx, &opsv1.ClusterUpgradeOperation{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: other}, Spec: cuo.Spec}), "create clusterupgradeoperations in another namespace")
	forbidden(g, api.DeleteAllOf(ctx, &corev1.Secret{}, client.InNamespace(other)), "delete secrets in another namespace")
	forbidden(g, api.List(ctx, &corev1.SecretList{}), "list secrets cluster-wide")
	forbidden(g, api.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x-vmstorage-hold", Namespace: other}}), "create configmaps in another namespace")
	forbidden(g, api.Delete(ctx, hold), "delete the vmstorage hold configmap")
	forbidden(g, api.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}), "create pods")
	forbidden(g, api.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "escalate", Namespace: ns}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}}), "create rolebindings")
	// The helm-controller sidecar installs the stack's charts
	// (bootstrap.enabled) without any RBAC verb on cluster roles: the VM
	// operator's ClusterRole is the chart's (rbac-vm-operator.yaml).
	forbidden(g, api.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-escalate"}}), "create clusterroles")
	forbidden(g, api.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-escalate"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}}), "create clusterrolebindings")
	forbidden(g, api.Status().Patch(ctx, &opsv1.ClusterUpgradeOperation{ObjectMeta: metav1.ObjectMeta{Name: "up1", Namespace: ns}}, client.RawPatch(types.MergePatchType, []byte(`{"status":{}}`))), "patch clusterupgradeoperations/status (clients never write status)")
}

// TestAPIAccessRolesMatchDocs checks every row of docs/auth.md's
// permission table (which a test of apiserver/internal/app checks against
// the routes) against the chart's three API-access ClusterRoles: a role
// grants a row exactly when the row's lowest role is at or below it.
func TestAPIAccessRolesMatchDocs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	in := install(t, nil)
	root, err := render.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	doc, err := os.ReadFile(filepath.Join(root, "docs", "auth.md"))
	g.Expect(err).NotTo(HaveOccurred())
	rows := regexp.MustCompile("(?m)^\\| `[A-Z]+ [^`]+` \\| `([^`]+)` \\| `([^`]+)` \\| `([^`]+)` \\| (viewer|operator|admin) \\|$").FindAllStringSubmatch(string(doc), -1)
	g.Expect(len(rows)).To(BeNumerically(">=", 18), "the permission table of docs/auth.md")

	levels := []string{"viewer", "operator", "admin"}
	for _, role := range levels {
		g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "api-" + role, Namespace: in.ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: in.fullname + "-api-" + role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "team-" + role}},
		})).To(Succeed())
	}
	for _, row := range rows {
		op, resource, verb, lowest := row[1], row[2], row[3], slices.Index(levels, row[4])
		res, sub, _ := strings.Cut(resource, "/")
		for level, role := range levels {
			sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
				User: "someone", Groups: []string{"team-" + role},
				ResourceAttributes: &authzv1.ResourceAttributes{Group: apiPermissionGroup, Resource: res, Subresource: sub, Verb: verb, Namespace: in.ns},
			}}
			g.Expect(env.Client.Create(ctx, sar)).To(Succeed())
			g.Expect(sar.Status.Allowed).To(Equal(level >= lowest), "%s (%s %s) for the %s role", op, verb, resource, role)
		}
	}
}

// preflightReads makes the reads of operator/pkg/preflight as c: both
// ops-operator and ops-apiserver run them. vmns is the vmcluster
// namespace, the only one whose Secrets are listed.
func preflightReads(g Gomega, ctx context.Context, c client.Client, vmns string) {
	authorized(g, c.List(ctx, &corev1.NodeList{}, client.MatchingLabels{"test.ops/group": "absent"}), "list nodes by node-group label")
	authorized(g, c.List(ctx, &corev1.PodList{}, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("spec.nodeName", "absent")}), "list pods by node, all namespaces")
	authorized(g, c.List(ctx, &policyv1.PodDisruptionBudgetList{}, client.InNamespace("default")), "list poddisruptionbudgets in any namespace")
	authorized(g, c.List(ctx, &corev1.SecretList{}, client.InNamespace(vmns), client.MatchingLabels{"owner": "helm", "status": "deployed"}), "list Helm release secrets in the vmcluster namespace")
	for _, kind := range []string{"FlowSchemaList", "PriorityLevelConfigurationList"} {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Kind: kind})
		authorized(g, c.List(ctx, list), "list "+kind)
	}
	forbidden(g, c.List(ctx, &corev1.SecretList{}, client.InNamespace("default")), "list secrets outside the vmcluster namespace")
}
