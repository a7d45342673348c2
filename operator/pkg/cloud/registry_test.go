package cloud_test

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

func TestRegistryResolve(t *testing.T) {
	newRegistry := func() *cloud.Registry {
		reg := cloud.NewRegistry(&plainProvider{name: cloud.EKS}, &plainProvider{name: cloud.GKE}, &plainProvider{name: cloud.AKS})
		reg.Register(&plainProvider{name: cloud.ACK})
		reg.Defaults[cloud.GKE] = cloud.ClusterIdentity{Project: "default-project"}
		reg.Defaults[cloud.AKS] = cloud.ClusterIdentity{SubscriptionID: "sub-default", ResourceGroup: "rg-default"}
		reg.Clusters[cloud.ClusterKey(cloud.GKE, "europe-west1", "prod")] = cloud.ClusterIdentity{Project: "prod-project"}
		reg.Clusters[cloud.ClusterKey(cloud.AKS, "westeurope", "prod")] = cloud.ClusterIdentity{ResourceGroup: "rg-prod"}
		reg.Clusters[cloud.ClusterKey(cloud.ACK, "cn-hangzhou", "prod")] = cloud.ClusterIdentity{ClusterID: "c-123"}
		return reg
	}
	cases := []struct {
		name                   string
		provider, cluster, reg string
		want                   cloud.ClusterRef
		kind                   cloud.ErrorKind // "" for success
		message                string
	}{
		{name: "eks needs no identity", provider: cloud.EKS, cluster: "prod", reg: "eu-west-1",
			want: cloud.ClusterRef{Provider: cloud.EKS, Name: "prod", Region: "eu-west-1"}},
		{name: "gke default project", provider: cloud.GKE, cluster: "staging", reg: "europe-west1",
			want: cloud.ClusterRef{Provider: cloud.GKE, Name: "staging", Region: "europe-west1", Project: "default-project"}},
		{name: "gke per-cluster project wins", provider: cloud.GKE, cluster: "prod", reg: "europe-west1",
			want: cloud.ClusterRef{Provider: cloud.GKE, Name: "prod", Region: "europe-west1", Project: "prod-project"}},
		{name: "aks per-cluster resource group over the default subscription", provider: cloud.AKS, cluster: "prod", reg: "westeurope",
			want: cloud.ClusterRef{Provider: cloud.AKS, Name: "prod", Region: "westeurope", SubscriptionID: "sub-default", ResourceGroup: "rg-prod"}},
		{name: "ack cluster id", provider: cloud.ACK, cluster: "prod", reg: "cn-hangzhou",
			want: cloud.ClusterRef{Provider: cloud.ACK, Name: "prod", Region: "cn-hangzhou", ClusterID: "c-123"}},
		{name: "ack without a cluster id", provider: cloud.ACK, cluster: "prod", reg: "cn-beijing", kind: cloud.Permanent,
			message: `ack: no clusterID configured for ack cluster "prod" in region "cn-beijing" (see docs/providers/ack.md)`},
		{name: "provider not configured", provider: cloud.Mock, cluster: "prod", reg: "local", kind: cloud.Unsupported,
			message: `mock: cloud provider "mock" is not configured (configured: ack, aks, eks, gke)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			p, ref, err := newRegistry().Resolve(tc.provider, tc.cluster, tc.reg)
			if tc.kind != "" {
				g.Expect(p).To(BeNil())
				g.Expect(cloud.KindOf(err)).To(Equal(tc.kind))
				g.Expect(err.Error()).To(Equal(tc.message))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Name()).To(Equal(tc.provider))
			g.Expect(ref).To(Equal(tc.want))
		})
	}
}

func TestRegistryNamesMissingIdentityFields(t *testing.T) {
	g := NewWithT(t)
	reg := cloud.NewRegistry(&plainProvider{name: cloud.AKS}, &plainProvider{name: cloud.GKE})
	_, _, err := reg.Resolve(cloud.AKS, "prod", "westeurope")
	g.Expect(err).To(MatchError(ContainSubstring("no subscriptionID, resourceGroup configured for aks cluster")))
	_, _, err = reg.Resolve(cloud.GKE, "prod", "europe-west1")
	g.Expect(err).To(MatchError(ContainSubstring("no project configured for gke cluster")))
	var ce *cloud.Error
	g.Expect(errors.As(err, &ce)).To(BeTrue())
	g.Expect(ce.Provider).To(Equal(cloud.GKE))
	g.Expect(reg.Names()).To(Equal([]string{cloud.AKS, cloud.GKE}))
}
