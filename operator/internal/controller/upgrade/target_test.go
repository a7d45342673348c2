package upgrade

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
)

// versionLister is a provider that lists versions (or fails).
type versionLister struct {
	cloud.Provider
	versions []string
	err      error
	calls    *int
}

func (l versionLister) AvailableVersions(context.Context, cloud.ClusterRef) ([]string, error) {
	*l.calls++
	return append([]string(nil), l.versions...), l.err
}

// TestResolveTargetVersion: on a provider with its own versions the
// preflight resolves a minor to the newest available version, keeps an
// available full version, refuses an unavailable one in the REST API's
// words, and never asks again once status records the result; other
// providers take spec.targetVersion as it is.
func TestResolveTargetVersion(t *testing.T) {
	ctx := context.Background()
	calls := 0
	ack := versionLister{versions: []string{"1.30.2-aliyun.1", "1.29.3-aliyun.1", "1.30.1-aliyun.1"}, calls: &calls}
	op := func(target, recorded string) *opsv1.ClusterUpgradeOperation {
		return &opsv1.ClusterUpgradeOperation{
			Spec:   opsv1.ClusterUpgradeOperationSpec{CloudProvider: opsv1.CloudProviderACK, K8sClusterName: "prod", Region: "cn-hangzhou", TargetVersion: target},
			Status: opsv1.ClusterUpgradeOperationStatus{ResolvedTargetVersion: recorded},
		}
	}
	cases := []struct {
		name, target, recorded string
		provider               cloud.Provider
		want, refusal          string
		calls                  int
	}{
		{name: "minor resolved", target: "1.30", provider: ack, want: "1.30.2-aliyun.1", calls: 1},
		{name: "full version kept", target: "1.30.1-aliyun.1", provider: ack, want: "1.30.1-aliyun.1", calls: 1},
		{name: "recorded: not resolved again", target: "1.30", recorded: "1.30.1-aliyun.1", provider: ack, want: "1.30.1-aliyun.1"},
		{name: "unknown minor", target: "1.33", provider: ack, calls: 1,
			refusal: `targetVersion: no version matching 1.33 is available for ack cluster "prod" in region "cn-hangzhou"; available versions: 1.29.3-aliyun.1, 1.30.1-aliyun.1, 1.30.2-aliyun.1`},
		{name: "full version not available", target: "1.30.9-aliyun.1", provider: ack, calls: 1,
			refusal: `targetVersion: 1.30.9-aliyun.1 is not available for ack cluster "prod" in region "cn-hangzhou"; available versions: 1.29.3-aliyun.1, 1.30.1-aliyun.1, 1.30.2-aliyun.1`},
		{name: "provider without a version list", target: "1.30", provider: &mock.Provider{}, want: "1.30"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			calls = 0
			o := op(tc.target, tc.recorded)
			got, refusal, err := resolveTargetVersion(ctx, tc.provider, cloud.ClusterRef{}, o)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
			g.Expect(refusal).To(Equal(tc.refusal))
			g.Expect(calls).To(Equal(tc.calls))
			if tc.want != "" {
				o.Status.ResolvedTargetVersion = got
				g.Expect(targetVersion(o)).To(Equal(tc.want), "the steps use the recorded version")
			}
		})
	}
	t.Run("listing error", func(t *testing.T) {
		g := NewWithT(t)
		failing := versionLister{err: cloud.Errorf(cloud.Retryable, cloud.ACK, "DescribeKubernetesVersionMetadata", "Throttling.User"), calls: &calls}
		_, refusal, err := resolveTargetVersion(ctx, failing, cloud.ClusterRef{}, op("1.30", ""))
		g.Expect(cloud.IsRetryable(err)).To(BeTrue(), "%v", err)
		g.Expect(refusal).To(BeEmpty())
	})
}
