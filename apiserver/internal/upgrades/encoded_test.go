package upgrades

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/apiserver/internal/server"
)

// The list handler joins the views' kept encodings: its answer is what
// c.JSON writes of the ListResponse (a field added to ListResponse fails
// here until the handler writes it), with and without a next page.
func TestListAnswerIsListResponse(t *testing.T) {
	g := NewWithT(t)
	created := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	ops := []Operation{
		{ID: "u1", Name: "op-a", Namespace: "ops", Phase: "Running", Message: "step <1> & more", Steps: []Step{}, CreateTime: &created, Approved: []string{"g1"}},
		{ID: "u2", Name: "op-b", Namespace: "ops", Phase: "Pending"},
	}
	for _, out := range []ListResponse{{UpgradeOperations: ops}, {UpgradeOperations: ops[:1], NextPageToken: "tok"}, {UpgradeOperations: []Operation{}}} {
		var encoded []*server.Encoded[Operation]
		for _, o := range out.UpgradeOperations {
			encoded = append(encoded, server.Encode(o))
		}
		e := echo.New()
		want, got := httptest.NewRecorder(), httptest.NewRecorder()
		g.Expect(e.NewContext(httptest.NewRequest(http.MethodGet, "/", nil), want).JSON(http.StatusOK, out)).To(Succeed())
		g.Expect(server.WritePage(e.NewContext(httptest.NewRequest(http.MethodGet, "/", nil), got), listPage(encoded, out.NextPageToken))).To(Succeed())
		g.Expect(got.Body.String()).To(Equal(want.Body.String()))
	}
}
