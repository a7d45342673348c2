package ack_test

import (
	"context"
	"strings"
	"testing"
	"time"

	cs "github.com/alibabacloud-go/cs-20151215/v7/client"
	openapiutil "github.com/alibabacloud-go/darabonba-openapi/v2/utils"
	"github.com/alibabacloud-go/tea/dara"
	"github.com/alibabacloud-go/tea/tea"
	"github.com/aliyun/credentials-go/credentials"
	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/ack"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/ack/acktest"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/cloudtest"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/conformance"
)

const (
	fakeKeyID  = "LTAIfakefakefakefake"
	fakeSecret = "fake-secret-for-tests"
)

var fixture = conformance.Fixture{
	FromVersion: "1.29.3-aliyun.1", TargetVersion: "1.30.1-aliyun.1",
	GroupA: "pool-a", GroupB: "pool-b", NewGroup: "vmstorage-130",
	Addon: "coredns", AddonFrom: "v1.9.3.10-7dfca203-aliyun", AddonTo: "v1.11.3.2-f57ea7ed6-aliyun",
}

var ref = cloud.ClusterRef{Provider: cloud.ACK, Name: "prod", Region: "cn-hangzhou", ClusterID: "c0123456789abcdef0123456789abcdef"}

func seed(srv *acktest.Server) {
	srv.AddCluster(acktest.Cluster{
		ID: ref.ClusterID, Name: ref.Name, Region: ref.Region, Version: fixture.FromVersion,
		NodePools: []acktest.NodePool{
			{ID: "np0aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", Name: fixture.GroupA, DesiredSize: 2, InstanceTypes: []string{"ecs.g7.xlarge"},
				VSwitchIDs: []string{"vsw-1"}, Labels: map[string]string{"role": "a"}},
			{ID: "np0bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", Name: fixture.GroupB, DesiredSize: 2, InstanceTypes: []string{"ecs.r7.2xlarge", "ecs.r6.2xlarge"},
				VSwitchIDs: []string{"vsw-2", "vsw-3"}, Labels: map[string]string{"role": "b", "app": "vmstorage"},
				Taints: []acktest.Taint{{Key: "dedicated", Value: "vmstorage", Effect: "NoSchedule"}}, SystemDiskSize: 200,
				KeyPair: "ops", SecurityGroupIDs: []string{"sg-1"}},
		},
		Addons: []acktest.Addon{
			{Name: fixture.Addon, Version: fixture.AddonFrom, Latest: fixture.AddonTo},
			{Name: "metrics-server", Version: "v0.3.9.4-ff225cd-aliyun", Latest: "v0.3.9.4-ff225cd-aliyun"},
		},
	})
}

func connect(srv *acktest.Server) (*ack.Provider, error) {
	cred, err := credentials.NewCredential(&credentials.Config{Type: tea.String("access_key"), AccessKeyId: tea.String(fakeKeyID), AccessKeySecret: tea.String(fakeSecret)})
	if err != nil {
		return nil, err
	}
	return ack.New(ack.Options{Region: "cn-beijing", Endpoint: srv.URL, Credential: cred, PollInterval: time.Second})
}

// actions maps the suite's call kinds to the ACK action that does the work.
var actions = map[string]string{
	conformance.DescribeCluster:          acktest.DescribeClusterDetail,
	conformance.StartControlPlaneUpgrade: acktest.UpgradeCluster,
	conformance.ListNodeGroups:           acktest.DescribeClusterNodePools,
	conformance.StartNodeGroupUpgrade:    acktest.UpgradeClusterNodepool,
	conformance.StartCreateNodeGroup:     acktest.CreateClusterNodePool,
	conformance.StartDeleteNodeGroup:     acktest.DeleteClusterNodepool,
	conformance.ListAddons:               acktest.ListClusterAddonInstances,
	conformance.StartAddonUpdate:         acktest.UpgradeClusterAddons,
	conformance.PollOperation:            acktest.DescribeTaskInfo,
}

var onFake = conformance.OnFake[*acktest.Server, *ack.Provider]{Fixture: fixture, Ref: ref, NewFake: acktest.New, Seed: seed, Connect: connect, Actions: actions}

func TestConformance(t *testing.T) { onFake.Run(t) }

func TestControlPlaneUpgradeIsMasterOnly(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv, p := onFake.Start(t)
	id, err := p.StartControlPlaneUpgrade(ctx, ref, fixture.TargetVersion, "tok")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(onFake.Poll(t, p, id).State).To(Equal(cloud.OperationSucceeded))
	c, err := p.DescribeCluster(ctx, ref)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Version).To(Equal(fixture.TargetVersion))
	groups, err := p.ListNodeGroups(ctx, ref)
	g.Expect(err).NotTo(HaveOccurred())
	for _, x := range groups {
		g.Expect(x.Version).To(Equal(fixture.FromVersion), "node pool %s must not move with the control plane", x.Name)
	}
	g.Expect(srv.Calls(acktest.UpgradeCluster)).To(Equal(1))
}

func TestErrorClassification(t *testing.T) {
	onFake.ExpectFaultsClassified(t, []conformance.FaultCase{
		{Name: "throttled with TimeLeft", Fault: cloudtest.Throttle, RetryAfter: 1500 * time.Millisecond, Want: conformance.Classified{Kind: cloud.Retryable, Status: 429, RetryAfter: 1500 * time.Millisecond}},
		{Name: "throttled", Fault: cloudtest.Throttle, Want: conformance.Classified{Kind: cloud.Retryable, Status: 429}},
		{Name: "unavailable", Fault: cloudtest.ServerError, Want: conformance.Classified{Kind: cloud.Retryable, Status: 503}},
		{Name: "invalid parameter", Fault: cloudtest.Permanent, Want: conformance.Classified{Kind: cloud.Permanent, Status: 400}},
	}, nil, fakeKeyID, "request id")
}

func TestRequests(t *testing.T) {
	ctx := context.Background()
	onFake.ExpectRefusals(t, []conformance.Refusal[*ack.Provider]{
		{Name: "missing cluster", Kind: cloud.NotFound, Message: "ErrorClusterNotFound", Call: func(p *ack.Provider) error {
			other := ref
			other.ClusterID = "cdeadbeef"
			_, err := p.DescribeCluster(ctx, other)
			return err
		}},
		{Name: "no cluster id", Kind: cloud.Permanent, Message: "cluster id", Call: func(p *ack.Provider) error {
			other := ref
			other.ClusterID = ""
			_, err := p.ListNodeGroups(ctx, other)
			return err
		}},
		{Name: "minor version only", Kind: cloud.Permanent, Message: "full version", Call: func(p *ack.Provider) error {
			_, err := p.StartControlPlaneUpgrade(ctx, ref, "1.30", "tok")
			return err
		}},
		{Name: "node pool minor version only", Kind: cloud.Permanent, Message: "full version", Call: func(p *ack.Provider) error {
			_, err := p.StartNodeGroupUpgrade(ctx, ref, fixture.GroupA, "1.30.1", "tok")
			return err
		}},
		{Name: "upgrade of a missing pool", Kind: cloud.NotFound, Call: func(p *ack.Provider) error {
			_, err := p.StartNodeGroupUpgrade(ctx, ref, "nope", fixture.TargetVersion, "tok")
			return err
		}},
		{Name: "existing pool", Kind: cloud.Permanent, Message: "already exists", Call: func(p *ack.Provider) error {
			_, err := p.StartCreateNodeGroup(ctx, ref, cloud.NodeGroup{Name: fixture.GroupA, DesiredSize: 1}, "tok")
			return err
		}},
		{Name: "pool without vSwitches", Kind: cloud.Permanent, Message: "vSwitches", Call: func(p *ack.Provider) error {
			_, err := p.StartCreateNodeGroup(ctx, ref, cloud.NodeGroup{Name: "bare", DesiredSize: 1, InstanceTypes: []string{"ecs.g7.large"}}, "tok")
			return err
		}},
		{Name: "missing addon", Kind: cloud.NotFound, Call: func(p *ack.Provider) error {
			_, err := p.StartAddonUpdate(ctx, ref, cloud.AddonUpdate{Name: "nope", Version: "v1"}, "tok")
			return err
		}},
		{Name: "addon version not offered", Kind: cloud.Permanent, Message: "ErrorAddonVersion", Call: func(p *ack.Provider) error {
			_, err := p.StartAddonUpdate(ctx, ref, cloud.AddonUpdate{Name: fixture.Addon, Version: "v9"}, "tok")
			return err
		}},
		{Name: "unknown task", Kind: cloud.NotFound, Call: func(p *ack.Provider) error {
			_, err := p.PollOperation(ctx, ref, "T-nope")
			return err
		}},
		{Name: "malformed task id", Kind: cloud.Permanent, Call: func(p *ack.Provider) error {
			_, err := p.PollOperation(ctx, ref, "../tasks")
			return err
		}},
	})
}

func TestRepeatedStartsFindTheRunningTask(t *testing.T) {
	ctx := context.Background()
	// Again: a repeat after the task finished answers the same task.
	onFake.ExpectRestartsFindTheOperation(t, []conformance.Operation[*ack.Provider]{
		{Name: "control plane", Again: true, Start: func(p *ack.Provider) (string, error) {
			return p.StartControlPlaneUpgrade(ctx, ref, fixture.TargetVersion, "tok")
		}},
		{Name: "node pool upgrade", Again: true, Start: func(p *ack.Provider) (string, error) {
			return p.StartNodeGroupUpgrade(ctx, ref, fixture.GroupB, fixture.TargetVersion, "tok")
		}},
		{Name: "create", Again: true, Start: func(p *ack.Provider) (string, error) {
			return p.StartCreateNodeGroup(ctx, ref, cloud.NodeGroup{Name: "extra", DesiredSize: 1, InstanceTypes: []string{"ecs.g7.large"},
				Extra: map[string]string{ack.ExtraVSwitchIDs: "vsw-1"}}, "tok")
		}},
		{Name: "delete", Start: func(p *ack.Provider) (string, error) { return p.StartDeleteNodeGroup(ctx, ref, fixture.GroupA, "tok") }},
		{Name: "addon", Again: true, Start: func(p *ack.Provider) (string, error) {
			return p.StartAddonUpdate(ctx, ref, cloud.AddonUpdate{Name: fixture.Addon, Version: fixture.AddonTo}, "tok")
		}},
	})
}

func TestCloneKeepsSettings(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv, p := onFake.Start(t)
	groups, err := p.ListNodeGroups(ctx, ref)
	g.Expect(err).NotTo(HaveOccurred())
	old := conformance.NodeGroupNamed(groups, fixture.GroupB)
	g.Expect(old.Extra[ack.ExtraNodePoolID]).To(Equal("np0bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"))
	clone := old
	clone.Name, clone.Version = "vmstorage-130", fixture.TargetVersion
	id, err := p.StartCreateNodeGroup(ctx, ref, clone, "tok")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(onFake.Poll(t, p, id).State).To(Equal(cloud.OperationSucceeded))

	was, _ := srv.NodePool(ref.ClusterID, fixture.GroupB)
	got, ok := srv.NodePool(ref.ClusterID, clone.Name)
	g.Expect(ok).To(BeTrue())
	g.Expect(*got.NodepoolInfo.NodepoolId).NotTo(Equal(*was.NodepoolInfo.NodepoolId))
	g.Expect(got.ScalingGroup.InstanceTypes).To(Equal(was.ScalingGroup.InstanceTypes))
	g.Expect(got.ScalingGroup.VswitchIds).To(Equal(was.ScalingGroup.VswitchIds))
	g.Expect(got.ScalingGroup.DesiredSize).To(Equal(was.ScalingGroup.DesiredSize))
	g.Expect(got.ScalingGroup.SystemDiskSize).To(Equal(was.ScalingGroup.SystemDiskSize))
	g.Expect(got.ScalingGroup.KeyPair).To(Equal(was.ScalingGroup.KeyPair))
	g.Expect(got.ScalingGroup.SecurityGroupIds).To(Equal(was.ScalingGroup.SecurityGroupIds))
	wantLabels := append(was.KubernetesConfig.Labels, &cs.Tag{Key: tea.String(ack.NodePoolNameLabel), Value: tea.String(clone.Name)})
	g.Expect(got.KubernetesConfig.Labels).To(ConsistOf(wantLabels))
	g.Expect(got.KubernetesConfig.Taints).To(Equal(was.KubernetesConfig.Taints))
	g.Expect(*got.NodeComponents[0].Version).To(Equal(fixture.TargetVersion))

	sel, err := p.NodeSelector(ctx, ref, clone.Name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sel).To(Equal(map[string]string{ack.NodeGroupLabel: *got.NodepoolInfo.NodepoolId}))
}

func TestFailedTasksReportTheCloudsMessage(t *testing.T) {
	onFake.ExpectFailuresReported(t, []conformance.Operation[*ack.Provider]{
		{Name: "node pool upgrade", Message: "simulated failure of nodepool_upgrade", Start: func(p *ack.Provider) (string, error) {
			return p.StartNodeGroupUpgrade(context.Background(), ref, fixture.GroupA, fixture.TargetVersion, "tok")
		}},
	})
}

func TestARunningTaskOnTheClusterIsRetryable(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	_, p := onFake.Start(t)
	_, err := p.StartControlPlaneUpgrade(ctx, ref, fixture.TargetVersion, "tok")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = p.StartNodeGroupUpgrade(ctx, ref, fixture.GroupA, fixture.TargetVersion, "tok2")
	g.Expect(cloud.IsRetryable(err)).To(BeTrue(), "%v", err)
}

func TestNodeGroupEvents(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv, p := onFake.Start(t)
	g.Expect(srv.NodeGroupEvents()).To(HaveLen(2))
	id, err := p.StartNodeGroupUpgrade(ctx, ref, fixture.GroupA, fixture.TargetVersion, "tok")
	g.Expect(err).NotTo(HaveOccurred())
	onFake.Poll(t, p, id)
	// ACK labels Nodes with the pool's id, not its name.
	g.Expect(srv.NodeGroupEvents()[2:]).To(Equal([]acktest.NodeGroupEvent{
		{Cluster: ref.ClusterID, Name: fixture.GroupA, LabelValue: "np0aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", Version: fixture.TargetVersion, Size: 2, Labels: map[string]string{"role": "a"}},
	}))
}

func TestAvailableVersions(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name     string
		offered  []string // nil: the server's defaults
		fault    cloudtest.Fault
		want     []string
		wantKind cloud.ErrorKind
	}{
		{name: "current and the next minor's versions", offered: []string{"1.28.9-aliyun.1", "1.29.3-aliyun.1", "1.30.1-aliyun.1", "1.30.2-aliyun.1", "1.31.1-aliyun.1"},
			want: []string{"1.29.3-aliyun.1", "1.30.1-aliyun.1", "1.30.2-aliyun.1"}},
		{name: "defaults", want: []string{"1.29.3-aliyun.1", "1.30.1-aliyun.1"}},
		{name: "no next minor offered", offered: []string{"1.29.3-aliyun.1"}, want: []string{"1.29.3-aliyun.1"}},
		{name: "current version without metadata", offered: []string{"1.30.1-aliyun.1"}, want: []string{"1.29.3-aliyun.1"}},
		{name: "throttled", fault: cloudtest.Throttle, wantKind: cloud.Retryable},
		{name: "refused", fault: cloudtest.Permanent, wantKind: cloud.Permanent},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			srv, p := onFake.Start(t)
			if tc.offered != nil {
				srv.SetVersions(tc.offered...)
			}
			if tc.fault != 0 {
				srv.Inject(acktest.DescribeKubernetesVersionMetadata, 1, tc.fault)
			}
			got, err := p.AvailableVersions(ctx, ref)
			if tc.wantKind != "" {
				g.Expect(cloud.KindOf(err)).To(Equal(tc.wantKind), "%v", err)
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
			g.Expect(srv.Calls(acktest.DescribeKubernetesVersionMetadata)).To(Equal(1))
		})
	}

	t.Run("missing cluster", func(t *testing.T) {
		_, p := onFake.Start(t)
		other := ref
		other.ClusterID = "cdeadbeef"
		_, err := p.AvailableVersions(ctx, other)
		NewWithT(t).Expect(cloud.IsNotFound(err)).To(BeTrue(), "%v", err)
	})

	t.Run("after an upgrade", func(t *testing.T) {
		g := NewWithT(t)
		_, p := onFake.Start(t)
		id, err := p.StartControlPlaneUpgrade(ctx, ref, fixture.TargetVersion, "tok")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(onFake.Poll(t, p, id).State).To(Equal(cloud.OperationSucceeded))
		got, err := p.AvailableVersions(ctx, ref)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal([]string{fixture.TargetVersion, "1.31.1-aliyun.1"}))
	})
}

// TestVersionMetadataWireFormat calls the fake with the SDK client itself,
// as the provider does not: every offered version without
// KubernetesVersion, and the fake's refusal of a request without the
// required ClusterType.
func TestVersionMetadataWireFormat(t *testing.T) {
	g := NewWithT(t)
	srv := acktest.New(t)
	srv.SetVersions("1.30.1-aliyun.1", "1.31.1-aliyun.1")
	cred, err := credentials.NewCredential(&credentials.Config{Type: tea.String("access_key"), AccessKeyId: tea.String(fakeKeyID), AccessKeySecret: tea.String(fakeSecret)})
	g.Expect(err).NotTo(HaveOccurred())
	c, err := cs.NewClient(&openapiutil.Config{Credential: cred, Protocol: tea.String("HTTP"), Endpoint: tea.String(strings.TrimPrefix(srv.URL, "http://")), RegionId: tea.String("cn-hangzhou")})
	g.Expect(err).NotTo(HaveOccurred())
	rt := &dara.RuntimeOptions{Autoretry: tea.Bool(false)}

	out, err := c.DescribeKubernetesVersionMetadataWithContext(context.Background(), &cs.DescribeKubernetesVersionMetadataRequest{
		ClusterType: tea.String("ManagedKubernetes"), Mode: tea.String("supported"), Region: tea.String("cn-hangzhou"),
	}, nil, rt)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Body).To(HaveLen(2))
	g.Expect(tea.StringValue(out.Body[1].Version)).To(Equal("1.31.1-aliyun.1"))
	g.Expect(tea.BoolValue(out.Body[1].Creatable)).To(BeTrue())
	g.Expect(out.Body[1].MetaData).To(HaveKeyWithValue("KubernetesVersion", "1.31.1-aliyun.1"))
	g.Expect(out.Body[1].UpgradableVersions).To(BeEmpty(), "upgradable versions only for one KubernetesVersion")

	out, err = c.DescribeKubernetesVersionMetadataWithContext(context.Background(), &cs.DescribeKubernetesVersionMetadataRequest{
		ClusterType: tea.String("ManagedKubernetes"), KubernetesVersion: tea.String("1.30.1-aliyun.1"), QueryUpgradableVersion: tea.Bool(true),
	}, nil, rt)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Body).To(HaveLen(1))
	g.Expect(tea.StringSliceValue(out.Body[0].UpgradableVersions)).To(Equal([]string{"1.31.1-aliyun.1"}))

	_, err = c.DescribeKubernetesVersionMetadataWithContext(context.Background(), &cs.DescribeKubernetesVersionMetadataRequest{}, nil, rt)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("ClusterType is required"))
}
