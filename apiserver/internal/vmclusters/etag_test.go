package vmclusters

import (
	"encoding/json"
	"net/http"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func jsonNumber(s string) json.Number { return json.Number(s) }

func TestETagOf(t *testing.T) {
	g := NewWithT(t)
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{UID: "u-1", Generation: 3, ResourceVersion: "10"}}
	e := ETagOf(hr)
	g.Expect(e).To(MatchRegexp(`^[A-Za-z0-9_-]{16}$`))

	// Flux writing status changes the resourceVersion, not the etag.
	st := hr.DeepCopy()
	st.ResourceVersion = "11"
	st.Status.ObservedGeneration = 3
	st.Finalizers = []string{"finalizers.fluxcd.io"}
	g.Expect(ETagOf(st)).To(Equal(e))

	// A spec change (a new generation) or another object changes it.
	spec := hr.DeepCopy()
	spec.Generation = 4
	g.Expect(ETagOf(spec)).NotTo(Equal(e))
	other := hr.DeepCopy()
	other.UID = "u-2"
	g.Expect(ETagOf(other)).NotTo(Equal(e))
	g.Expect(HeaderETag(e)).To(Equal(`"` + e + `"`))
}

func TestParseIfMatch(t *testing.T) {
	str := func(s string) *string { return &s }
	cases := []struct {
		name     string
		header   []string
		body     *string
		want     Precondition
		badField string
	}{
		{name: "none", want: Precondition{}},
		{name: "any", header: []string{"*"}, want: Precondition{Any: true}},
		{name: "one quoted", header: []string{`"abc"`}, want: Precondition{ETags: []string{"abc"}}},
		{name: "weak and a list", header: []string{`W/"abc", "def"`}, want: Precondition{ETags: []string{"abc", "def"}}},
		{name: "two headers", header: []string{`"abc"`, `"def"`}, want: Precondition{ETags: []string{"abc", "def"}}},
		{name: "body only", body: str("abc"), want: Precondition{ETags: []string{"abc"}}},
		{name: "body quoted", body: str(`"abc"`), want: Precondition{ETags: []string{"abc"}}},
		{name: "body and the same header", header: []string{`"abc"`}, body: str("abc"), want: Precondition{ETags: []string{"abc"}}},
		{name: "body narrows any", header: []string{"*"}, body: str("abc"), want: Precondition{ETags: []string{"abc"}}},
		{name: "body and another header", header: []string{`"abc"`}, body: str("def"), badField: "etag"},
		{name: "empty body etag", body: str(""), badField: "etag"},
		{name: "empty quoted", header: []string{`""`}, badField: "If-Match"},
		{name: "too many", header: []string{`"1","2","3","4","5","6","7","8","9","10","11","12","13","14","15","16","17"`}, badField: "If-Match"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ParseIfMatch(tc.header, tc.body)
			if tc.badField != "" {
				g.Expect(err).NotTo(BeNil())
				g.Expect(err.Code).To(Equal(http.StatusBadRequest))
				g.Expect(err.Violations).To(HaveLen(1))
				g.Expect(err.Violations[0].Field).To(Equal(tc.badField))
				return
			}
			g.Expect(err).To(BeNil())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestPreconditionMatches(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Precondition{}.Matches("x")).To(BeTrue())
	g.Expect(Precondition{Any: true}.Matches("x")).To(BeTrue())
	g.Expect(Precondition{ETags: []string{"a", "x"}}.Matches("x")).To(BeTrue())
	g.Expect(Precondition{ETags: []string{"a"}}.Matches("x")).To(BeFalse())
	e := PreconditionFailed("vmcluster", "c1", "now")
	g.Expect(e.Code).To(Equal(http.StatusPreconditionFailed))
	g.Expect(e.Reason).To(Equal(ReasonETagMismatch))
}
