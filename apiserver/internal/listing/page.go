package listing

import (
	"cmp"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Page returns one page of items: the size smallest items by cmp among
// those after accepts (the items that sort after the page token's cursor
// by cmp; nil accepts every item), sorted by cmp, and whether an accepted
// item was left out (then the page has size items and the caller issues
// the token of its last one: never on the last page, never for an empty
// page). A size of 0 or less is DefaultPageSize. items is left as it was.
// ByName, NewestFirst and By make cmp and after of a list.
//
// The page is kept in a max-heap bounded by size, in one pass: sorting
// every item on every request was most of the cost of listing a thousand
// vmclusters (vmclusters' BenchmarkList).
func Page[T any](items []T, cmp func(a, b T) int, after func(T) bool, size int) (page []T, more bool) {
	if size <= 0 {
		size = DefaultPageSize
	}
	h := maxHeap[T]{cmp: cmp, items: make([]T, 0, min(size, len(items)))}
	for _, it := range items {
		switch {
		case len(h.items) < size:
			if after == nil || after(it) {
				h.push(it)
			}
		case cmp(it, h.items[0]) >= 0:
			// After the greatest of a full page, so after the cursor
			// too: left out.
			more = true
		case after == nil || after(it):
			h.items[0] = it
			h.down(0)
			more = true
		}
	}
	slices.SortFunc(h.items, cmp)
	return h.items, more
}

// PageSorted is Page over items already sorted in the list's order (an
// index's snapshot): the page starts at the first item after accepts,
// found by binary search (after must be monotone over items, as By's
// is), and takes the next size items keep accepts (nil keeps all). The
// cost is that of the page, not of the list. items is left as it was.
func PageSorted[T any](items []T, after func(T) bool, keep func(T) bool, size int) (page []T, more bool) {
	if size <= 0 {
		size = DefaultPageSize
	}
	start := 0
	if after != nil {
		start = sort.Search(len(items), func(i int) bool { return after(items[i]) })
	}
	page = make([]T, 0, min(size, len(items)-start))
	for _, it := range items[start:] {
		if keep != nil && !keep(it) {
			continue
		}
		if len(page) == size {
			return page, true
		}
		page = append(page, it)
	}
	return page, false
}

// ByName returns Page's cmp and after for a list by name: name gives an
// item's (names are unique in a list), and the page starts after the name
// from ("": the first page, after is nil). from need not be an item's: a
// page token whose item was deleted meanwhile still lands in place.
func ByName[T any](name func(T) string, from string) (cmp func(a, b T) int, after func(T) bool) {
	if from == "" {
		return By(name, strings.Compare, nil)
	}
	return By(name, strings.Compare, &from)
}

// Key is where a Kubernetes object sits in a list newest first: its
// creation time in Unix seconds (what a page token keeps) and its name.
type Key struct {
	Created int64
	Name    string
}

// KeyOf is the key of a Kubernetes object.
func KeyOf[T metav1.Object](o T) Key {
	return Key{Created: o.GetCreationTimestamp().Unix(), Name: o.GetName()}
}

// Compare orders keys newest first: the later creation second first,
// equal seconds by name.
func (k Key) Compare(o Key) int {
	return cmp.Or(cmp.Compare(o.Created, k.Created), strings.Compare(k.Name, o.Name))
}

// NewestFirst returns Page's cmp and after for a list newest first (in
// the order of Key.Compare): key gives an item's key (KeyOf), and the page
// starts after the key from (nil: the first page, after is nil), which
// need not be an item's.
func NewestFirst[T any](key func(T) Key, from *Key) (cmp func(a, b T) int, after func(T) bool) {
	return By(key, Key.Compare, from)
}

// By returns Page's cmp and after for a list in another order of its
// items' keys: key gives an item's key, order compares two keys (keys are
// unique in a list), and the page starts after the key from (nil: the
// first page, after is nil), which need not be an item's.
func By[T, K any](key func(T) K, order func(a, b K) int, from *K) (cmp func(a, b T) int, after func(T) bool) {
	cmp = func(a, b T) int { return order(key(a), key(b)) }
	if from != nil {
		f := *from
		after = func(it T) bool { return order(f, key(it)) < 0 }
	}
	return cmp, after
}

// maxHeap is a binary heap with the greatest item (by cmp) at the root.
type maxHeap[T any] struct {
	cmp   func(a, b T) int
	items []T
}

func (h *maxHeap[T]) less(i, j int) bool { return h.cmp(h.items[i], h.items[j]) < 0 }

func (h *maxHeap[T]) push(it T) {
	h.items = append(h.items, it)
	for i := len(h.items) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(p, i) {
			break
		}
		h.items[p], h.items[i] = h.items[i], h.items[p]
		i = p
	}
}

func (h *maxHeap[T]) down(i int) {
	for {
		l, big := 2*i+1, i
		if l < len(h.items) && h.less(big, l) {
			big = l
		}
		if r := l + 1; r < len(h.items) && h.less(big, r) {
			big = r
		}
		if big == i {
			return
		}
		h.items[i], h.items[big] = h.items[big], h.items[i]
		i = big
	}
}

// Pointers returns a pointer to each item, in order: the items Page
// takes from a list of Kubernetes objects (it copies and compares items,
// and an object is large).
func Pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
