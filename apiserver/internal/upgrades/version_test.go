package upgrades

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
)

// lister is a provider that lists versions (or fails).
type lister struct {
	cloud.Provider
	versions []string
	err      error
}

func (l lister) AvailableVersions(context.Context, cloud.ClusterRef) ([]string, error) {
	return append([]string(nil), l.versions...), l.err
}

func TestResolveTarget(t *testing.T) {
	ctx := context.Background()
	base := Request{K8sClusterName: "prod", Region: "cn-hangzhou", CloudProvider: "ack", TargetVersion: "1.30"}
	avail := lister{versions: []string{"1.29.3-aliyun.1", "1.30.2-aliyun.1", "1.30.1-aliyun.1"}}

	t.Run("minor resolved", func(t *testing.T) {
		g := NewWithT(t)
		req := base
		out, err := resolveTarget(ctx, avail, cloud.ClusterRef{}, &req)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out.TargetVersion).To(Equal("1.30.2-aliyun.1"))
		g.Expect(out.requestedVersion).To(Equal("1.30"))
		g.Expect(req.TargetVersion).To(Equal("1.30"), "the caller's request is left alone")
		obj := (&Service{}).build(ctx, out, "")
		g.Expect(obj.Spec.TargetVersion).To(Equal("1.30.2-aliyun.1"))
		g.Expect(obj.Annotations).To(HaveKeyWithValue(AnnotationRequestedVersion, "1.30"))
		g.Expect(requestedSpec(obj).TargetVersion).To(Equal("1.30"))
	})
	t.Run("full version kept", func(t *testing.T) {
		g := NewWithT(t)
		req := base
		req.TargetVersion = "1.30.1-aliyun.1"
		out, err := resolveTarget(ctx, avail, cloud.ClusterRef{}, &req)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(BeIdenticalTo(&req))
		g.Expect((&Service{}).build(ctx, out, "").Annotations).NotTo(HaveKey(AnnotationRequestedVersion))
	})
	for name, target := range map[string]string{"unknown minor": "1.33", "full version not available": "1.30.9-aliyun.1"} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			req := base
			req.TargetVersion = target
			_, err := resolveTarget(ctx, avail, cloud.ClusterRef{}, &req)
			e, ok := apierror.As(err)
			g.Expect(ok).To(BeTrue(), "%v", err)
			g.Expect(e.Code).To(Equal(400))
			g.Expect(e.Violations).To(HaveLen(1))
			g.Expect(e.Violations[0].Field).To(Equal("targetVersion"))
			g.Expect(e.Violations[0].Description).To(ContainSubstring(target))
			g.Expect(e.Violations[0].Description).To(HaveSuffix("available versions: 1.29.3-aliyun.1, 1.30.1-aliyun.1, 1.30.2-aliyun.1"))
		})
	}
	t.Run("cloud error", func(t *testing.T) {
		g := NewWithT(t)
		req := base
		_, err := resolveTarget(ctx, lister{err: cloud.Errorf(cloud.Retryable, cloud.ACK, "DescribeKubernetesVersionMetadata", "Throttling.User")}, cloud.ClusterRef{}, &req)
		e, ok := apierror.As(err)
		g.Expect(ok).To(BeTrue(), "%v", err)
		g.Expect(e.Code).To(Equal(503))
	})
	t.Run("providers without a version list", func(t *testing.T) {
		g := NewWithT(t)
		req := base
		req.CloudProvider, req.TargetVersion = "mock", "1.30"
		out, err := resolveTarget(ctx, &mock.Provider{}, cloud.ClusterRef{}, &req)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(BeIdenticalTo(&req))
	})
}

func TestDecodeACKVersions(t *testing.T) {
	for _, v := range []string{"1.30", "1.30.1", "1.31.1-aliyun.1"} {
		t.Run(v, func(t *testing.T) {
			g := NewWithT(t)
			req, err := Decode([]byte(`{"k8sClusterName":"prod","region":"cn-hangzhou","cloudProvider":"ack","targetVersion":"` + v + `"}`))
			g.Expect(err).To(BeNil())
			g.Expect(toSpec(req).CloudProvider).To(Equal(opsv1.CloudProviderACK))
		})
	}
}
