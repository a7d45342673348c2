package vmstorage

// Why the overlay is also written to the HelmRelease
//
// A VMStorage rollout merge-patches the VMCluster's spec. When a Flux
// HelmRelease installs that VMCluster, the next Helm upgrade (a PUT of the
// vmcluster's values, a chart upgrade, a drift correction) renders the
// VMCluster from the chart again and would put vmstorage back where the
// values say: on the old node group, which the upgrade deletes. So the
// rollout records the same overlay on the HelmRelease as a Kustomize
// post-renderer patch (spec.postRenderers[].kustomize.patches), which Flux
// applies to every later render.
//
// Order: the HelmRelease is patched first, the VMCluster second. A crash
// between the two leaves the overlay recorded but not yet applied (Flux
// applies it at its next reconcile, and the operator's retry of the step
// patches the VMCluster); the other order could leave a moved VMCluster
// that the next Helm upgrade moves back. Both writes are idempotent: the
// recorded overlay is merged with what an earlier rollout recorded (the same
// result as merge-patching the VMCluster twice), and nothing is written when
// it already holds the overlay.
//
// Flux's PostRenderer has no name; the entry ops-server owns is the one
// whose patch starts with the line PostRendererMarker. Deleting that entry
// removes the overlay (docs/upgrades.md).

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PostRendererMarker is the first line of the post-renderer patch that
// ops-server records on a HelmRelease; it identifies the entry.
const PostRendererMarker = "# ops-server-vmstorage-rollout"

// Labels and annotations that name the release an object was installed by.
const (
	// FluxNameLabel and FluxNamespaceLabel are set by Flux's helm-controller
	// on every object of a HelmRelease.
	FluxNameLabel      = "helm.toolkit.fluxcd.io/name"
	FluxNamespaceLabel = "helm.toolkit.fluxcd.io/namespace"
	// HelmReleaseNameAnnotation and HelmReleaseNamespaceAnnotation are set
	// by Helm on every object of a release.
	HelmReleaseNameAnnotation      = "meta.helm.sh/release-name"
	HelmReleaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
)

// HelmReleaseGVK is the Flux HelmRelease kind the overlay is recorded on.
var HelmReleaseGVK = schema.GroupVersionKind{Group: "helm.toolkit.fluxcd.io", Version: "v2", Kind: "HelmRelease"}

func newHelmRelease() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(HelmReleaseGVK)
	return u
}

// OwningHelmRelease finds the Flux HelmRelease that installed vmc: the one
// its Flux labels name, else the one whose Helm release the Helm
// annotations name (a HelmRelease's release name is spec.releaseName, or
// [targetNamespace-]name). It returns nil when there is none: the VMCluster
// is not installed by Flux.
func OwningHelmRelease(ctx context.Context, r client.Reader, vmc *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	labels, annotations := vmc.GetLabels(), vmc.GetAnnotations()
	if name, ns := labels[FluxNameLabel], labels[FluxNamespaceLabel]; name != "" && ns != "" {
		hr := newHelmRelease()
		err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, hr)
		if err == nil {
			return hr, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("getting HelmRelease %s/%s of VMCluster %s/%s: %w", ns, name, vmc.GetNamespace(), vmc.GetName(), err)
		}
	}
	release := annotations[HelmReleaseNameAnnotation]
	if release == "" {
		return nil, nil
	}
	releaseNS := annotations[HelmReleaseNamespaceAnnotation]
	if releaseNS == "" {
		releaseNS = vmc.GetNamespace()
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(HelmReleaseGVK.GroupVersion().WithKind("HelmReleaseList"))
	if err := r.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing HelmReleases: %w", err)
	}
	for i := range list.Items {
		hr := &list.Items[i]
		target, _, _ := unstructured.NestedString(hr.Object, "spec", "targetNamespace")
		name, _, _ := unstructured.NestedString(hr.Object, "spec", "releaseName")
		ns := hr.GetNamespace()
		if target != "" {
			ns = target
		}
		if name == "" {
			name = hr.GetName()
			if target != "" {
				name = target + "-" + name
			}
		}
		if name == release && ns == releaseNS {
			return hr, nil
		}
	}
	return nil, nil
}

// RecordOverlay merges specOverlay (a JSON object, a partial VMCluster
// spec) into the post-renderer patch ops-server keeps on hr for the
// VMCluster vmcluster (adding the entry when there is none), so that every
// later Helm render of the VMCluster carries it. It reports whether it
// changed the HelmRelease. Other post-renderers are kept as they are; the
// write carries the resourceVersion it was computed from (a conflict reads
// again and retries).
func RecordOverlay(ctx context.Context, c client.Client, hrKey types.NamespacedName, vmcluster string, specOverlay []byte) (bool, error) {
	overlay, err := parseOverlay(specOverlay)
	if err != nil || overlay == nil {
		return false, err
	}
	var add map[string]any
	if err := json.Unmarshal(overlay, &add); err != nil {
		return false, err
	}
	changed := false
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		hr := newHelmRelease()
		if err := c.Get(ctx, hrKey, hr); err != nil {
			return err
		}
		renderers, _, err := unstructured.NestedSlice(hr.Object, "spec", "postRenderers")
		if err != nil {
			return fmt.Errorf("reading spec.postRenderers: %w", err)
		}
		idx, recorded := findRecorded(renderers, vmcluster)
		merged := mergePatches(recorded, add)
		if idx >= 0 && reflect.DeepEqual(merged, recorded) {
			changed = false
			return nil
		}
		entry, err := postRenderer(vmcluster, merged)
		if err != nil {
			return err
		}
		if idx >= 0 {
			renderers[idx] = entry
		} else {
			renderers = append(renderers, entry)
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": hr.GetResourceVersion()},
			"spec":     map[string]any{"postRenderers": renderers},
		})
		if err != nil {
			return err
		}
		if err := c.Patch(ctx, hr, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldOwner)); err != nil {
			return err
		}
		changed = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("recording the vmstorage overlay on HelmRelease %s: %w", hrKey, err)
	}
	return changed, nil
}

// RecordedOverlay returns the VMCluster spec overlay recorded for the
// VMCluster named vmcluster in the post-renderers of hr, or nil.
func RecordedOverlay(hr *unstructured.Unstructured, vmcluster string) map[string]any {
	renderers, _, _ := unstructured.NestedSlice(hr.Object, "spec", "postRenderers")
	_, spec := findRecorded(renderers, vmcluster)
	return spec
}

// findRecorded finds ops-server's entry for vmcluster among renderers: its
// index (-1 when absent) and the spec its patch sets.
func findRecorded(renderers []any, vmcluster string) (int, map[string]any) {
	for i, r := range renderers {
		m, _ := r.(map[string]any)
		patches, _, _ := unstructured.NestedSlice(m, "kustomize", "patches")
		for _, p := range patches {
			pm, _ := p.(map[string]any)
			text, _, _ := unstructured.NestedString(pm, "patch")
			name, _, _ := unstructured.NestedString(pm, "target", "name")
			if name != vmcluster || !strings.HasPrefix(text, PostRendererMarker+"\n") {
				continue
			}
			var doc struct {
				Spec map[string]any `json:"spec"`
			}
			// The patch after the marker line is JSON (which is YAML).
			_ = json.Unmarshal([]byte(strings.TrimPrefix(text, PostRendererMarker+"\n")), &doc)
			return i, doc.Spec
		}
	}
	return -1, nil
}

// postRenderer is ops-server's post-renderer entry for vmcluster: one
// Kustomize patch of the VMCluster's spec (a strategic merge patch, which
// for a custom resource merges objects and replaces lists as a JSON merge
// patch does).
func postRenderer(vmcluster string, spec map[string]any) (map[string]any, error) {
	doc, err := json.Marshal(map[string]any{
		"apiVersion": VMClusterGVK.GroupVersion().String(),
		"kind":       VMClusterGVK.Kind,
		"metadata":   map[string]any{"name": vmcluster},
		"spec":       spec,
	})
	if err != nil {
		return nil, err
	}
	return map[string]any{"kustomize": map[string]any{"patches": []any{map[string]any{
		"target": map[string]any{
			"group": VMClusterGVK.Group, "version": VMClusterGVK.Version, "kind": VMClusterGVK.Kind, "name": vmcluster,
		},
		"patch": PostRendererMarker + "\n" + string(doc),
	}}}}, nil
}

// mergePatches combines two JSON merge patches into one with the effect of
// applying base, then add (RFC 7386): objects merge, anything else in add
// replaces, and a null in add is kept (it deletes the field).
func mergePatches(base, add map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(add))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range add {
		bm, ok1 := out[k].(map[string]any)
		am, ok2 := v.(map[string]any)
		if ok1 && ok2 {
			out[k] = mergePatches(bm, am)
			continue
		}
		out[k] = v
	}
	return out
}
