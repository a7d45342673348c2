package vmclusters_test

import (
	"net/url"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
)

func TestParseListWatch(t *testing.T) {
	for _, tc := range []struct {
		name       string
		query      string
		wantWatch  bool
		violations []string
	}{
		{"a page", "page_size=10", false, nil},
		{"a watch", "watch=true&status=RUNNING", true, nil},
		{"a resumed watch", "watch=1&resource_version=42", true, nil},
		{"not a boolean", "watch=yes", false, []string{"watch"}},
		{"no pages in a watch", "watch=true&page_size=5&page_token=x", true, []string{"page_size", "page_token"}},
		{"resume without watch", "resource_version=42", false, []string{"resource_version"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			q, err := url.ParseQuery(tc.query)
			g.Expect(err).NotTo(HaveOccurred())
			req, verr := vmclusters.ParseList(q)
			if len(tc.violations) == 0 {
				g.Expect(verr).To(BeNil())
				g.Expect(req.Watch).To(Equal(tc.wantWatch))
				return
			}
			g.Expect(verr).NotTo(BeNil())
			var fields []string
			for _, v := range verr.Violations {
				fields = append(fields, v.Field)
			}
			g.Expect(fields).To(ContainElements(tc.violations))
		})
	}
}
