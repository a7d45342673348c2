package upgrades

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/apiserver/internal/server/servertest"
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
		got, want, err := servertest.PageBodies(out.UpgradeOperations, out.NextPageToken, listPage, out)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(want))
	}
}
