package objindex

import (
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

func newIndex() *Index[*helmv2.HelmRelease] {
	return &Index[*helmv2.HelmRelease]{namespace: "obs", byName: map[string]*helmv2.HelmRelease{}, byUID: map[types.UID]*helmv2.HelmRelease{}}
}

func hr(ns, name, uid, version string) *helmv2.HelmRelease {
	return &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), ResourceVersion: version}}
}

func TestIndexHandlers(t *testing.T) {
	g := NewWithT(t)
	x := newIndex()
	x.set(hr("obs", "a", "1", "1"))
	x.set(hr("obs", "b", "2", "1"))
	x.set(hr("other", "c", "3", "1")) // another namespace of the cache
	g.Expect(x.Sorted()).To(HaveLen(2))

	updated := hr("obs", "a", "1", "2")
	updated.Generation = 2
	x.set(updated)
	a, ok := x.Get("a")
	g.Expect(ok).To(BeTrue())
	g.Expect(a.Generation).To(Equal(int64(2)))
	byUID, ok := x.GetByUID("1")
	g.Expect(ok).To(BeTrue())
	g.Expect(byUID).To(BeIdenticalTo(a), "the informer's object, not a copy")

	// A late delete of an object that was re-created under the same name
	// keeps the new one; the old UID is gone.
	x.set(hr("obs", "b", "4", "3"))
	x.delete(hr("obs", "b", "2", "1"))
	b, ok := x.Get("b")
	g.Expect(ok).To(BeTrue())
	g.Expect(string(b.UID)).To(Equal("4"))
	_, ok = x.GetByUID("2")
	g.Expect(ok).To(BeFalse())

	x.delete(hr("obs", "a", "1", "2"))
	x.delete(toolscache.DeletedFinalStateUnknown{Key: "obs/b", Obj: hr("obs", "b", "4", "3")})
	g.Expect(x.Sorted()).To(BeEmpty())
	_, ok = x.Get("a")
	g.Expect(ok).To(BeFalse())
	_, ok = x.GetByUID("4")
	g.Expect(ok).To(BeFalse())
}

func TestMemoDerivesOncePerVersion(t *testing.T) {
	g := NewWithT(t)
	x := newIndex()
	m := NewMemo[string](x)
	calls := 0
	derive := func(o *helmv2.HelmRelease) func() string {
		return func() string { calls++; return o.Name + "@" + o.ResourceVersion }
	}
	v1 := hr("obs", "a", "1", "10")
	x.set(v1)
	g.Expect(m.Get(v1, derive(v1))).To(Equal("a@10"))
	g.Expect(m.Get(v1, derive(v1))).To(Equal("a@10"))
	g.Expect(calls).To(Equal(1), "derived once for a version")

	v2 := hr("obs", "a", "1", "11")
	x.set(v2)
	g.Expect(m.Get(v2, derive(v2))).To(Equal("a@11"), "a new version is derived again")
	g.Expect(calls).To(Equal(2))
	// A request still holding the older object gets its own version's value.
	g.Expect(m.Get(v1, derive(v1))).To(Equal("a@10"))
	g.Expect(calls).To(Equal(3))

	// No resourceVersion (an object built, not read): never kept.
	built := hr("obs", "n", "9", "")
	m.Get(built, derive(built))
	m.Get(built, derive(built))
	g.Expect(calls).To(Equal(5))

	x.delete(v2)
	g.Expect(m.Len()).To(BeZero(), "a deleted object's value is dropped")

	var none *Memo[string]
	g.Expect(none.Get(v1, derive(v1))).To(Equal("a@10"), "a nil Memo derives")
}

func TestSortedSnapshot(t *testing.T) {
	g := NewWithT(t)
	x := newIndex()
	x.set(hr("obs", "b", "2", "1"))
	x.set(hr("obs", "c", "3", "1"))
	x.set(hr("obs", "a", "1", "1"))
	first := x.Sorted()
	g.Expect(names(first)).To(Equal([]string{"a", "b", "c"}), "by name without an order")
	g.Expect(&x.Sorted()[0]).To(BeIdenticalTo(&first[0]), "one snapshot until the index changes")

	x.set(hr("obs", "a", "1", "2"))
	x.delete(hr("obs", "c", "3", "1"))
	g.Expect(names(x.Sorted())).To(Equal([]string{"a", "b"}))
	g.Expect(names(first)).To(Equal([]string{"a", "b", "c"}), "an earlier snapshot is not changed under its reader")

	byUIDDesc := newIndex()
	byUIDDesc.order = func(a, b *helmv2.HelmRelease) int { return strings.Compare(string(b.UID), string(a.UID)) }
	byUIDDesc.set(hr("obs", "a", "1", "1"))
	byUIDDesc.set(hr("obs", "b", "2", "1"))
	g.Expect(names(byUIDDesc.Sorted())).To(Equal([]string{"b", "a"}), "in the index's order")
}

func names(items []*helmv2.HelmRelease) []string {
	out := make([]string, 0, len(items))
	for _, o := range items {
		out = append(out, o.Name)
	}
	return out
}
