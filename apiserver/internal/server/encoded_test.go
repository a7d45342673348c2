package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/labstack/echo/v4"
	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/apiserver/internal/server"
)

type item struct {
	Name   string            `json:"name"`
	Note   string            `json:"note,omitempty"`
	Labels map[string]string `json:"labels"`
	Values json.RawMessage   `json:"values,omitempty"`
}

type itemList struct {
	Items []item `json:"items"`
	Next  string `json:"next_page_token,omitempty"`
}

// answer runs write on a request to target and returns the recorded
// response.
func answer(e *echo.Echo, target string, write func(echo.Context) error) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	c := e.NewContext(httptest.NewRequest(http.MethodGet, target, nil), rec)
	if err := write(c); err != nil {
		panic(err)
	}
	return rec
}

// The kept encodings are answered byte for byte as c.JSON answers the
// views: one item, and pages with and without a next-page token, with
// characters encoding/json escapes (HTML, U+2028) and raw values that
// are not compact.
func TestEncodedAnswersAreCJSONs(t *testing.T) {
	g := NewWithT(t)
	items := []item{
		{Name: "a<b>&c", Labels: map[string]string{"z": "1", "a": "\u2028"}, Values: json.RawMessage(`{ "x" : [1, 2] }`)},
		{Name: "plain", Note: "é", Labels: nil},
		{Name: "", Labels: map[string]string{}},
	}
	for _, target := range []string{"/x", "/x?pretty"} {
		for _, e := range []*echo.Echo{echo.New(), func() *echo.Echo { d := echo.New(); d.Debug = true; return d }()} {
			for _, it := range items {
				want := answer(e, target, func(c echo.Context) error { return c.JSON(http.StatusAccepted, it) })
				got := answer(e, target, func(c echo.Context) error { return server.WriteEncoded(c, http.StatusAccepted, server.Encode(it)) })
				sameAnswer(g, got, want)
			}
			for _, page := range []itemList{{Items: items}, {Items: items[:1], Next: "tok<&>\"en"}, {Items: []item{}}} {
				enc := make([]*server.Encoded[item], 0, len(page.Items))
				for _, it := range page.Items {
					enc = append(enc, server.Encode(it))
				}
				want := answer(e, target, func(c echo.Context) error { return c.JSON(http.StatusOK, page) })
				got := answer(e, target, func(c echo.Context) error {
					return server.WritePage(c, server.Page[item]{Field: "items", TokenField: "next_page_token", Items: enc, Token: page.Next, Value: func() any { return page }})
				})
				sameAnswer(g, got, want)
			}
		}
	}
}

// A view that cannot be encoded is answered through c.JSON, which
// reports the error as it did before views were encoded once.
func TestUnencodableViewFallsBackToCJSON(t *testing.T) {
	g := NewWithT(t)
	bad := item{Name: "x", Values: json.RawMessage(`{not json`)}
	enc := server.Encode(bad)
	g.Expect(enc.JSON).To(BeNil())
	e := echo.New()
	c := e.NewContext(httptest.NewRequest(http.MethodGet, "/x", nil), httptest.NewRecorder())
	g.Expect(server.WriteEncoded(c, http.StatusOK, enc)).To(MatchError(ContainSubstring("invalid character")))
	c = e.NewContext(httptest.NewRequest(http.MethodGet, "/x", nil), httptest.NewRecorder())
	g.Expect(server.WritePage(c, server.Page[item]{Field: "items", Items: []*server.Encoded[item]{server.Encode(items0()), enc}, Value: func() any { return itemList{Items: []item{items0(), bad}} }})).
		To(MatchError(ContainSubstring("invalid character")))
}

func items0() item { return item{Name: "ok"} }

// sameAnswer expects got to be want: its code, headers and body, and, on
// the kept bytes' path, a Content-Length that is the body's (c.JSON
// leaves the length to net/http).
func sameAnswer(g Gomega, got, want *httptest.ResponseRecorder) {
	g.Expect(got.Code).To(Equal(want.Code))
	g.Expect(got.Body.String()).To(Equal(want.Body.String()))
	if n := got.Header().Get(echo.HeaderContentLength); n != "" {
		g.Expect(n).To(Equal(strconv.Itoa(got.Body.Len())))
		got.Header().Del(echo.HeaderContentLength)
	}
	g.Expect(got.Header()).To(Equal(want.Header()))
}
