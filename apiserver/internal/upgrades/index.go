package upgrades

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// Field indexes of the informer cache (see IndexFields).
const (
	// uidIndex finds an operation by the id the API returns (its UID).
	uidIndex = "metadata.uid"
	// clusterIndex finds the operations of one Kubernetes cluster: a
	// cache index, and the CRD's selectable field of the same path that
	// the API server filters on (the lock's reads, lock.go).
	clusterIndex = opsv1.ClusterNameField
)

// IndexFields registers the cache indexes a Service with Indexed set
// reads through: a get by id and a list filtered by k8sClusterName then
// touch only the matching operations instead of every one of the
// namespace.
func IndexFields(ctx context.Context, c cache.Cache) error {
	obj := &opsv1.ClusterUpgradeOperation{}
	if err := c.IndexField(ctx, obj, uidIndex, func(o client.Object) []string {
		return []string{string(o.GetUID())}
	}); err != nil {
		return err
	}
	return c.IndexField(ctx, obj, clusterIndex, func(o client.Object) []string {
		return []string{o.(*opsv1.ClusterUpgradeOperation).Spec.K8sClusterName}
	})
}
