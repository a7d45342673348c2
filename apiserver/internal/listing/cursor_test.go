package listing

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
)

func TestCursor(t *testing.T) {
	g := NewWithT(t)
	raw := func(js string) string { return base64.RawURLEncoding.EncodeToString([]byte(js)) }

	// The tokens the backups, restores and operations lists have always
	// issued: a client's token stays valid.
	tok := Cursor{Created: 100, Name: "backup-a", VMCluster: "uid-1"}.Token()
	g.Expect(tok).To(Equal(raw(`{"v":1,"c":100,"n":"backup-a","m":"uid-1"}`)))
	g.Expect(Cursor{Created: 100, Name: "op-a", VMCluster: "uid-1", Filter: "Restart/"}.Token()).
		To(Equal(raw(`{"v":1,"c":100,"n":"op-a","m":"uid-1","f":"Restart/"}`)))

	c, err := DecodeCursor(tok)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c).To(Equal(&Cursor{Version: 1, Created: 100, Name: "backup-a", VMCluster: "uid-1"}))
	g.Expect(c.Key()).To(Equal(&Key{Created: 100, Name: "backup-a"}))
	g.Expect((*Cursor)(nil).Key()).To(BeNil(), "the first page")

	for name, tok := range map[string]string{
		"garbage":            "abc",
		"another version":    raw(`{"v":2,"c":1,"n":"a","m":"u"}`),
		"no version":         raw(`{"c":1,"n":"a","m":"u"}`),
		"no name":            raw(`{"v":1,"c":1,"m":"u"}`),
		"not an object name": raw(`{"v":1,"c":1,"n":"A_b","m":"u"}`),
		"no vmcluster":       raw(`{"v":1,"c":1,"n":"a"}`),
		"an unknown field":   raw(`{"v":1,"c":1,"n":"a","m":"u","x":1}`),
	} {
		_, err := DecodeCursor(tok)
		g.Expect(err).To(MatchError(ErrInvalid), name)
	}
}

func TestCursorCheck(t *testing.T) {
	g := NewWithT(t)
	g.Expect((*Cursor)(nil).Check("uid-1", "")).To(Succeed(), "the first page is every list's")
	c := &Cursor{Version: 1, Name: "a", VMCluster: "uid-1", Filter: "Restart/"}
	g.Expect(c.Check("uid-1", "Restart/")).To(Succeed())
	for _, other := range [][2]string{{"uid-2", "Restart/"}, {"uid-1", ""}, {"uid-1", "Restart/Failed"}} {
		err := c.Check(other[0], other[1])
		e, ok := apierror.As(err)
		g.Expect(ok).To(BeTrue(), "%v", other)
		g.Expect(e.Code).To(Equal(http.StatusBadRequest))
		g.Expect(e.Message).To(Equal("the list request is invalid"))
		g.Expect(e.Violations).To(Equal([]apierror.FieldViolation{apierror.Violation("page_token", "%v", ErrInvalid)}))
	}
}

func TestParseCursor(t *testing.T) {
	g := NewWithT(t)
	tok := Cursor{Created: 1, Name: "a", VMCluster: "u"}.Token()
	size, after, v := SnakeCase.ParseCursor(url.Values{"page_size": {"2"}, "page_token": {tok}})
	g.Expect(v).To(BeEmpty())
	g.Expect(size).To(Equal(2))
	g.Expect(after).To(Equal(&Cursor{Version: 1, Created: 1, Name: "a", VMCluster: "u"}))

	size, after, v = SnakeCase.ParseCursor(url.Values{})
	g.Expect(v).To(BeEmpty())
	g.Expect(size).To(Equal(DefaultPageSize))
	g.Expect(after).To(BeNil(), "the first page")

	_, _, v = SnakeCase.ParseCursor(url.Values{"page_size": {"x"}, "page_token": {"y"}})
	g.Expect(v).To(HaveLen(2))
	g.Expect(v[0].Field).To(Equal("page_size"))
	g.Expect(v[1].Field).To(Equal("page_token"))
}
