package cloud_test

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// plainProvider has no optional interface; calls not overridden panic.
type plainProvider struct {
	cloud.Provider
	name string
	err  error
}

func (p *plainProvider) Name() string { return p.name }
func (p *plainProvider) DescribeCluster(context.Context, cloud.ClusterRef) (*cloud.Cluster, error) {
	return &cloud.Cluster{Name: "c"}, p.err
}

// fullProvider has both optional interfaces.
type fullProvider struct{ plainProvider }

func (p *fullProvider) NodeSelector(context.Context, cloud.ClusterRef, string) (map[string]string, error) {
	return map[string]string{"pool-id": "np-1"}, nil
}
func (p *fullProvider) AvailableVersions(context.Context, cloud.ClusterRef) ([]string, error) {
	return []string{"1.31.1-aliyun.1"}, nil
}

// selectorProvider has only NodeGroupSelector.
type selectorProvider struct{ plainProvider }

func (p *selectorProvider) NodeSelector(context.Context, cloud.ClusterRef, string) (map[string]string, error) {
	return map[string]string{"pool-id": "np-1"}, nil
}

func TestRegistryObservesEveryCall(t *testing.T) {
	g := NewWithT(t)
	type call struct{ provider, op, result string }
	var calls []call
	reg := cloud.NewRegistry(
		&plainProvider{name: cloud.EKS},
		&fullProvider{plainProvider{name: cloud.Mock, err: cloud.Errorf(cloud.Retryable, cloud.Mock, "DescribeCluster", "throttled")}},
		&selectorProvider{plainProvider{name: cloud.GKE, err: errors.New("connection reset")}},
	)
	reg.Defaults[cloud.GKE] = cloud.ClusterIdentity{Project: "p"}
	reg.Observe = func(provider, op string, err error) { calls = append(calls, call{provider, op, cloud.CallResult(err)}) }

	eks, ref, err := reg.Resolve(cloud.EKS, "c", "r")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = eks.DescribeCluster(context.Background(), ref)
	g.Expect(err).NotTo(HaveOccurred())
	_, isSel := eks.(cloud.NodeGroupSelector)
	_, isVer := eks.(cloud.VersionLister)
	g.Expect(isSel || isVer).To(BeFalse(), "the wrapper adds no optional interface")

	full, ref, err := reg.Resolve(cloud.Mock, "c", "r")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = full.DescribeCluster(context.Background(), ref)
	g.Expect(cloud.IsRetryable(err)).To(BeTrue(), "errors pass through unchanged")
	sel, err := cloud.NodeSelectorFor(context.Background(), full, ref, "g")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sel).To(Equal(map[string]string{"pool-id": "np-1"}), "the wrapper keeps NodeGroupSelector")
	lister, ok := full.(cloud.VersionLister)
	g.Expect(ok).To(BeTrue(), "the wrapper keeps VersionLister")
	_, err = lister.AvailableVersions(context.Background(), ref)
	g.Expect(err).NotTo(HaveOccurred())

	gke, ref, err := reg.Resolve(cloud.GKE, "c", "r")
	g.Expect(err).NotTo(HaveOccurred())
	_, isVer = gke.(cloud.VersionLister)
	g.Expect(isVer).To(BeFalse())
	_, err = gke.DescribeCluster(context.Background(), ref)
	g.Expect(err).To(HaveOccurred())

	g.Expect(calls).To(Equal([]call{
		{cloud.EKS, "DescribeCluster", "Success"},
		{cloud.Mock, "DescribeCluster", "Retryable"},
		{cloud.Mock, "NodeSelector", "Success"},
		{cloud.Mock, "AvailableVersions", "Success"},
		{cloud.GKE, "DescribeCluster", "Error"},
	}))
}
