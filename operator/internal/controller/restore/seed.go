package restore

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/skeleton"
	"github.com/tidbcloud/ops-server/operator/internal/vmstorage"
)

// unholdTemplate lifts the hold a vmcluster created from a backup by an
// earlier release started with (opsv1.RestoreHoldPostRenderer; new ones
// are pre-held in the hold ConfigMap, opsv1.SeedHoldConfigMap), when it
// names this restore: first
// the post-renderer on the owning HelmRelease (so no later Helm render
// puts it back), then the annotation in the VMCluster's
// spec.vmstorage.podMetadata (vm-operator then rolls the vmstorage Pods,
// which start on their restored volumes). Both writes are idempotent; a
// VMCluster whose template holds nothing, or another restore's hold, is
// left alone.
func (r *Reconciler) unholdTemplate(ctx context.Context, rs *opsv1.ClusterRestore) error {
	ns, name := rs.VMClusterKey(nil)
	if name == "" {
		// The backup's VMCluster (claim checked it is in this namespace).
		b := &opsv1.ClusterBackup{}
		if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: rs.Namespace, Name: rs.Spec.Backup}, b); err != nil {
			return client.IgnoreNotFound(err)
		}
		ns, name = rs.VMClusterKey(b)
	}
	vmc := &unstructured.Unstructured{}
	vmc.SetGroupVersionKind(vmstorage.VMClusterGVK)
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, vmc); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			// No VMCluster (or no vm-operator CRD): nothing is held.
			return nil
		}
		return fmt.Errorf("getting VMCluster %s/%s: %w", ns, name, err)
	}
	held, _, _ := unstructured.NestedString(vmc.Object, "spec", "vmstorage", "podMetadata", "annotations", HoldAnnotation)
	if held != r.owner(rs) {
		// Not seeded by this restore, or lifted already (a Helm render
		// after the post-renderer was removed drops the annotation too).
		return nil
	}
	hr, err := vmstorage.OwningHelmRelease(ctx, r.APIReader, vmc)
	if err != nil {
		return err
	}
	if hr != nil {
		if err := r.removeHoldPostRenderer(ctx, client.ObjectKeyFromObject(hr), name); err != nil {
			return err
		}
	}
	raw, _ := json.Marshal(map[string]any{"spec": map[string]any{"vmstorage": map[string]any{"podMetadata": map[string]any{
		"annotations": map[string]any{HoldAnnotation: nil},
	}}}})
	if err := r.Client.Patch(ctx, vmc, client.RawPatch(types.MergePatchType, raw), client.FieldOwner(skeleton.FieldOwner)); err != nil {
		return fmt.Errorf("removing the vmstorage hold from VMCluster %s/%s: %w", ns, name, err)
	}
	r.event(rs, "Normal", "HoldLifted", "The vmstorage of the new VMCluster %s/%s is no longer held: it starts on the restored data", ns, name)
	return nil
}

// removeHoldPostRenderer deletes the restore-hold post-renderer of the
// VMCluster vmcluster from the HelmRelease hrKey (nothing when absent); the
// write carries the resourceVersion it was computed from.
func (r *Reconciler) removeHoldPostRenderer(ctx context.Context, hrKey types.NamespacedName, vmcluster string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		hr := &unstructured.Unstructured{}
		hr.SetGroupVersionKind(vmstorage.HelmReleaseGVK)
		if err := r.APIReader.Get(ctx, hrKey, hr); err != nil {
			return client.IgnoreNotFound(err)
		}
		renderers, _, err := unstructured.NestedSlice(hr.Object, "spec", "postRenderers")
		if err != nil {
			return fmt.Errorf("reading spec.postRenderers: %w", err)
		}
		kept := make([]any, 0, len(renderers))
		for _, e := range renderers {
			if !opsv1.IsRestoreHoldPostRenderer(e, vmcluster) {
				kept = append(kept, e)
			}
		}
		if len(kept) == len(renderers) {
			return nil
		}
		var value any = kept
		if len(kept) == 0 {
			value = nil
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": hr.GetResourceVersion()},
			"spec":     map[string]any{"postRenderers": value},
		})
		if err != nil {
			return err
		}
		return r.Client.Patch(ctx, hr, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(skeleton.FieldOwner))
	})
	if err != nil {
		return fmt.Errorf("removing the restore hold from HelmRelease %s: %w", hrKey, err)
	}
	return nil
}
