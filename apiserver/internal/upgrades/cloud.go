package upgrades

import (
	"context"
	"net/url"
	"strings"
	"time"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// CloudTimeout bounds one cloud read.
const CloudTimeout = 30 * time.Second

// ClusterQuery is the validated query of /nodeGroups and /addons.
type ClusterQuery struct {
	K8sClusterName string
	Region         string
	CloudProvider  string
}

// ParseClusterQuery checks the three required parameters, naming each one
// missing or invalid.
func ParseClusterQuery(q url.Values, addons bool) (ClusterQuery, *apierror.Error) {
	c := ClusterQuery{K8sClusterName: q.Get("k8sClusterName"), Region: q.Get("region"), CloudProvider: q.Get("cloudProvider")}
	var v []apierror.FieldViolation
	check := func(field, value string, max int) {
		switch {
		case value == "":
			v = append(v, apierror.Violation(field, "is required"))
		case len(value) > max || !dnsLabel.MatchString(value):
			v = append(v, apierror.Violation(field, "must consist of lowercase letters, digits and '-' (at most %d characters)", max))
		}
	}
	if c.K8sClusterName == "" {
		v = append(v, apierror.Violation("k8sClusterName", "is required"))
	} else if nr, _ := opsv1.ClusterNameRule(opsv1.CloudProvider(c.CloudProvider)); nr.Check(c.K8sClusterName) != "" {
		v = append(v, apierror.Violation("k8sClusterName", "%s", nr.Check(c.K8sClusterName)))
	}
	check("region", c.Region, maxLabel)
	switch {
	case c.CloudProvider == "":
		v = append(v, apierror.Violation("cloudProvider", "is required (one of %s)", strings.Join(providers, ", ")))
	case !oneOf(c.CloudProvider, providers):
		v = append(v, apierror.Violation("cloudProvider", "must be one of %s", strings.Join(providers, ", ")))
	case addons && !opsv1.CloudProvider(c.CloudProvider).SupportsClusterAddons():
		v = append(v, apierror.Violation("cloudProvider", "cluster addons are not supported by this provider (%s); only eks, ack and mock have them", c.CloudProvider))
	}
	if len(v) > 0 {
		sortViolations(v)
		return c, apierror.InvalidArgument("invalid cluster query", v...)
	}
	return c, nil
}

// NodeGroups lists a cluster's node groups from the cloud.
func (s *Service) NodeGroups(ctx context.Context, q ClusterQuery) ([]NodeGroup, error) {
	p, ref, err := s.resolve(q)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, CloudTimeout)
	defer cancel()
	groups, err := p.ListNodeGroups(ctx, ref)
	if err != nil {
		return nil, apierror.FromCloud(err)
	}
	out := make([]NodeGroup, 0, len(groups))
	for _, g := range groups {
		ng := NodeGroup{Name: g.Name, Version: g.Version, Status: g.Status, DesiredSize: g.DesiredSize, MinSize: g.MinSize, MaxSize: g.MaxSize, InstanceTypes: g.InstanceTypes, Labels: g.Labels}
		for _, t := range g.Taints {
			ng.Taints = append(ng.Taints, Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
		}
		out = append(out, ng)
	}
	return out, nil
}

// Addons lists a cluster's addons from the cloud.
func (s *Service) Addons(ctx context.Context, q ClusterQuery) ([]ClusterAddon, error) {
	p, ref, err := s.resolve(q)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, CloudTimeout)
	defer cancel()
	addons, err := p.ListAddons(ctx, ref)
	if err != nil {
		return nil, apierror.FromCloud(err)
	}
	out := make([]ClusterAddon, 0, len(addons))
	for _, a := range addons {
		out = append(out, ClusterAddon{Name: a.Name, Version: a.Version, Status: a.Status, AvailableVersions: a.AvailableVersions})
	}
	return out, nil
}

func (s *Service) resolve(q ClusterQuery) (cloud.Provider, cloud.ClusterRef, error) {
	if s.Providers == nil {
		return nil, cloud.ClusterRef{}, apierror.InvalidArgument("no cloud provider is configured",
			apierror.Violation("cloudProvider", "cloud provider %s is not configured on this server", q.CloudProvider))
	}
	p, ref, err := s.Providers.Resolve(q.CloudProvider, q.K8sClusterName, q.Region)
	if err != nil {
		return nil, ref, apierror.FromCloudResolve(err)
	}
	return p, ref, nil
}
