// Package watch serves the watch streams of the list routes
// (`GET <list>?watch=true`, docs/apiserver.md "Watch streams") as
// server-sent events from the informer cache.
//
// A Hub keeps its own view of one kind, fed by an event handler on the
// cache's informer (no request to the Kubernetes API server), and fans
// every change out to its subscribers. Subscribing snapshots the view and
// registers the subscriber under one lock, so a stream's initial state and
// its changes neither overlap nor leave a gap. A subscriber that does not
// keep up (its buffer is full) is dropped rather than blocking the
// informer; its client resumes with Last-Event-ID.
//
// Event ids are resourceVersions read as unsigned integers (the
// etcd revision Kubernetes uses as resourceVersion): one kind's changes
// reach the informer in revision order, so the ids of a stream never
// decrease, and "changed since id N" is "resourceVersion greater than N".
// The Broker holds what every stream shares: the limits (concurrent
// watchers), the heartbeat, the maximum duration.
package watch

import (
	"sort"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EventType is the SSE event name of a change.
type EventType string

// The event types of a stream.
const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
	// Synced ends the initial state.
	Synced EventType = "SYNCED"
)

// change is one change the hub saw: the object (after the change; the
// last known state for a deletion) and its id.
type change struct {
	typ EventType
	obj client.Object
	id  uint64
}

// DefaultMaxDeletions is how many deletions a hub remembers for clients
// resuming a stream.
const DefaultMaxDeletions = 1024

// Hub is the view of one kind and its subscribers. It implements
// toolscache.ResourceEventHandler; NewHub registers it on an informer.
type Hub struct {
	// Kind names the hub in logs and metrics ("upgradeoperations").
	Kind string
	// Keep, when set, selects the objects the hub holds (a namespace).
	Keep func(client.Object) bool
	// MaxDeletions bounds the remembered deletions (DefaultMaxDeletions
	// when 0).
	MaxDeletions int

	broker *Broker
	// synced reports whether the informer delivered its initial list to
	// the hub; lastSync is the informer's last seen resourceVersion.
	synced   func() bool
	lastSync func() string

	mu      sync.Mutex
	objects map[types.UID]client.Object
	// deleted are the last deletions, oldest first; horizon is the id
	// after which every deletion is among them (0: not known yet).
	deleted  []change
	horizon  uint64
	knowHzn  bool
	last     uint64
	subs     map[*subscription]struct{}
	overflow uint64
}

// subscription is one stream's queue of changes.
type subscription struct {
	ch      chan change
	dropped chan struct{}
}

func newHub(kind string, b *Broker) *Hub {
	return &Hub{Kind: kind, broker: b, objects: map[types.UID]client.Object{}, subs: map[*subscription]struct{}{}}
}

// ParseID reads a resourceVersion or event id; ok is false when it is not
// a decimal unsigned integer.
func ParseID(s string) (uint64, bool) {
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// FormatID writes an event id.
func FormatID(id uint64) string { return strconv.FormatUint(id, 10) }

func rvOf(o client.Object) uint64 {
	n, _ := ParseID(o.GetResourceVersion())
	return n
}

func asObject(obj any) (client.Object, bool) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	o, ok := obj.(client.Object)
	return o, ok
}

// OnAdd implements toolscache.ResourceEventHandler.
func (h *Hub) OnAdd(obj any, _ bool) {
	if o, ok := asObject(obj); ok {
		h.apply(Added, o)
	}
}

// OnUpdate implements toolscache.ResourceEventHandler. A resync (the same
// resourceVersion) is no change.
func (h *Hub) OnUpdate(oldObj, newObj any) {
	o, ok := asObject(newObj)
	if !ok {
		return
	}
	if old, ok := asObject(oldObj); ok && old.GetResourceVersion() == o.GetResourceVersion() {
		return
	}
	h.apply(Modified, o)
}

// OnDelete implements toolscache.ResourceEventHandler.
func (h *Hub) OnDelete(obj any) {
	if o, ok := asObject(obj); ok {
		h.apply(Deleted, o)
	}
}

func (h *Hub) apply(typ EventType, o client.Object) {
	if h.Keep != nil && !h.Keep(o) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.noteHorizon()
	// Ids never decrease: a deletion found by a relist carries the
	// object's last known resourceVersion, older than what the hub saw.
	id := max(rvOf(o), h.last)
	h.last = id
	c := change{typ: typ, obj: o, id: id}
	switch typ {
	case Deleted:
		if _, ok := h.objects[o.GetUID()]; !ok {
			return
		}
		delete(h.objects, o.GetUID())
		h.deleted = append(h.deleted, c)
		limit := h.MaxDeletions
		if limit <= 0 {
			limit = DefaultMaxDeletions
		}
		if len(h.deleted) > limit {
			// Forgetting a deletion moves the horizon past it.
			h.overflow = h.deleted[0].id
			h.deleted = append(h.deleted[:0:0], h.deleted[1:]...)
		}
	default:
		if prev, ok := h.objects[o.GetUID()]; ok {
			c.typ = Modified
			if rvOf(prev) == rvOf(o) && rvOf(o) != 0 {
				return
			}
		} else {
			c.typ = Added
		}
		h.objects[o.GetUID()] = o
	}
	for s := range h.subs {
		select {
		case s.ch <- c:
		default:
			// Too slow: dropped, never waited for.
			delete(h.subs, s)
			close(s.dropped)
			if h.broker != nil {
				h.broker.metrics.dropped.WithLabelValues(h.Kind).Inc()
			}
		}
	}
}

// Synced reports whether the hub holds the informer's initial list.
func (h *Hub) Synced() bool {
	if h.synced == nil {
		return true
	}
	return h.synced()
}

// noteHorizon sets the horizon of the deletions the first time the hub
// is found synced (at the first change or subscription after the
// informer's initial list): every deletion after the informer's list
// reaches the hub, and the informer's current resourceVersion is at or
// after that list, a conservative horizon. h.mu is held.
func (h *Hub) noteHorizon() {
	if h.knowHzn || !h.Synced() {
		return
	}
	h.knowHzn = true
	h.horizon = h.last
	if h.lastSync != nil {
		if n, ok := ParseID(h.lastSync()); ok {
			h.horizon = max(h.horizon, n)
		}
	}
}

// snapshot is what a new subscriber starts from.
type snapshot struct {
	objects []change // sorted by id
	deleted []change // since the resume point, sorted by id
	last    uint64
	// complete is false when deletions after the resume point may have
	// been missed.
	complete bool
}

// subscribe registers a subscriber with a queue of size buffer and
// returns the view at that instant. With resumed, the deletions after
// since are returned too, and complete says whether they are all known.
func (h *Hub) subscribe(buffer int, since uint64, resumed bool) (*subscription, snapshot) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.noteHorizon()
	s := &subscription{ch: make(chan change, buffer), dropped: make(chan struct{})}
	h.subs[s] = struct{}{}
	snap := snapshot{last: h.last, complete: true}
	for _, o := range h.objects {
		snap.objects = append(snap.objects, change{typ: Added, obj: o, id: rvOf(o)})
	}
	sort.Slice(snap.objects, func(i, j int) bool { return snap.objects[i].id < snap.objects[j].id })
	if resumed {
		for _, d := range h.deleted {
			if d.id > since {
				snap.deleted = append(snap.deleted, d)
			}
		}
		horizon := max(h.horizon, h.overflow)
		snap.complete = h.knowHzn && since >= horizon
	}
	return s, snap
}

// unsubscribe removes s (a no-op once dropped).
func (h *Hub) unsubscribe(s *subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, s)
}

// Subscribers is the number of streams of the hub.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}
