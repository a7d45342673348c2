package upgrades

import (
	"context"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
)

func TestSortVersions(t *testing.T) {
	g := NewWithT(t)
	vs := []string{"1.31.1-aliyun.1", "1.30.10-aliyun.1", "1.30.9-aliyun.2", "1.30.9-aliyun.10", "1.29.3-aliyun.1", "1.30.9-aliyun.1", "1.30"}
	sortVersions(vs)
	g.Expect(vs).To(Equal([]string{"1.29.3-aliyun.1", "1.30", "1.30.9-aliyun.1", "1.30.9-aliyun.2", "1.30.9-aliyun.10", "1.30.10-aliyun.1", "1.31.1-aliyun.1"}))
}

func TestPickVersion(t *testing.T) {
	available := []string{"1.29.3-aliyun.1", "1.30.1-aliyun.1", "1.30.1-aliyun.2", "1.30.2-aliyun.1", "1.30.10-aliyun.1", "1.31.1-aliyun.1"}
	sortVersions(available)
	cases := []struct {
		name, requested, want string
		ok                    bool
	}{
		{"minor to its newest patch", "1.30", "1.30.10-aliyun.1", true},
		{"the current minor", "1.29", "1.29.3-aliyun.1", true},
		{"patch to its newest build", "1.30.1", "1.30.1-aliyun.2", true},
		{"full version available", "1.30.2-aliyun.1", "1.30.2-aliyun.1", true},
		{"full version not available", "1.30.3-aliyun.1", "", false},
		{"full version is not a prefix", "1.30.1-aliyun", "", false},
		{"unknown minor", "1.33", "", false},
		{"no partial component match", "1.3", "", false},
		{"unknown patch", "1.30.3", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, ok := pickVersion(tc.requested, available)
			g.Expect(ok).To(Equal(tc.ok))
			g.Expect(got).To(Equal(tc.want))
		})
	}
	got, ok := pickVersion("1.30", nil)
	NewWithT(t).Expect([]any{got, ok}).To(Equal([]any{"", false}), "nothing available")
}

func FuzzPickVersion(f *testing.F) {
	f.Add("1.30", "1.30.1-aliyun.1,1.30.2-aliyun.1,1.31.1-aliyun.1")
	f.Add("1.30.1-aliyun.1", "1.30.1-aliyun.1")
	f.Add("1.3", "1.30.1-aliyun.1,1.3.0-aliyun.1")
	f.Fuzz(func(t *testing.T, requested, list string) {
		available := strings.Split(list, ",")
		sortVersions(available)
		if !sort.SliceIsSorted(available, func(i, j int) bool { return compareVersions(available[i], available[j]) < 0 }) {
			t.Fatalf("not sorted: %q", available)
		}
		got, ok := pickVersion(requested, available)
		if !ok {
			for _, v := range available {
				if v == requested {
					t.Fatalf("%q is available but was not picked", requested)
				}
			}
			return
		}
		found := false
		for _, v := range available {
			found = found || v == got
		}
		if !found {
			t.Fatalf("picked %q, not in %q", got, available)
		}
		if got != requested && !strings.HasPrefix(got, requested+".") && !strings.HasPrefix(got, requested+"-") {
			t.Fatalf("picked %q for %q", got, requested)
		}
		for _, v := range available {
			if got != requested && (strings.HasPrefix(v, requested+".") || strings.HasPrefix(v, requested+"-")) && compareVersions(v, got) > 0 {
				t.Fatalf("picked %q for %q, but %q is newer", got, requested, v)
			}
		}
	})
}

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
