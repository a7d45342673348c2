package troubleshoot

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/listing"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/ack"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/aks"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/eks"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/gke"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
)

// VMClusterGVK is the kind the vmcluster chart renders (the VM operator's
// VMCluster).
var VMClusterGVK = schema.GroupVersionKind{Group: "operator.victoriametrics.com", Version: "v1beta1", Kind: "VMCluster"}

// Helm's marks on the objects of a release.
const (
	annotationReleaseName      = "meta.helm.sh/release-name"
	annotationReleaseNamespace = "meta.helm.sh/release-namespace"
	labelManagedBy             = "app.kubernetes.io/managed-by"
	// LabelComponent is the VM operator's component label of a Pod.
	LabelComponent = "app.kubernetes.io/name"
)

// NodeGroupLabels are the Node labels naming a node group, one per
// supported cloud (operator/pkg/cloud providers' NodeGroupLabel).
var NodeGroupLabels = []string{eks.NodeGroupLabel, gke.NodeGroupLabel, aks.NodeGroupLabel, ack.NodeGroupLabel, mock.NodeGroupLabel}

// Reasons of the errors of this package.
const (
	ReasonPodNotFound       = "POD_NOT_FOUND"
	ReasonContainerNotFound = "CONTAINER_NOT_FOUND"
	ReasonCommandNotAllowed = "COMMAND_NOT_ALLOWED"
)

// VMClusters resolves a vmcluster id the way the vmclusters API does
// (*vmclusters.Service implements it).
type VMClusters interface {
	Get(ctx context.Context, id string) (vmclusters.VMCluster, error)
}

// Service decides. Reads go to the API server.
type Service struct {
	VMClusters VMClusters
	// HelmNamespace is the namespace of the vmclusters' HelmReleases and
	// HelmRepositories (the server's --namespace).
	HelmNamespace string
	// Reader reads the workloads live (not from the informer cache).
	Reader client.Reader
	// Clientset streams logs; RESTConfig builds exec connections.
	Clientset  kubernetes.Interface
	RESTConfig *rest.Config
	// Limits (config.TroubleshootConfig).
	MaxLogBytes        int64
	FollowMaxDuration  time.Duration
	ExecAllowed        []string
	ExecMaxOutputBytes int64
	// DiagnosticsLogLines and DiagnosticsMaxBytes bound a diagnostics
	// bundle (0: 500 lines, 64 MiB).
	DiagnosticsLogLines int64
	DiagnosticsMaxBytes int64
	// DefaultTimeout bounds a logs read without follow.
	DefaultTimeout time.Duration
	// Now is the clock (tests).
	Now func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// objects is everything of one vmcluster, read once per request.
type objects struct {
	vm        vmclusters.VMCluster
	namespace string
	vmcluster *unstructured.Unstructured
	sets      []appsv1.StatefulSet
	deploys   []appsv1.Deployment
	rsets     []appsv1.ReplicaSet
	services  []corev1.Service
	pods      []corev1.Pod
	pvcs      map[string]*corev1.PersistentVolumeClaim
}

// load resolves the vmcluster and reads its objects.
func (s *Service) load(ctx context.Context, id string, withServices bool) (*objects, error) {
	vm, err := s.VMClusters.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	o := &objects{vm: vm, namespace: vm.HelmReleaseInfo.ReleaseNamespace, pvcs: map[string]*corev1.PersistentVolumeClaim{}}
	if o.vmcluster, err = s.findVMCluster(ctx, vm); err != nil || o.vmcluster == nil {
		return o, err
	}
	in := client.InNamespace(o.namespace)
	var sets appsv1.StatefulSetList
	var deploys appsv1.DeploymentList
	var rsets appsv1.ReplicaSetList
	var pods corev1.PodList
	for _, l := range []client.ObjectList{&sets, &deploys, &rsets, &pods} {
		if err := s.Reader.List(ctx, l, in); err != nil {
			return nil, fmt.Errorf("listing %T in %s: %w", l, o.namespace, err)
		}
	}
	owner := o.vmcluster.GetUID()
	o.sets = filter(sets.Items, func(x *appsv1.StatefulSet) bool { return ownedBy(x, owner) })
	o.deploys = filter(deploys.Items, func(x *appsv1.Deployment) bool { return ownedBy(x, owner) })
	o.rsets = filter(rsets.Items, func(x *appsv1.ReplicaSet) bool {
		return slices.ContainsFunc(o.deploys, func(d appsv1.Deployment) bool { return ownedBy(x, d.UID) })
	})
	o.pods = filter(pods.Items, func(p *corev1.Pod) bool {
		return slices.ContainsFunc(o.sets, func(x appsv1.StatefulSet) bool { return ownedBy(p, x.UID) }) ||
			slices.ContainsFunc(o.rsets, func(x appsv1.ReplicaSet) bool { return ownedBy(p, x.UID) })
	})
	if !withServices {
		return o, nil
	}
	var svcs corev1.ServiceList
	if err := s.Reader.List(ctx, &svcs, in); err != nil {
		return nil, fmt.Errorf("listing Services in %s: %w", o.namespace, err)
	}
	o.services = filter(svcs.Items, func(x *corev1.Service) bool { return ownedBy(x, owner) })
	for _, p := range o.pods {
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim == nil || o.pvcs[v.PersistentVolumeClaim.ClaimName] != nil {
				continue
			}
			pvc := &corev1.PersistentVolumeClaim{}
			err := s.Reader.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: v.PersistentVolumeClaim.ClaimName}, pvc)
			switch {
			case apierrors.IsNotFound(err):
				pvc.Name, pvc.Namespace = v.PersistentVolumeClaim.ClaimName, p.Namespace
				pvc.Status.Phase = "Missing"
			case err != nil:
				return nil, fmt.Errorf("reading PersistentVolumeClaim %s/%s: %w", p.Namespace, v.PersistentVolumeClaim.ClaimName, err)
			}
			o.pvcs[pvc.Name] = pvc
		}
	}
	return o, nil
}

// findVMCluster returns the VMCluster Helm installed for the vmcluster's
// release (nil when there is none, or when the kind is not served).
func (s *Service) findVMCluster(ctx context.Context, vm vmclusters.VMCluster) (*unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(VMClusterGVK.GroupVersion().WithKind(VMClusterGVK.Kind + "List"))
	err := s.Reader.List(ctx, list, client.InNamespace(vm.HelmReleaseInfo.ReleaseNamespace), client.MatchingLabels{labelManagedBy: "Helm"})
	if apimeta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing VMClusters in %s: %w", vm.HelmReleaseInfo.ReleaseNamespace, err)
	}
	for i := range list.Items {
		a := list.Items[i].GetAnnotations()
		if a[annotationReleaseName] == vm.HelmReleaseInfo.ReleaseName && a[annotationReleaseNamespace] == vm.HelmReleaseInfo.ReleaseNamespace {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

func ownedBy(o metav1.Object, uid types.UID) bool {
	for _, r := range o.GetOwnerReferences() {
		if r.UID == uid {
			return true
		}
	}
	return false
}

func filter[T any](items []T, keep func(*T) bool) []T {
	var out []T
	for i := range items {
		if keep(&items[i]) {
			out = append(out, items[i])
		}
	}
	return out
}

// Tree returns the resource tree of a vmcluster.
func (s *Service) Tree(ctx context.Context, id string) (Tree, error) {
	o, err := s.load(ctx, id, true)
	if err != nil {
		return Tree{}, err
	}
	return s.tree(o), nil
}

// tree builds the resource tree of the objects of a vmcluster.
func (s *Service) tree(o *objects) Tree {
	h, r := releaseHealth(o.vm)
	root := Node{Kind: "HelmRelease", Name: o.vm.HelmReleaseInfo.ReleaseName, Namespace: o.namespace, UID: o.vm.ID, Health: h, HealthReason: r}
	if o.vmcluster == nil {
		root.Children = []Node{{Kind: VMClusterGVK.Kind, Name: o.vm.HelmReleaseInfo.ReleaseName, Namespace: o.namespace, Health: Missing,
			HealthReason: "no VMCluster carries the Helm release annotations of this release"}}
		return Tree{Root: root}
	}
	vh, vr := vmclusterHealth(o.vmcluster)
	vmNode := Node{Kind: VMClusterGVK.Kind, Name: o.vmcluster.GetName(), Namespace: o.namespace, UID: string(o.vmcluster.GetUID()), Health: vh, HealthReason: vr}
	podsOf := func(uid types.UID) []Node {
		var out []Node
		for i := range o.pods {
			p := &o.pods[i]
			if !ownedBy(p, uid) {
				continue
			}
			var pvcs []Node
			for _, v := range p.Spec.Volumes {
				if c := v.PersistentVolumeClaim; c != nil && o.pvcs[c.ClaimName] != nil {
					n := pvcNode(o.pvcs[c.ClaimName])
					if o.pvcs[c.ClaimName].Status.Phase == "Missing" {
						n.Health, n.HealthReason = Missing, "the Pod mounts it and it does not exist"
					}
					pvcs = append(pvcs, n)
				}
			}
			out = append(out, podNode(p, pvcs))
		}
		return out
	}
	for i := range o.sets {
		vmNode.Children = append(vmNode.Children, statefulSetNode(&o.sets[i], podsOf(o.sets[i].UID)))
	}
	for i := range o.deploys {
		d := &o.deploys[i]
		var rss []Node
		for j := range o.rsets {
			rs := &o.rsets[j]
			pods := podsOf(rs.UID)
			if ownedBy(rs, d.UID) && (len(pods) > 0 || (rs.Spec.Replicas != nil && *rs.Spec.Replicas > 0)) {
				rss = append(rss, replicaSetNode(rs, pods))
			}
		}
		vmNode.Children = append(vmNode.Children, deploymentNode(d, rss))
	}
	for i := range o.services {
		vmNode.Children = append(vmNode.Children, Node{Kind: "Service", Name: o.services[i].Name, Namespace: o.namespace, UID: string(o.services[i].UID), Health: Healthy})
	}
	root.Children = []Node{vmNode}
	return Tree{Root: root}
}

// Pods returns a page of the Pods of a vmcluster, by name.
func (s *Service) Pods(ctx context.Context, id string, pageSize int, after string) (PodList, error) {
	o, err := s.load(ctx, id, false)
	if err != nil {
		return PodList{}, err
	}
	compare, later := listing.ByName(func(p *corev1.Pod) string { return p.Name }, after)
	page, more := listing.Page(listing.Pointers(o.pods), compare, later, pageSize)
	out := PodList{Pods: make([]Pod, 0, len(page))}
	groups := map[string]string{}
	for _, p := range page {
		group, err := s.nodeGroup(ctx, p.Spec.NodeName, groups)
		if err != nil {
			return PodList{}, err
		}
		out.Pods = append(out.Pods, s.podView(p, group))
	}
	if more {
		out.NextPageToken = encodePageToken(page[len(page)-1].Name)
	}
	return out, nil
}

// nodeGroup reads the node group of a Node (cached per request in seen).
func (s *Service) nodeGroup(ctx context.Context, node string, seen map[string]string) (string, error) {
	if node == "" {
		return "", nil
	}
	if g, ok := seen[node]; ok {
		return g, nil
	}
	n := &corev1.Node{}
	err := s.Reader.Get(ctx, types.NamespacedName{Name: node}, n)
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		// A Node gone (or not readable) leaves the group unknown.
		seen[node] = ""
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading Node %s: %w", node, err)
	}
	for _, l := range NodeGroupLabels {
		if v := n.Labels[l]; v != "" {
			seen[node] = v
			return v, nil
		}
	}
	seen[node] = ""
	return "", nil
}

func (s *Service) podView(p *corev1.Pod, group string) Pod {
	h, r := PodHealth(p)
	v := Pod{Name: p.Name, Component: p.Labels[LabelComponent], Phase: string(p.Status.Phase), Node: p.Spec.NodeName, NodeGroup: group,
		CreateTime: p.CreationTimestamp.UTC().Format(time.RFC3339), AgeSeconds: int64(s.now().Sub(p.CreationTimestamp.Time).Seconds()),
		Health: h, Reason: r, Containers: []Container{}}
	for _, c := range p.Status.Conditions {
		v.Ready = v.Ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
	}
	for _, cs := range p.Status.ContainerStatuses {
		c := Container{Name: cs.Name, Ready: cs.Ready, Restarts: cs.RestartCount}
		v.Restarts += cs.RestartCount
		switch {
		case cs.State.Running != nil:
			c.State = "running"
		case cs.State.Waiting != nil:
			c.State, c.StateReason = "waiting", cs.State.Waiting.Reason
		case cs.State.Terminated != nil:
			c.State, c.StateReason = "terminated", cs.State.Terminated.Reason
		default:
			c.State = "waiting"
		}
		if t := cs.LastTerminationState.Terminated; t != nil {
			c.LastTermination = &Termination{Reason: t.Reason, ExitCode: t.ExitCode}
			if !t.FinishedAt.IsZero() {
				c.LastTermination.FinishedAt = t.FinishedAt.UTC().Format(time.RFC3339)
			}
		}
		v.Containers = append(v.Containers, c)
	}
	return v
}

// pod returns a Pod of the vmcluster and the container a request names
// (the Pod's first container, or its kubectl.kubernetes.io/default-container,
// when empty). A Pod that is not part of the vmcluster is a 404 whatever
// exists elsewhere.
func (s *Service) pod(ctx context.Context, id, name, container string) (*corev1.Pod, string, error) {
	o, err := s.load(ctx, id, false)
	if err != nil {
		return nil, "", err
	}
	i := slices.IndexFunc(o.pods, func(p corev1.Pod) bool { return p.Name == name })
	if i < 0 {
		return nil, "", apierror.NotFound(ReasonPodNotFound, "vmcluster %q has no Pod %q", o.vm.HelmReleaseInfo.ReleaseName, truncate(name, 80)).
			WithMetadata("pod", truncate(name, 80))
	}
	p := &o.pods[i]
	if container == "" {
		container = p.Annotations["kubectl.kubernetes.io/default-container"]
	}
	if container == "" && len(p.Spec.Containers) > 0 {
		container = p.Spec.Containers[0].Name
	}
	if !slices.ContainsFunc(p.Spec.Containers, func(c corev1.Container) bool { return c.Name == container }) {
		return nil, "", apierror.InvalidArgument("the container does not exist", apierror.Violation("container", "Pod %s has no container %q", p.Name, truncate(container, 80))).
			WithReason(ReasonContainerNotFound)
	}
	return p, container, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// RequestTimeout bounds a request that is not long-running (the server's
// --request-timeout, which does not apply to the logs and exec routes).
func (s *Service) RequestTimeout() time.Duration {
	if s.DefaultTimeout > 0 {
		return s.DefaultTimeout
	}
	return 30 * time.Second
}
