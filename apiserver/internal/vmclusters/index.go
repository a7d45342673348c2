package vmclusters

import (
	"context"
	"sync"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// ReleaseIndex holds the managed HelmReleases of one namespace by name,
// kept up to date by the informer's event handlers. It holds the
// informer's own objects (read only), so a list copies pointers instead
// of a thousand HelmRelease structs, which the cache's List does even
// without deep copies.
type ReleaseIndex struct {
	namespace string
	synced    func() bool

	mu     sync.RWMutex
	byName map[string]*helmv2.HelmRelease
}

// NewReleaseIndex registers the index's handlers on the HelmRelease
// informer (before or after the cache starts).
func NewReleaseIndex(ctx context.Context, c cache.Cache, namespace string) (*ReleaseIndex, error) {
	inf, err := c.GetInformer(ctx, &helmv2.HelmRelease{})
	if err != nil {
		return nil, err
	}
	x := &ReleaseIndex{namespace: namespace, byName: map[string]*helmv2.HelmRelease{}}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    x.set,
		UpdateFunc: func(_, obj any) { x.set(obj) },
		DeleteFunc: x.delete,
	})
	if err != nil {
		return nil, err
	}
	x.synced = reg.HasSynced
	return x, nil
}

func (x *ReleaseIndex) set(obj any) {
	hr, ok := obj.(*helmv2.HelmRelease)
	if !ok || hr.Namespace != x.namespace {
		return
	}
	x.mu.Lock()
	x.byName[hr.Name] = hr
	x.mu.Unlock()
}

func (x *ReleaseIndex) delete(obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	hr, ok := obj.(*helmv2.HelmRelease)
	if !ok || hr.Namespace != x.namespace {
		return
	}
	x.mu.Lock()
	if cur := x.byName[hr.Name]; cur != nil && cur.UID == hr.UID {
		delete(x.byName, hr.Name)
	}
	x.mu.Unlock()
}

// Synced reports whether the index has seen the informer's initial list.
func (x *ReleaseIndex) Synced() bool { return x.synced() }

// List returns every indexed HelmRelease, in no particular order; the
// items are shared and must not be modified.
func (x *ReleaseIndex) List() []*helmv2.HelmRelease {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]*helmv2.HelmRelease, 0, len(x.byName))
	for _, hr := range x.byName {
		out = append(out, hr)
	}
	return out
}

// Get returns the indexed HelmRelease name, or nil.
func (x *ReleaseIndex) Get(name string) *helmv2.HelmRelease {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.byName[name]
}
