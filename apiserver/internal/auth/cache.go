package auth

import (
	"container/list"
	"crypto/sha256"
	"sync"
	"time"
)

// lruCache remembers answers (TokenReviews, SubjectAccessReviews) for ttl
// and holds at most max of them: a new entry beyond the bound evicts the
// least recently used one, so a flood of new keys costs the cache its
// oldest answers, never all of them at once (the previous design cleared
// the whole map when full, sending every caller back to the API server
// together). Keys are SHA-256 hashes: no token or user name is kept in
// clear, and every entry has the same small size.
type lruCache[V any] struct {
	ttl time.Duration
	max int
	now func() time.Time

	mu      sync.Mutex
	order   *list.List // front: most recently used; values are *lruEntry[V]
	entries map[[sha256.Size]byte]*list.Element
}

type lruEntry[V any] struct {
	key     [sha256.Size]byte
	value   V
	expires time.Time
}

// newLRUCache returns a cache of at most size entries (at least 1) kept
// for ttl; ttl <= 0 disables it.
func newLRUCache[V any](ttl time.Duration, size int) *lruCache[V] {
	return &lruCache[V]{ttl: ttl, max: max(size, 1), now: time.Now, order: list.New(), entries: map[[sha256.Size]byte]*list.Element{}}
}

// cacheKey hashes the parts of a key, each length-prefixed so that no two
// different part lists hash alike.
func cacheKey(parts ...string) [sha256.Size]byte {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		l := uint64(len(p))
		for i := range n {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.Write([]byte(p))
	}
	var out [sha256.Size]byte
	copy(out[:], h.Sum(nil))
	return out
}

func (c *lruCache[V]) get(key [sha256.Size]byte) (V, bool) {
	var zero V
	if c.ttl <= 0 {
		return zero, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return zero, false
	}
	e := el.Value.(*lruEntry[V])
	if !c.now().Before(e.expires) {
		c.order.Remove(el)
		delete(c.entries, key)
		return zero, false
	}
	c.order.MoveToFront(el)
	return e.value, true
}

func (c *lruCache[V]) put(key [sha256.Size]byte, v V) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	expires := c.now().Add(c.ttl)
	if el, ok := c.entries[key]; ok {
		e := el.Value.(*lruEntry[V])
		e.value, e.expires = v, expires
		c.order.MoveToFront(el)
		return
	}
	for c.order.Len() >= c.max {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.entries, oldest.Value.(*lruEntry[V]).key)
	}
	c.entries[key] = c.order.PushFront(&lruEntry[V]{key: key, value: v, expires: expires})
}

// len is the number of entries held (expired ones included until they are
// looked up or evicted).
func (c *lruCache[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
