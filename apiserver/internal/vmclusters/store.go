package vmclusters

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/cachewait"
	"github.com/tidbcloud/ops-server/apiserver/internal/listing"
)

// UIDIndex is the cache index of HelmReleases by metadata.uid.
const UIDIndex = "metadata.uid"

// IndexUID registers the UID index on the cache (before it starts).
func IndexUID(ctx context.Context, c cache.Cache) error {
	return c.IndexField(ctx, &helmv2.HelmRelease{}, UIDIndex, func(o client.Object) []string {
		return []string{string(o.GetUID())}
	})
}

// KubeStore is the Store on a controller-runtime cache (reads) and an
// uncached client (writes, under the field manager). It only reads and
// writes: who asked, the audit record and every rule are the service's.
type KubeStore struct {
	// Cache holds the managed HelmReleases of Namespace, indexed by UID.
	Cache client.Reader
	// Index, optional, serves List without copying the cached releases,
	// and Get and GetByUID with one copy instead of the cache's list and
	// copy.
	Index *ReleaseIndex
	// Client writes to (and, for GetLive, reads from) the API server; its
	// writes carry the configured field manager (client.WithFieldOwner,
	// app.New), which the server-side apply of the sources requires.
	Client    client.Client
	Namespace string
	// CacheWait bounds WaitForCache.
	CacheWait time.Duration
	// SourceLabels are the labels of the HelmRepositories of a release,
	// which DeleteSources deletes; nil: Labels (a vmcluster's).
	SourceLabels func(name string) map[string]string
}

var _ Store = (*KubeStore)(nil)

// Get implements Store.
func (s *KubeStore) Get(ctx context.Context, name string) (*helmv2.HelmRelease, error) {
	if s.Index != nil && s.Index.Synced() {
		if hr, ok := s.Index.Get(name); ok {
			return hr.DeepCopy(), nil
		}
	}
	hr := &helmv2.HelmRelease{}
	if err := s.Cache.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: name}, hr); err != nil {
		return nil, err
	}
	return hr, nil
}

// GetByUID implements Store.
func (s *KubeStore) GetByUID(ctx context.Context, uid string) (*helmv2.HelmRelease, error) {
	if s.Index != nil && s.Index.Synced() {
		if hr, ok := s.Index.GetByUID(uid); ok {
			return hr.DeepCopy(), nil
		}
	}
	var list helmv2.HelmReleaseList
	if err := s.Cache.List(ctx, &list, client.InNamespace(s.Namespace), client.MatchingFields{UIDIndex: uid}); err != nil {
		return nil, err
	}
	if len(list.Items) == 0 {
		return nil, apierrors.NewNotFound(helmv2.GroupVersion.WithResource("helmreleases").GroupResource(), uid)
	}
	return &list.Items[0], nil
}

// List implements Store: from Index once it has synced, else from the
// cache.
func (s *KubeStore) List(ctx context.Context) ([]*helmv2.HelmRelease, error) {
	if s.Index != nil && s.Index.Synced() {
		return s.Index.Sorted(), nil
	}
	var list helmv2.HelmReleaseList
	// UnsafeDisableDeepCopy: the items are the cache's own objects (see
	// Store.List).
	if err := s.Cache.List(ctx, &list, client.InNamespace(s.Namespace), client.MatchingLabels{LabelManagedBy: ManagedBy}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := listing.Pointers(list.Items)
	slices.SortFunc(out, func(a, b *helmv2.HelmRelease) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// GetLive implements Store.
func (s *KubeStore) GetLive(ctx context.Context, name string) (*helmv2.HelmRelease, error) {
	hr := &helmv2.HelmRelease{}
	if err := s.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: name}, hr); err != nil {
		return nil, err
	}
	return hr, nil
}

// CreateRelease implements Store.
func (s *KubeStore) CreateRelease(ctx context.Context, hr *helmv2.HelmRelease) error {
	return s.Client.Create(ctx, hr)
}

// PatchRelease implements Store.
func (s *KubeStore) PatchRelease(ctx context.Context, hr *helmv2.HelmRelease, patch []byte) error {
	return s.Client.Patch(ctx, hr, client.RawPatch(types.JSONPatchType, patch))
}

// DeleteRelease implements Store.
func (s *KubeStore) DeleteRelease(ctx context.Context, hr *helmv2.HelmRelease, checkVersion bool) error {
	pre := client.Preconditions{UID: &hr.UID}
	if checkVersion {
		pre.ResourceVersion = &hr.ResourceVersion
	}
	return s.Client.Delete(ctx, hr, pre, client.PropagationPolicy(metav1.DeletePropagationBackground))
}

// ApplySource implements Store with server-side apply: the apiserver owns
// the fields it sets and nothing else.
func (s *KubeStore) ApplySource(ctx context.Context, repo *sourcev1.HelmRepository) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(repo)
	if err != nil {
		return fmt.Errorf("converting HelmRepository: %w", err)
	}
	u := &unstructured.Unstructured{Object: obj}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	u.SetAPIVersion(sourcev1.GroupVersion.String())
	u.SetKind(sourcev1.HelmRepositoryKind)
	return s.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.ForceOwnership)
}

// DeleteSources implements Store.
func (s *KubeStore) DeleteSources(ctx context.Context, name string) error {
	return s.Client.DeleteAllOf(ctx, &sourcev1.HelmRepository{}, client.InNamespace(s.Namespace),
		client.MatchingLabels(s.sourceLabels(name)), client.PropagationPolicy(metav1.DeletePropagationBackground))
}

func (s *KubeStore) sourceLabels(name string) map[string]string {
	if s.SourceLabels != nil {
		return s.SourceLabels(name)
	}
	return Labels(name)
}

// WaitForCache implements Store with cachewait.For. It gives up silently
// after CacheWait: the response is built from the write's result either
// way.
func (s *KubeStore) WaitForCache(ctx context.Context, name string, done func(*helmv2.HelmRelease) bool) {
	cachewait.For(ctx, s.Cache, client.ObjectKey{Namespace: s.Namespace, Name: name}, s.CacheWait, func(hr *helmv2.HelmRelease) bool {
		// Lists are served by Index, fed by the informer's handlers a
		// moment after its store: a list must see the write too.
		if !done(hr) || s.Index == nil {
			return done(hr)
		}
		indexed, _ := s.Index.Get(name)
		return done(indexed)
	})
}
