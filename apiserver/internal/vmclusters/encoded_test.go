package vmclusters

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/apiserver/internal/server/servertest"
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
		got, want, err := servertest.PageBodies(out.VMClusters, out.NextPageToken, listPage, out)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(want))
	}
}
