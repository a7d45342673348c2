package vmclusters

import (
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

func TestReleaseIndexHandlers(t *testing.T) {
	g := NewWithT(t)
	x := &ReleaseIndex{namespace: "obs", byName: map[string]*helmv2.HelmRelease{}}
	hr := func(ns, name, uid string) *helmv2.HelmRelease {
		return &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}}
	}
	x.set(hr("obs", "a", "1"))
	x.set(hr("obs", "b", "2"))
	x.set(hr("other", "c", "3")) // another namespace of the cache
	g.Expect(x.List()).To(HaveLen(2))

	updated := hr("obs", "a", "1")
	updated.Generation = 2
	x.set(updated)
	g.Expect(x.Get("a").Generation).To(Equal(int64(2)))

	// A late delete of an object that was re-created under the same name
	// keeps the new one.
	x.set(hr("obs", "b", "4"))
	x.delete(hr("obs", "b", "2"))
	g.Expect(x.Get("b")).NotTo(BeNil())
	g.Expect(string(x.Get("b").UID)).To(Equal("4"))

	x.delete(hr("obs", "a", "1"))
	x.delete(toolscache.DeletedFinalStateUnknown{Key: "obs/b", Obj: hr("obs", "b", "4")})
	g.Expect(x.List()).To(BeEmpty())
	g.Expect(x.Get("a")).To(BeNil())
}
