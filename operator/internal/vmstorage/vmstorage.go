// Package vmstorage changes a VictoriaMetrics VMCluster and observes the
// rollout of its vmstorage StatefulSet. The VictoriaMetrics operator owns
// that StatefulSet (and, with its default OnDelete update strategy, evicts
// the pods itself): this package never writes the StatefulSet or its pods,
// it only patches the VMCluster's spec and reads.
//
// # Why unstructured, not the VictoriaMetrics operator's API types
//
// The VMCluster is handled as an unstructured.Unstructured of
// operator.victoriametrics.com/v1beta1, Kind VMCluster, not with the Go
// types of github.com/VictoriaMetrics/operator/api. Those types were tried
// (v0.74.1, the version that builds with our Kubernetes libraries) and do
// build, but:
//
//   - the module requires go >= 1.26.5, which `go get` propagates to the go
//     directive of go.work and, through `go mod tidy`, of every module that
//     requires this one (apiserver, e2e), and it raises shared dependencies
//     there (k8s.io/utils, gnostic-models, fsnotify, genproto);
//   - its v1beta1 package pulls ~1000 packages (aws-sdk, kafka, alertmanager,
//     VictoriaMetrics libs): a cold build of it alone took over ten minutes
//     here, and the binary grows by ~37 MB;
//   - VictoriaMetrics libs register ~100 flags on the global flag.CommandLine
//     at init (-tls, -version, -loggerLevel, …), a trap for every binary and
//     test that imports this package;
//   - all this buys typed access to three fields (metadata.generation,
//     status.observedGeneration, status.updateStatus): the change itself is
//     an opaque JSON object from the user (vmClusterHelmValues) merged into
//     spec, which the types cannot check any better than the CRD's schema
//     does on the API server;
//   - and unstructured does not tie us to one VM operator release: a
//     customer's VMCluster written by a newer operator, with fields our
//     pinned types do not know or type differently, is still read and
//     patched as is.
//
// The CRD comes from the VM operator's module all the same: `make
// manifests` copies the VMCluster CRD of github.com/VictoriaMetrics/operator
// v0.74.1 into crds/, so tests validate against the real schema.
package vmstorage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldOwner is the field manager of the writes this package makes.
const FieldOwner = "ops-operator"

// VMClusterGVK is the group, version and kind of a VictoriaMetrics VMCluster.
var VMClusterGVK = schema.GroupVersionKind{Group: "operator.victoriametrics.com", Version: "v1beta1", Kind: "VMCluster"}

// UpdateStatusOperational is the VMCluster status.updateStatus of a cluster
// the VM operator has finished reconciling. The others are "expanding",
// "failed" (can be transient), "paused" and "ignored".
const UpdateStatusOperational = "operational"

// NewVMCluster returns an empty unstructured VMCluster, to Get into.
func NewVMCluster() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(VMClusterGVK)
	return u
}

// PatchVMCluster merges specOverlay, a JSON object, into the spec of the
// VMCluster key with a JSON merge patch {"spec": specOverlay} (objects
// merge, lists are replaced, null deletes a field; VMCluster is a custom
// resource and does not support strategic merge patch). It returns the
// VMCluster's metadata.generation after the patch and whether the patch
// changed the spec, that is bumped the generation. An empty overlay, or one
// the spec already contains, changes nothing.
//
// The patch carries the resourceVersion that the generation before it was
// read at, so "changed" is exact even when someone else writes the
// VMCluster at the same time (a conflict reads again and retries).
func PatchVMCluster(ctx context.Context, c client.Client, key types.NamespacedName, specOverlay []byte) (generation int64, changed bool, err error) {
	overlay, err := parseOverlay(specOverlay)
	if err != nil {
		return 0, false, err
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := NewVMCluster()
		if err := c.Get(ctx, key, cur); err != nil {
			return err
		}
		if overlay == nil {
			generation, changed = cur.GetGeneration(), false
			return nil
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": cur.GetResourceVersion()},
			"spec":     overlay,
		})
		if err != nil {
			return err
		}
		out := NewVMCluster()
		out.SetNamespace(key.Namespace)
		out.SetName(key.Name)
		if err := c.Patch(ctx, out, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldOwner)); err != nil {
			return err
		}
		generation, changed = out.GetGeneration(), out.GetGeneration() != cur.GetGeneration()
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("patching the spec of VMCluster %s: %w", key, err)
	}
	return generation, changed, nil
}

// parseOverlay checks that overlay is a JSON object; an empty one (no bytes
// or {}) gives nil. Anything else — null in particular, which would delete
// the whole spec — is an error.
func parseOverlay(overlay []byte) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(overlay)
	if len(trimmed) == 0 {
		return nil, nil
	}
	var obj map[string]json.RawMessage
	if trimmed[0] != '{' || json.Unmarshal(trimmed, &obj) != nil {
		return nil, fmt.Errorf("VMCluster spec overlay must be a JSON object, got %.64q", trimmed)
	}
	if len(obj) == 0 {
		return nil, nil
	}
	return json.RawMessage(trimmed), nil
}

// Rollout is what RolloutStatus observed.
type Rollout struct {
	// VMClusterOperational: the VM operator has reconciled the VMCluster's
	// current generation, and at least the minimum one asked for
	// (status.observedGeneration >= both), and reports it "operational".
	VMClusterOperational bool
	// StatefulSetRolledOut: the StatefulSet controller has observed the
	// StatefulSet's generation, and every replica runs the update revision
	// and is ready (status.replicas == updatedReplicas == readyReplicas ==
	// spec.replicas), and the current revision is the update revision —
	// except with the OnDelete update strategy, see RolloutStatus.
	StatefulSetRolledOut bool
	// PodsOnOldNodes are the names of the StatefulSet's pods (selected by
	// its spec.selector) whose Node does not carry the label
	// nodeGroupLabel=newGroup, or that are not bound to a Node, or whose
	// Node no longer exists. Sorted. Empty when no label was given.
	PodsOnOldNodes []string
	// Done: operational, rolled out and, when placement is required, no
	// pod left on old Nodes.
	Done bool
	// Message is a human summary: what is still pending ("; "-separated),
	// or what was reached when Done.
	Message string
}

// RolloutStatus reports whether the change that produced generation
// minGeneration of the VMCluster has rolled out to the vmstorage
// StatefulSet sts: the VMCluster is operational at that generation, the
// StatefulSet has rolled out, and — when requirePlacement — every
// vmstorage pod runs on a Node labelled nodeGroupLabel=newGroup. It only
// reads; use the manager's APIReader for fresh objects. A VMCluster that
// does not exist is an error; a StatefulSet that does not exist (yet) is
// reported as pending.
//
// How revisions are judged. The StatefulSet controller initialises
// status.currentRevision to the update revision on its first sync, so an
// empty currentRevision only means "not synced yet" and is never taken as
// rolled out. With the RollingUpdate strategy the controller promotes
// currentRevision to updateRevision once every replica is updated and
// ready. With OnDelete — the VM operator's default for vmstorage — it did
// not before Kubernetes 1.36 (kubernetes/kubernetes#73492, fixed by #136833):
// currentRevision kept the old revision for ever, and the VM operator
// patches it itself at the end of its own rolling update
// (VictoriaMetrics/operator#1242, in v0.74.1 patchSTSCurrentRevision). So
// for OnDelete a stale currentRevision is accepted when all replicas are
// updated (updatedReplicas counts the pods whose controller-revision-hash
// is the update revision) and ready.
func RolloutStatus(ctx context.Context, c client.Reader, vmcluster types.NamespacedName, minGeneration int64, sts types.NamespacedName, nodeGroupLabel, newGroup string, requirePlacement bool) (*Rollout, error) {
	if requirePlacement && (nodeGroupLabel == "" || newGroup == "") {
		return nil, fmt.Errorf("placement of the vmstorage pods required, but node group label %q or node group %q is empty", nodeGroupLabel, newGroup)
	}
	ro := &Rollout{}
	var pending, reached []string

	vmc := NewVMCluster()
	if err := c.Get(ctx, vmcluster, vmc); err != nil {
		return nil, fmt.Errorf("getting VMCluster %s: %w", vmcluster, err)
	}
	msg, ok := vmclusterState(vmc, minGeneration)
	ro.VMClusterOperational = ok
	if ok {
		reached = append(reached, msg)
	} else {
		pending = append(pending, msg)
	}

	set := &appsv1.StatefulSet{}
	switch err := c.Get(ctx, sts, set); {
	case apierrors.IsNotFound(err):
		pending = append(pending, fmt.Sprintf("StatefulSet %s does not exist", sts))
		set = nil
	case err != nil:
		return nil, fmt.Errorf("getting StatefulSet %s: %w", sts, err)
	default:
		msg, ok := statefulSetState(set)
		ro.StatefulSetRolledOut = ok
		if ok {
			reached = append(reached, msg)
		} else {
			pending = append(pending, msg)
		}
	}

	if set != nil && nodeGroupLabel != "" && newGroup != "" {
		old, total, err := podsOnOldNodes(ctx, c, set, nodeGroupLabel, newGroup)
		if err != nil {
			return nil, err
		}
		for _, p := range old {
			ro.PodsOnOldNodes = append(ro.PodsOnOldNodes, p.name)
		}
		switch {
		case len(old) > 0:
			where := make([]string, 0, len(old))
			for _, p := range old {
				where = append(where, p.name+" ("+p.where+")")
			}
			msg := fmt.Sprintf("%d/%d vmstorage pods not on node group %s: %s", len(old), total, newGroup, strings.Join(where, ", "))
			if requirePlacement {
				pending = append(pending, msg)
			}
		case requirePlacement:
			reached = append(reached, fmt.Sprintf("all %d vmstorage pods on node group %s", total, newGroup))
		}
	} else if requirePlacement && set == nil {
		pending = append(pending, fmt.Sprintf("vmstorage pods not on node group %s yet", newGroup))
	}

	ro.Done = ro.VMClusterOperational && ro.StatefulSetRolledOut && (!requirePlacement || (set != nil && len(ro.PodsOnOldNodes) == 0))
	if ro.Done {
		ro.Message = strings.Join(reached, "; ")
	} else {
		ro.Message = strings.Join(pending, "; ")
	}
	return ro, nil
}

// vmclusterState tells whether the VM operator has rolled out generation
// minGeneration (and the current one) of vmc, with a message either way.
func vmclusterState(vmc *unstructured.Unstructured, minGeneration int64) (string, bool) {
	name := vmc.GetNamespace() + "/" + vmc.GetName()
	generation := vmc.GetGeneration()
	observed, _, _ := unstructured.NestedInt64(vmc.Object, "status", "observedGeneration")
	status, _, _ := unstructured.NestedString(vmc.Object, "status", "updateStatus")
	reason, _, _ := unstructured.NestedString(vmc.Object, "status", "reason")
	want := max(generation, minGeneration)
	switch {
	case observed < want:
		return fmt.Sprintf("VMCluster %s: the VictoriaMetrics operator has not reconciled generation %d yet (observed %d)", name, want, observed), false
	case status == "":
		return fmt.Sprintf("VMCluster %s has no update status yet", name), false
	case status != UpdateStatusOperational:
		msg := fmt.Sprintf("VMCluster %s is %s", name, status)
		if reason != "" {
			msg += ": " + reason
		}
		return msg, false
	}
	return fmt.Sprintf("VMCluster %s is operational at generation %d", name, observed), true
}

// statefulSetState tells whether set has rolled out, with a message either
// way; see RolloutStatus for how revisions are judged.
func statefulSetState(set *appsv1.StatefulSet) (string, bool) {
	name := set.Namespace + "/" + set.Name
	want := int32(1)
	if set.Spec.Replicas != nil {
		want = *set.Spec.Replicas
	}
	st := set.Status
	onDelete := set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType
	switch {
	case st.ObservedGeneration < set.Generation:
		return fmt.Sprintf("StatefulSet %s: the StatefulSet controller has not observed generation %d yet (observed %d)", name, set.Generation, st.ObservedGeneration), false
	case st.UpdateRevision == "":
		return fmt.Sprintf("StatefulSet %s has no update revision yet", name), false
	case st.Replicas != want || st.UpdatedReplicas != want || st.ReadyReplicas != want:
		return fmt.Sprintf("StatefulSet %s: %d/%d replicas updated to revision %s, %d ready, %d exist", name, st.UpdatedReplicas, want, st.UpdateRevision, st.ReadyReplicas, st.Replicas), false
	case st.CurrentRevision != st.UpdateRevision && !onDelete:
		return fmt.Sprintf("StatefulSet %s: current revision %s is not the update revision %s yet", name, st.CurrentRevision, st.UpdateRevision), false
	}
	return fmt.Sprintf("StatefulSet %s rolled out to revision %s (%d/%d ready)", name, st.UpdateRevision, st.ReadyReplicas, want), true
}

// oldPod is a pod not (yet) on the new node group, and where it is.
type oldPod struct{ name, where string }

// podsOnOldNodes lists the pods of set and returns the ones not on a Node
// labelled label=group, sorted by name, and the number of pods.
func podsOnOldNodes(ctx context.Context, c client.Reader, set *appsv1.StatefulSet, label, group string) ([]oldPod, int, error) {
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil {
		return nil, 0, fmt.Errorf("selector of StatefulSet %s/%s: %w", set.Namespace, set.Name, err)
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(set.Namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, 0, fmt.Errorf("listing the pods of StatefulSet %s/%s: %w", set.Namespace, set.Name, err)
	}
	onNew := map[string]bool{}
	var old []oldPod
	for _, pod := range pods.Items {
		node := pod.Spec.NodeName
		if node == "" {
			old = append(old, oldPod{pod.Name, "not scheduled"})
			continue
		}
		isNew, seen := onNew[node]
		if !seen {
			n := &corev1.Node{}
			switch err := c.Get(ctx, client.ObjectKey{Name: node}, n); {
			case apierrors.IsNotFound(err):
				isNew = false
			case err != nil:
				return nil, 0, fmt.Errorf("getting node %s of pod %s/%s: %w", node, pod.Namespace, pod.Name, err)
			default:
				isNew = n.Labels[label] == group
			}
			onNew[node] = isNew
		}
		if !isNew {
			old = append(old, oldPod{pod.Name, "node " + node})
		}
	}
	slices.SortFunc(old, func(a, b oldPod) int { return strings.Compare(a.name, b.name) })
	return old, len(pods.Items), nil
}
