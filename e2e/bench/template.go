package bench

import (
	"context"
	"fmt"
	"maps"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// vmTemplate is a vmcluster as ops-apiserver created it: its HelmRelease
// and HelmRepository, read back from kube-apiserver. The direct side of
// every comparison creates copies of these, so both sides write the same
// objects without this package repeating the API's translation.
type vmTemplate struct {
	hr   *helmv2.HelmRelease
	repo *sourcev1.HelmRepository
}

// loadVMTemplate reads the objects of the API-created vmcluster name.
func loadVMTemplate(ctx context.Context, c client.Reader, namespace, name string) (*vmTemplate, error) {
	t := &vmTemplate{hr: &helmv2.HelmRelease{}, repo: &sourcev1.HelmRepository{}}
	key := client.ObjectKey{Namespace: namespace, Name: name}
	if err := c.Get(ctx, key, t.hr); err != nil {
		return nil, fmt.Errorf("reading the HelmRelease of vmcluster %s: %w", name, err)
	}
	if err := c.Get(ctx, key, t.repo); err != nil {
		return nil, fmt.Errorf("reading the HelmRepository of vmcluster %s: %w", name, err)
	}
	return t, nil
}

// renamed copies labels, replacing every value equal to from by to (the
// vmcluster-name label).
func renamed(labels map[string]string, from, to string) map[string]string {
	if labels == nil {
		return nil
	}
	out := maps.Clone(labels)
	for k, v := range out {
		if v == from {
			out[k] = to
		}
	}
	return out
}

// release returns a copy of the HelmRelease for vmcluster name in
// namespace. Without labels it is a plain HelmRelease, not a vmcluster.
func (t *vmTemplate) releaseFor(namespace, name string, labels bool) *helmv2.HelmRelease {
	src := t.hr
	hr := &helmv2.HelmRelease{
		TypeMeta: src.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   namespace,
			Annotations: maps.Clone(src.Annotations),
		},
		Spec: *src.Spec.DeepCopy(),
	}
	if labels {
		hr.Labels = renamed(src.Labels, src.Name, name)
	}
	if hr.Annotations != nil {
		if _, ok := hr.Annotations[meta.ReconcileRequestAnnotation]; ok {
			hr.Annotations[meta.ReconcileRequestAnnotation] = time.Now().UTC().Format(time.RFC3339Nano)
		}
	}
	if hr.Spec.ReleaseName == src.Name {
		hr.Spec.ReleaseName = name
	}
	if hr.Spec.Chart != nil && hr.Spec.Chart.Spec.SourceRef.Name == src.Name {
		hr.Spec.Chart.Spec.SourceRef.Name = name
	}
	return hr
}

// repository returns a copy of the HelmRepository for hr (created, so its
// UID is known), owned by hr as the API's is.
func (t *vmTemplate) repositoryFor(hr *helmv2.HelmRelease, labels bool) *sourcev1.HelmRepository {
	src := t.repo
	repo := &sourcev1.HelmRepository{
		TypeMeta: src.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:        hr.Name,
			Namespace:   hr.Namespace,
			Annotations: maps.Clone(src.Annotations),
		},
		Spec: *src.Spec.DeepCopy(),
	}
	if labels {
		repo.Labels = renamed(src.Labels, src.Name, hr.Name)
	}
	if repo.Annotations != nil {
		if _, ok := repo.Annotations[meta.ReconcileRequestAnnotation]; ok {
			repo.Annotations[meta.ReconcileRequestAnnotation] = time.Now().UTC().Format(time.RFC3339Nano)
		}
	}
	for _, o := range src.OwnerReferences {
		o.Name, o.UID = hr.Name, hr.UID
		o.Controller = ptr.To(o.Controller != nil && *o.Controller)
		repo.OwnerReferences = append(repo.OwnerReferences, o)
	}
	return repo
}

// create creates the HelmRelease and HelmRepository of a
// vmcluster directly, as a user without ops-server would.
func (t *vmTemplate) create(ctx context.Context, c client.Client, namespace, name string, labels bool) error {
	hr := t.releaseFor(namespace, name, labels)
	if err := c.Create(ctx, hr); err != nil {
		return fmt.Errorf("creating HelmRelease %s/%s: %w", namespace, name, err)
	}
	if err := c.Create(ctx, t.repositoryFor(hr, labels)); err != nil {
		return fmt.Errorf("creating HelmRepository %s/%s: %w", namespace, name, err)
	}
	return nil
}

// upgradeCopy returns a copy of an API-created ClusterUpgradeOperation for
// another cluster, in namespace (the name generated from the same prefix).
func upgradeCopy(src *opsv1.ClusterUpgradeOperation, namespace, cluster string) *opsv1.ClusterUpgradeOperation {
	op := &opsv1.ClusterUpgradeOperation{
		TypeMeta: src.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: src.GenerateName,
			Namespace:    namespace,
			Labels:       renamed(src.Labels, src.Spec.K8sClusterName, cluster),
			Annotations:  maps.Clone(src.Annotations),
		},
		Spec: *src.Spec.DeepCopy(),
	}
	if op.GenerateName == "" {
		op.GenerateName = "upgrade-"
	}
	op.Spec.K8sClusterName = cluster
	return op
}
