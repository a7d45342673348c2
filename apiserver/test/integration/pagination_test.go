package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"sync"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
)

// TestPagination walks 120 vmclusters in pages of 50. They come from a
// repository nobody serves, so Flux never installs them (they stay
// CREATING, waiting for their source, which backs off) and they cost the
// Flux controllers next to nothing; the test deletes them when done.
func TestPagination(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	s := startServer(t, ns, func(c *config.Config) { c.Chart.Repository = deadRepository })
	t.Cleanup(func() {
		_ = env.Client.DeleteAllOf(ctx, &helmv2.HelmRelease{}, client.InNamespace(ns))
		_ = env.Client.DeleteAllOf(ctx, &sourcev1.HelmRepository{}, client.InNamespace(ns))
	})

	const n = 120
	var want []string
	for i := 0; i < n; i++ {
		want = append(want, fmt.Sprintf("vmclusters/p-%03d", i))
	}
	// Create them out of order, a few at a time.
	order := make(chan int, n)
	for i := 0; i < n; i++ {
		order <- (i * 7) % n
	}
	close(order)
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range order {
				code, b := s.do(http.MethodPost, vmclusters.BasePath, map[string]any{"name": fmt.Sprintf("p-%03d", i)})
				if code != http.StatusAccepted {
					t.Errorf("POST p-%03d: %d %s", i, code, b)
				}
			}
		}()
	}
	wg.Wait()
	g.Expect(t.Failed()).To(BeFalse())

	walk := func(query url.Values) ([]string, []int) {
		var names []string
		var sizes []int
		for page := 0; ; page++ {
			g.Expect(page).To(BeNumerically("<", 10), "too many pages")
			code, b := s.do(http.MethodGet, vmclusters.BasePath+"?"+query.Encode(), nil)
			g.Expect(code).To(Equal(http.StatusOK), string(b))
			resp := decode[vmclusters.ListResponse](t, b)
			sizes = append(sizes, len(resp.VMClusters))
			for _, v := range resp.VMClusters {
				names = append(names, v.Name)
				g.Expect(v.Values).To(BeNil())
			}
			if resp.NextPageToken == "" {
				return names, sizes
			}
			query.Set("page_token", resp.NextPageToken)
		}
	}

	// Eventually: the cache may still be catching up with the last POSTs.
	g.Eventually(func() []string {
		names, _ := walk(url.Values{"page_size": {"1000"}})
		return names
	}).Should(HaveLen(n))

	names, sizes := walk(url.Values{"page_size": {"50"}})
	g.Expect(sizes).To(Equal([]int{50, 50, 20}))
	g.Expect(names).To(Equal(want), "every vmcluster once, in name order")
	g.Expect(sort.StringsAreSorted(names)).To(BeTrue())

	// The default page size is 50.
	names, sizes = walk(url.Values{})
	g.Expect(sizes).To(Equal([]int{50, 50, 20}))
	g.Expect(names).To(Equal(want))

	// The status filter, with its own tokens.
	names, sizes = walk(url.Values{"page_size": {"50"}, "status": {"CREATING"}})
	g.Expect(sizes).To(Equal([]int{50, 50, 20}))
	g.Expect(names).To(Equal(want))
	names, _ = walk(url.Values{"status": {"RUNNING"}})
	g.Expect(names).To(BeEmpty())

	// A token only works with the filter it was issued for.
	code, b := s.do(http.MethodGet, vmclusters.BasePath+"?page_size=50", nil)
	g.Expect(code).To(Equal(http.StatusOK))
	tok := decode[vmclusters.ListResponse](t, b).NextPageToken
	g.Expect(tok).NotTo(BeEmpty())
	code, b = s.do(http.MethodGet, vmclusters.BasePath+"?status=RUNNING&page_token="+url.QueryEscape(tok), nil)
	g.Expect(code).To(Equal(http.StatusBadRequest), string(b))
	g.Expect(violations(t, b)).To(ConsistOf("page_token"))
}
