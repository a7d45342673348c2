package vmclusters

import (
	"context"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/tidbcloud/ops-server/apiserver/internal/objindex"
	"github.com/tidbcloud/ops-server/apiserver/internal/server"
)

// ReleaseIndex holds the managed HelmReleases of one namespace (the
// informer's own objects, read only), by name and UID, and sorted by name.
type ReleaseIndex = objindex.Index[*helmv2.HelmRelease]

// NewReleaseIndex registers the index's handlers on the HelmRelease
// informer (before or after the cache starts).
func NewReleaseIndex(ctx context.Context, c cache.Cache, namespace string) (*ReleaseIndex, error) {
	return objindex.New[*helmv2.HelmRelease](ctx, c, namespace, nil)
}

// Views keeps the API views of the indexed releases, with their JSON
// encodings, per release version: translating a release (its applied
// values above all) and encoding the view are most of the cost of a read.
type Views struct {
	brief, full *objindex.Memo[*server.Encoded[VMCluster]]
}

// NewViews keeps the views of the releases of x.
func NewViews(x *ReleaseIndex) *Views {
	return &Views{brief: objindex.NewMemo[*server.Encoded[VMCluster]](x), full: objindex.NewMemo[*server.Encoded[VMCluster]](x)}
}

// encoded is Translator.View of hr and its encoding, kept per version
// when s.Views is set. The result is shared: callers must not modify it.
func (s *Service) encoded(hr *helmv2.HelmRelease, full bool) *server.Encoded[VMCluster] {
	derive := func() *server.Encoded[VMCluster] { return server.Encode(s.Translator.View(hr, full)) }
	if s.Views == nil {
		return derive()
	}
	m := s.Views.brief
	if full {
		m = s.Views.full
	}
	return m.Get(hr, derive)
}
