package vmclusters

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/apiserver/internal/server"
)

// The list handler joins the views' kept encodings: its answer is what
// c.JSON writes of the ListResponse (a field added to ListResponse fails
// here until the handler writes it), with and without a next page.
func TestListAnswerIsListResponse(t *testing.T) {
	g := NewWithT(t)
	views := []VMCluster{
		{Name: "vmclusters/a", ID: "u1", Status: "RUNNING", Endpoints: map[string]string{"insert": "http://a<b>"}, Values: json.RawMessage(`{"x": 1}`), ETag: `"e"`},
		{Name: "vmclusters/b", ID: "u2", Status: "CREATING", StatusMessage: "waiting & so on"},
	}
	for _, out := range []ListResponse{{VMClusters: views}, {VMClusters: views[:1], NextPageToken: "tok"}} {
		var encoded []*server.Encoded[VMCluster]
		for _, v := range out.VMClusters {
			encoded = append(encoded, server.Encode(v))
		}
		e := echo.New()
		want, got := httptest.NewRecorder(), httptest.NewRecorder()
		g.Expect(e.NewContext(httptest.NewRequest(http.MethodGet, "/", nil), want).JSON(http.StatusOK, out)).To(Succeed())
		g.Expect(server.WritePage(e.NewContext(httptest.NewRequest(http.MethodGet, "/", nil), got), listPage(encoded, out.NextPageToken))).To(Succeed())
		g.Expect(got.Body.String()).To(Equal(want.Body.String()))
	}
}
