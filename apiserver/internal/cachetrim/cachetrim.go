// Package cachetrim holds the informer transforms of ops-apiserver's
// cache (app.New; vmclusterstest builds the same cache for tests): what
// the cache keeps of each kind. Every cached object loses what no reader
// of the cache looks at (StripMetadata); HelmReleases and
// ClusterUpgradeOperations lose the status fields their packages never
// read too (vmclusters.TrimRelease, upgrades.TrimOperation, each next to
// the code that reads the rest). docs/apiserver.md, "Memory".
package cachetrim

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/tidbcloud/ops-server/apiserver/internal/upgrades"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
)

// AnnotationLastApplied is kubectl's copy of the whole object as last
// applied (kubectl apply): as large as the object, read by no one here.
const AnnotationLastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Others is the transform of every kind without one of its own.
func Others() toolscache.TransformFunc { return Transform[any](nil) }

// Releases is the transform of HelmReleases.
func Releases() toolscache.TransformFunc { return Transform(vmclusters.TrimRelease) }

// Operations is the transform of ClusterUpgradeOperations.
func Operations() toolscache.TransformFunc { return Transform(upgrades.TrimOperation) }

// Transform is an informer transform: StripMetadata on every object, then
// trim on a T (nil: nothing more). Anything else (a tombstone) passes
// unchanged. client-go calls it on each object the informer receives,
// before any other actor sees it, so it changes the object in place; it
// is idempotent, as client-go asks.
func Transform[T any](trim func(T)) toolscache.TransformFunc {
	return func(in any) (any, error) {
		if o, ok := in.(metav1.Object); ok {
			StripMetadata(o)
		}
		if t, ok := in.(T); ok && trim != nil {
			trim(t)
		}
		return in, nil
	}
}

// StripMetadata drops metadata.managedFields and the
// last-applied-configuration annotation. The annotations map itself stays
// even when that empties it: an empty map is not a missing one to
// vmclusters.Translator.UpdatePatch.
func StripMetadata(o metav1.Object) {
	o.SetManagedFields(nil)
	delete(o.GetAnnotations(), AnnotationLastApplied)
}
