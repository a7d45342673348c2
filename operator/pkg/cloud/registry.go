package cloud

import (
	"fmt"
	"sort"
	"strings"
)

// ClusterIdentity is the cloud identity of a cluster that a request does
// not carry (GKE project, AKS subscription and resource group, ACK cluster
// id), from configuration.
type ClusterIdentity struct {
	Project        string `json:"project,omitempty"`
	SubscriptionID string `json:"subscriptionID,omitempty"`
	ResourceGroup  string `json:"resourceGroup,omitempty"`
	ClusterID      string `json:"clusterID,omitempty"`
}

// Registry holds the configured providers and the identity mapping. It is
// how the operator and the apiserver get a Provider and a ClusterRef for a
// request's cloudProvider, k8sClusterName and region.
type Registry struct {
	providers map[string]Provider
	// Defaults are per provider (e.g. one GCP project for every cluster).
	Defaults map[string]ClusterIdentity
	// Clusters are per "provider/region/name", overriding Defaults.
	Clusters map[string]ClusterIdentity
	// Observe, when set, is told of every call of a provider Resolve
	// returns (the one place providers are wrapped, for metrics).
	Observe CallObserver
}

// NewRegistry returns a registry with the given providers.
func NewRegistry(providers ...Provider) *Registry {
	r := &Registry{providers: map[string]Provider{}, Defaults: map[string]ClusterIdentity{}, Clusters: map[string]ClusterIdentity{}}
	for _, p := range providers {
		r.providers[p.Name()] = p
	}
	return r
}

// Register adds or replaces a provider.
func (r *Registry) Register(p Provider) { r.providers[p.Name()] = p }

// Names lists the configured providers.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.providers))
	for n := range r.providers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ClusterKey is the key of Clusters.
func ClusterKey(provider, region, name string) string {
	return provider + "/" + region + "/" + name
}

// Resolve returns the provider and the full reference of a cluster, or an
// Unsupported/Permanent error that says what configuration is missing.
func (r *Registry) Resolve(provider, name, region string) (Provider, ClusterRef, error) {
	p, ok := r.providers[provider]
	if !ok {
		return nil, ClusterRef{}, &Error{Kind: Unsupported, Provider: provider,
			Message: fmt.Sprintf("cloud provider %q is not configured (configured: %s)", provider, strings.Join(r.Names(), ", "))}
	}
	id := r.Defaults[provider]
	if c, ok := r.Clusters[ClusterKey(provider, region, name)]; ok {
		id = merge(id, c)
	}
	ref := ClusterRef{Provider: provider, Name: name, Region: region,
		Project: id.Project, SubscriptionID: id.SubscriptionID, ResourceGroup: id.ResourceGroup, ClusterID: id.ClusterID}
	var missing []string
	switch provider {
	case GKE:
		if ref.Project == "" {
			missing = append(missing, "project")
		}
	case AKS:
		if ref.SubscriptionID == "" {
			missing = append(missing, "subscriptionID")
		}
		if ref.ResourceGroup == "" {
			missing = append(missing, "resourceGroup")
		}
	case ACK:
		if ref.ClusterID == "" {
			missing = append(missing, "clusterID")
		}
	}
	if len(missing) > 0 {
		return nil, ClusterRef{}, &Error{Kind: Permanent, Provider: provider,
			Message: fmt.Sprintf("no %s configured for %s cluster %q in region %q (see docs/providers/%s.md)", strings.Join(missing, ", "), provider, name, region, provider)}
	}
	if r.Observe != nil {
		p = observe(p, r.Observe)
	}
	return p, ref, nil
}

func merge(base, over ClusterIdentity) ClusterIdentity {
	if over.Project != "" {
		base.Project = over.Project
	}
	if over.SubscriptionID != "" {
		base.SubscriptionID = over.SubscriptionID
	}
	if over.ResourceGroup != "" {
		base.ResourceGroup = over.ResourceGroup
	}
	if over.ClusterID != "" {
		base.ClusterID = over.ClusterID
	}
	return base
}
