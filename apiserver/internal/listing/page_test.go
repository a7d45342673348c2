package listing

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// byName pages strings by themselves, from the cursor after ("": the
// first page).
func byName(items []string, after string, size int) ([]string, bool) {
	compare, later := ByName(func(s string) string { return s }, after)
	return Page(items, compare, later, size)
}

func TestPage(t *testing.T) {
	g := NewWithT(t)
	var names []string
	for i := range 120 {
		names = append(names, fmt.Sprintf("c%03d", i))
	}
	// Shuffle deterministically: the input order must not matter.
	shuffled := append(slices.Clone(names[60:]), names[:60]...)
	input := slices.Clone(shuffled)

	var seen []string
	after, pages := "", 0
	for {
		page, more := byName(input, after, 50)
		pages++
		seen = append(seen, page...)
		if !more {
			break
		}
		after = page[len(page)-1]
		g.Expect(pages).To(BeNumerically("<", 10))
	}
	g.Expect(pages).To(Equal(3))
	g.Expect(seen).To(Equal(names))
	g.Expect(input).To(Equal(shuffled), "items is left as it was")

	// A cursor survives the deletion of the item it points at.
	page, more := byName(slices.Clone(names[:40]), "c050", 5)
	g.Expect(page).To(BeEmpty(), "nothing remains after the cursor")
	g.Expect(more).To(BeFalse())
	page, more = byName(append(slices.Clone(names[:10]), names[11:]...), "c009", 2)
	g.Expect(page).To(Equal([]string{"c011", "c012"}))
	g.Expect(more).To(BeTrue())

	// The last page: exactly size items left, or fewer.
	page, more = byName(names, "c109", 10)
	g.Expect(page).To(Equal(names[110:]))
	g.Expect(more).To(BeFalse(), "no token on the last page")
	page, more = byName(names[:3], "", 1000)
	g.Expect(page).To(Equal(names[:3]), "a size larger than the items")
	g.Expect(more).To(BeFalse())

	page, more = byName(nil, "", 10)
	g.Expect(page).To(BeEmpty())
	g.Expect(more).To(BeFalse())

	page, _ = byName(names, "", 0)
	g.Expect(page).To(HaveLen(DefaultPageSize), "size 0 is the default")

	// No after: every item.
	page, more = Page(shuffled, strings.Compare, nil, 3)
	g.Expect(page).To(Equal(names[:3]))
	g.Expect(more).To(BeTrue())
}

// TestPageMatchesSortedOrder compares every page with the same page of a
// full sort, for random sizes, cursors and input orders.
func TestPageMatchesSortedOrder(t *testing.T) {
	g := NewWithT(t)
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		n, size := rnd.IntN(120), 1+rnd.IntN(60)
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("c%04d", i)
		}
		after := ""
		if n > 0 && rnd.IntN(2) == 0 {
			after = names[rnd.IntN(n)]
		}
		start := sort.SearchStrings(names, after+"\x00")
		if after == "" {
			start = 0
		}
		want := names[start:min(start+size, n)]
		shuffled := slices.Clone(names)
		rnd.Shuffle(n, func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		input := slices.Clone(shuffled)
		page, more := byName(input, after, size)
		g.Expect(page).To(HaveLen(len(want)), "n=%d size=%d after=%q", n, size, after)
		if len(want) > 0 {
			g.Expect(page).To(Equal(want), "n=%d size=%d after=%q", n, size, after)
		}
		g.Expect(more).To(Equal(start+size < n), "n=%d size=%d after=%q", n, size, after)
		g.Expect(input).To(Equal(shuffled), "items is left as it was")
	}
}

// object is an object named name, created at second sec.
func object(name string, sec int64) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.Unix(sec, 0)}
}

func objectNames(items []*metav1.ObjectMeta) []string {
	out := make([]string, 0, len(items))
	for _, o := range items {
		out = append(out, o.Name)
	}
	return out
}

func TestPageNewestFirst(t *testing.T) {
	g := NewWithT(t)
	items := []*metav1.ObjectMeta{
		object("b", 100), object("e", 300), object("a", 100), object("d", 200), object("c", 300), object("f", 50),
	}
	// Equal seconds whatever the nanoseconds: a token keeps seconds.
	items[4].CreationTimestamp = metav1.Unix(300, 999)
	input := slices.Clone(items)
	newestFirst := func(cursor *Key, size int) ([]*metav1.ObjectMeta, bool) {
		compare, after := NewestFirst(KeyOf[*metav1.ObjectMeta], cursor)
		return Page(input, compare, after, size)
	}
	want := []string{"c", "e", "d", "a", "b", "f"}

	var got []string
	var cursor *Key
	for pages, size := 0, 4; ; pages, size = pages+1, 2 {
		g.Expect(pages).To(BeNumerically("<", 10), "pagination ends")
		page, more := newestFirst(cursor, size)
		got = append(got, objectNames(page)...)
		if !more {
			break
		}
		k := KeyOf(page[len(page)-1])
		cursor = &k
	}
	g.Expect(got).To(Equal(want), "newest first, equal seconds by name, no gap and no repeat across pages")
	g.Expect(input).To(Equal(items), "items is left as it was")

	// A cursor whose item was deleted meanwhile still lands in place.
	page, more := newestFirst(&Key{Created: 300, Name: "d"}, 1) // between c and e (both 300)
	g.Expect(objectNames(page)).To(Equal([]string{"e"}))
	g.Expect(more).To(BeTrue())
	page, more = newestFirst(&Key{Created: 250, Name: "gone"}, 1) // between e (300) and d (200)
	g.Expect(objectNames(page)).To(Equal([]string{"d"}))
	g.Expect(more).To(BeTrue())
	page, more = newestFirst(&Key{Created: 50, Name: "f"}, 10) // the oldest
	g.Expect(page).To(BeEmpty(), "a page of 0 remaining")
	g.Expect(more).To(BeFalse())
	page, more = newestFirst(&Key{Created: 100, Name: "a"}, 2)
	g.Expect(objectNames(page)).To(Equal([]string{"b", "f"}))
	g.Expect(more).To(BeFalse(), "exactly the remaining items: no token")
	page, more = newestFirst(nil, 100)
	g.Expect(objectNames(page)).To(Equal(want), "a size larger than the items")
	g.Expect(more).To(BeFalse())
}

func TestOrders(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Key{Created: 2, Name: "z"}.Compare(Key{Created: 1, Name: "a"})).To(BeNumerically("<", 0), "newest first")
	g.Expect(Key{Created: 1, Name: "a"}.Compare(Key{Created: 1, Name: "b"})).To(BeNumerically("<", 0), "equal seconds by name")
	g.Expect(Key{Created: 1, Name: "a"}.Compare(Key{Created: 1, Name: "a"})).To(BeZero())
	g.Expect(KeyOf(object("a", 7))).To(Equal(Key{Created: 7, Name: "a"}))

	// By: another order of keys (here oldest first).
	oldest := func(a, b Key) int { return b.Compare(a) }
	compare, after := By(func(s string) Key { return Key{Name: s} }, oldest, &Key{Name: "b"})
	page, more := Page([]string{"d", "a", "c", "b"}, compare, after, 1)
	g.Expect(page).To(Equal([]string{"a"}))
	g.Expect(more).To(BeFalse())

	items := []int{3, 1, 2}
	ptrs := Pointers(items)
	g.Expect(ptrs).To(HaveLen(3))
	g.Expect(ptrs[1]).To(BeIdenticalTo(&items[1]))
}

// TestPageSortedIsPage: on items already sorted, PageSorted returns the
// page Page returns on the same items filtered by keep, for cursors that
// are items' and cursors that are not (a deleted item's), in both orders.
func TestPageSortedIsPage(t *testing.T) {
	g := NewWithT(t)
	rnd := rand.New(rand.NewPCG(3, 4))
	for range 1000 {
		n, size := rnd.IntN(150), 1+rnd.IntN(60)
		objs := make([]*metav1.ObjectMeta, n)
		for i := range objs {
			objs[i] = object(fmt.Sprintf("o%03d", rnd.IntN(1000)), int64(rnd.IntN(20)))
			objs[i].Name += fmt.Sprintf("-%d", i) // names are unique in a list
		}
		var from *Key
		if rnd.IntN(3) > 0 {
			k := Key{Created: int64(rnd.IntN(20)), Name: fmt.Sprintf("o%03d", rnd.IntN(1000))}
			if n > 0 && rnd.IntN(2) == 0 {
				k = KeyOf(objs[rnd.IntN(n)])
			}
			from = &k
		}
		mod := 1 + rnd.IntN(4)
		keep := func(o *metav1.ObjectMeta) bool { return len(o.Name)%mod != 0 || mod == 1 }
		compare, after := NewestFirst(KeyOf[*metav1.ObjectMeta], from)

		var kept []*metav1.ObjectMeta
		for _, o := range objs {
			if keep(o) {
				kept = append(kept, o)
			}
		}
		want, wantMore := Page(kept, compare, after, size)

		sorted := slices.Clone(objs)
		slices.SortFunc(sorted, compare)
		before := slices.Clone(sorted)
		got, more := PageSorted(sorted, after, keep, size)
		g.Expect(objectNames(got)).To(Equal(objectNames(want)), "n=%d size=%d from=%v", n, size, from)
		g.Expect(more).To(Equal(wantMore), "n=%d size=%d from=%v", n, size, from)
		g.Expect(sorted).To(Equal(before), "items is left as it was")
	}
	page, more := PageSorted([]string{"a", "b", "c"}, nil, nil, 0)
	g.Expect(page).To(Equal([]string{"a", "b", "c"}), "size 0 is the default page size")
	g.Expect(more).To(BeFalse())
}
