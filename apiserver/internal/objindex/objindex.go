// Package objindex holds the objects of one kind and namespace that an
// informer has, by name and by UID, kept up to date by the informer's
// event handlers, for the read paths of the REST API.
//
// It holds the informer's own objects (read only), so a list copies
// pointers instead of a thousand structs, which the cache's List does
// even without deep copies (meta.SetList moves each item into a new
// slice: most of a list's cost at 1,000 objects). A Memo keeps what a
// read path derives from an object (its API view) per object version, so
// the derivation runs once per change instead of once per request.
package objindex

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Index holds the objects of type T (a pointer type, e.g.
// *opsv1.ClusterUpgradeOperation) in one namespace. Its items are shared
// with the informer: callers must not modify them.
type Index[T client.Object] struct {
	namespace string
	synced    func() bool
	// order sorts Sorted's snapshot; nil: by name.
	order func(a, b T) int

	mu     sync.RWMutex
	byName map[string]T
	byUID  map[types.UID]T
	// changes counts the changes to the index; sorted is the snapshot of
	// Sorted as of sortedAt changes.
	changes  uint64
	sorted   []T
	sortedAt uint64
	// gone are called with the UID of a deleted object (Memo.forget).
	gone []func(types.UID)
}

// New registers the index's handlers on the informer of T's kind in c
// (before or after the cache starts), for the objects of namespace. order
// is the order of Sorted (nil: by name).
func New[T client.Object](ctx context.Context, c cache.Cache, namespace string, order func(a, b T) int) (*Index[T], error) {
	// A new T (a pointer type) names the informer's kind.
	inf, err := c.GetInformer(ctx, reflect.New(reflect.TypeFor[T]().Elem()).Interface().(T))
	if err != nil {
		return nil, err
	}
	x := &Index[T]{namespace: namespace, order: order, byName: map[string]T{}, byUID: map[types.UID]T{}}
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

func (x *Index[T]) set(obj any) {
	o, ok := obj.(T)
	if !ok || o.GetNamespace() != x.namespace {
		return
	}
	x.mu.Lock()
	if old, ok := x.byName[o.GetName()]; ok && old.GetUID() != o.GetUID() {
		delete(x.byUID, old.GetUID())
	}
	x.byName[o.GetName()] = o
	x.byUID[o.GetUID()] = o
	x.changes++
	x.mu.Unlock()
}

func (x *Index[T]) delete(obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	o, ok := obj.(T)
	if !ok || o.GetNamespace() != x.namespace {
		return
	}
	x.mu.Lock()
	if cur, ok := x.byName[o.GetName()]; ok && cur.GetUID() == o.GetUID() {
		delete(x.byName, o.GetName())
	}
	delete(x.byUID, o.GetUID())
	x.changes++
	gone := x.gone
	x.mu.Unlock()
	for _, f := range gone {
		f(o.GetUID())
	}
}

// Synced reports whether the index has seen the informer's initial list.
func (x *Index[T]) Synced() bool { return x.synced() }

// Sorted returns every object in the index's order, as one snapshot
// shared by the readers until the index changes (then the next call sorts
// again): a page is then a binary search and the page's items
// (listing.PageSorted), not a pass over every object. The slice is
// shared: callers must not modify it.
func (x *Index[T]) Sorted() []T {
	x.mu.RLock()
	if x.sorted != nil && x.sortedAt == x.changes {
		defer x.mu.RUnlock()
		return x.sorted
	}
	x.mu.RUnlock()
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.sorted != nil && x.sortedAt == x.changes {
		return x.sorted
	}
	out := make([]T, 0, len(x.byName))
	for _, o := range x.byName {
		out = append(out, o)
	}
	order := x.order
	if order == nil {
		order = func(a, b T) int { return strings.Compare(a.GetName(), b.GetName()) }
	}
	slices.SortFunc(out, order)
	x.sorted, x.sortedAt = out, x.changes
	return out
}

// Get returns the object name, and whether there is one.
func (x *Index[T]) Get(name string) (T, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	o, ok := x.byName[name]
	return o, ok
}

// GetByUID returns the object whose UID is uid, and whether there is one.
func (x *Index[T]) GetByUID(uid string) (T, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	o, ok := x.byUID[types.UID(uid)]
	return o, ok
}

// Memo keeps one value derived from each object of an Index, for the
// object's current resourceVersion: Get computes it on the first read of
// a version and returns the kept one until the object changes. A deleted
// object's value is dropped, so a Memo holds at most one value per object.
type Memo[V any] struct {
	mu sync.Mutex
	m  map[types.UID]memoEntry[V]
}

type memoEntry[V any] struct {
	version string
	value   V
}

// NewMemo returns a Memo of the values derived from the objects of x.
func NewMemo[V any, T client.Object](x *Index[T]) *Memo[V] {
	m := &Memo[V]{m: map[types.UID]memoEntry[V]{}}
	x.mu.Lock()
	x.gone = append(x.gone, m.forget)
	x.mu.Unlock()
	return m
}

// Get returns the value derived from obj, computing it with derive unless
// it is kept for obj's resourceVersion. A nil Memo always derives. derive
// must depend on nothing but obj (and settings that never change).
func (m *Memo[V]) Get(obj client.Object, derive func() V) V {
	if m == nil || obj.GetResourceVersion() == "" {
		return derive()
	}
	uid, version := obj.GetUID(), obj.GetResourceVersion()
	m.mu.Lock()
	e, ok := m.m[uid]
	m.mu.Unlock()
	if ok && e.version == version {
		return e.value
	}
	v := derive()
	m.mu.Lock()
	m.m[uid] = memoEntry[V]{version: version, value: v}
	m.mu.Unlock()
	return v
}

func (m *Memo[V]) forget(uid types.UID) {
	m.mu.Lock()
	delete(m.m, uid)
	m.mu.Unlock()
}

// Len is the number of values kept.
func (m *Memo[V]) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.m)
}
