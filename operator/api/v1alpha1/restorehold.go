package v1alpha1

import (
	"encoding/json"
	"strings"
)

// An earlier release of ops-server held a vmcluster created from a backup
// with a HelmRelease post-renderer setting VMStorageHoldAnnotation in the
// VMCluster's spec.vmstorage.podMetadata, naming its seeding ClusterRestore
// (SeedRestoreName); nothing honours that annotation any more. New
// vmclusters are pre-held in their hold ConfigMap (SeedHoldConfigMap,
// seedhold.go). The post-renderer helpers stay so that the seeding restore
// of such an existing vmcluster still removes the post-renderer and the
// annotation once it succeeded (restore/seed.go).

// VMStorageHoldAnnotation on a vmstorage Pod asks for its vmstorage to be
// stopped and kept stopped; its value names the ClusterRestore holding it
// ("<namespace>/<name>").
const VMStorageHoldAnnotation = "ops.observability.tidbcloud.com/vmstorage-hold"

// RestoreHoldMarker is the first line of the post-renderer patch that
// holds a new VMCluster's vmstorage until its seeding restore finished.
const RestoreHoldMarker = "# ops-server-restore-hold"

// SeedRestoreName is the name of the ClusterRestore that seeds the new
// vmcluster vmcluster from a backup.
func SeedRestoreName(vmcluster string) string { return "seed-" + vmcluster }

// RestoreHoldPostRenderer is the Flux HelmRelease post-renderer
// (spec.postRenderers[] entry) that puts VMStorageHoldAnnotation, with
// the value owner ("<namespace>/<ClusterRestore name>"), in the pod
// metadata of the vmstorage of the VMCluster named vmcluster.
func RestoreHoldPostRenderer(vmcluster, owner string) map[string]any {
	doc, _ := json.Marshal(map[string]any{
		"apiVersion": "operator.victoriametrics.com/v1beta1",
		"kind":       "VMCluster",
		"metadata":   map[string]any{"name": vmcluster},
		"spec": map[string]any{"vmstorage": map[string]any{"podMetadata": map[string]any{
			"annotations": map[string]any{VMStorageHoldAnnotation: owner},
		}}},
	})
	return map[string]any{"kustomize": map[string]any{"patches": []any{map[string]any{
		"target": map[string]any{"group": "operator.victoriametrics.com", "version": "v1beta1", "kind": "VMCluster", "name": vmcluster},
		"patch":  RestoreHoldMarker + "\n" + string(doc),
	}}}}
}

// IsRestoreHoldPostRenderer reports whether a HelmRelease post-renderer
// entry (as JSON-decoded) is the hold of the VMCluster named vmcluster.
func IsRestoreHoldPostRenderer(entry any, vmcluster string) bool {
	m, _ := entry.(map[string]any)
	k, _ := m["kustomize"].(map[string]any)
	patches, _ := k["patches"].([]any)
	for _, p := range patches {
		pm, _ := p.(map[string]any)
		text, _ := pm["patch"].(string)
		target, _ := pm["target"].(map[string]any)
		if name, _ := target["name"].(string); name == vmcluster && strings.HasPrefix(text, RestoreHoldMarker+"\n") {
			return true
		}
	}
	return false
}
