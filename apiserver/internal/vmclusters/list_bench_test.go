package vmclusters

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
)

// listStore serves List from a fixed set, sorted by name, the way
// ReleaseIndex does (its shared snapshot).
type listStore struct {
	Store
	items []*helmv2.HelmRelease
}

func (s *listStore) List(context.Context) ([]*helmv2.HelmRelease, error) {
	out := slices.Clone(s.items)
	slices.SortFunc(out, func(a, b *helmv2.HelmRelease) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// BenchmarkList lists the first page of 50 of 1000 vmclusters, the read
// path of make bench, without HTTP.
func BenchmarkList(b *testing.B) {
	tr := Translator{Namespace: "obs", Chart: ChartSource{Name: "vmcluster", DefaultVersion: "0.1.0", URL: "https://charts.example/vm"}}
	st := &listStore{}
	for i := range 1000 {
		hr := tr.Release(CreateRequest{Name: fmt.Sprintf("vmcluster-%04d", (i*7919)%1000), Values: []byte(`{"vmstorage":{"replicaCount":3}}`)}, now)
		st.items = append(st.items, hr)
	}
	svc := &Service{Store: st, Translator: tr}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := svc.List(ctx, ListRequest{PageSize: 50})
		if err != nil || len(resp.VMClusters) != 50 {
			b.Fatal(err, len(resp.VMClusters))
		}
	}
}
