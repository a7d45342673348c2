// Package vmclusterstest holds what the integration tests of the packages
// that read vmclusters share: the informer cache ops-apiserver builds
// (internal/app), on a test environment.
package vmclusterstest

import (
	"context"
	"errors"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/cachetrim"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

// StartCache starts, until ctx ends, an informer cache of env as
// ops-apiserver's: the HelmReleases it manages, indexed by UID, and
// informers for the extra kinds, each trimmed as app.New trims it
// (cachetrim); it returns once the cache has synced.
func StartCache(ctx context.Context, env *testenv.Environment, extra ...client.Object) (cache.Cache, error) {
	c, err := cache.New(env.Config, cache.Options{
		Scheme: env.Scheme,
		ByObject: map[client.Object]cache.ByObject{
			&helmv2.HelmRelease{}: {
				Label:     labels.SelectorFromSet(labels.Set{vmclusters.LabelManagedBy: vmclusters.ManagedBy}),
				Transform: cachetrim.Releases(),
			},
			&opsv1.ClusterUpgradeOperation{}: {Transform: cachetrim.Operations()},
		},
		DefaultTransform: cachetrim.Others(),
	})
	if err != nil {
		return nil, err
	}
	if err := vmclusters.IndexUID(ctx, c); err != nil {
		return nil, err
	}
	for _, obj := range append([]client.Object{&helmv2.HelmRelease{}}, extra...) {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			return nil, err
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, errors.New("the informer cache did not sync")
	}
	return c, nil
}
