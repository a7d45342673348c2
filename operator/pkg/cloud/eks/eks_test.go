package eks_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/cloudtest"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/conformance"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/eks"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/eks/ekstest"
)

const (
	fakeKeyID  = "AKIAFAKEFAKEFAKEFAKE"
	fakeSecret = "fake-secret-for-tests"
)

var fixture = conformance.Fixture{
	FromVersion: "1.29", TargetVersion: "1.30",
	GroupA: "ng-a", GroupB: "ng-b", NewGroup: "ng-new",
	Addon: "vpc-cni", AddonFrom: "v1.18.0-eksbuild.1", AddonTo: "v1.18.3-eksbuild.2",
}

// ref is in another region than the client's default, so every call has
// to carry the cluster's region (the fake only sees the cluster when the
// request is signed for eu-west-1).
var ref = cloud.ClusterRef{Provider: cloud.EKS, Name: "prod", Region: "eu-west-1"}

func seed(srv *ekstest.Server) {
	srv.AddCluster(ekstest.Cluster{
		Name: ref.Name, Region: ref.Region, Version: fixture.FromVersion,
		NodeGroups: []ekstest.NodeGroup{
			{Name: fixture.GroupA, DesiredSize: 2, MinSize: 1, MaxSize: 4, InstanceTypes: []string{"m5.large"},
				Labels: map[string]string{"role": "a"}, Subnets: []string{"subnet-1", "subnet-2"}, NodeRole: "arn:aws:iam::000000000000:role/nodes",
				DiskSize: 50, RemoteAccessSSHKey: "ops", UpdateMaxUnavailable: 1},
			{Name: fixture.GroupB, DesiredSize: 2, MinSize: 2, MaxSize: 3, InstanceTypes: []string{"r6i.xlarge", "r5.xlarge"},
				Labels: map[string]string{"role": "b", "app": "vmstorage"}, Taints: []ekstest.Taint{{Key: "dedicated", Value: "vmstorage", Effect: "NO_SCHEDULE"}},
				Subnets: []string{"subnet-3"}, NodeRole: "arn:aws:iam::000000000000:role/storage",
				LaunchTemplateID: "lt-0123", LaunchTemplateVer: "7", Tags: map[string]string{"team": "obs"}},
		},
		Addons: []ekstest.Addon{
			{Name: fixture.Addon, Version: fixture.AddonFrom, Versions: []string{fixture.AddonTo, "v1.18.1-eksbuild.1", fixture.AddonFrom}},
			{Name: "coredns", Version: "v1.11.1-eksbuild.4", Versions: []string{"v1.11.1-eksbuild.4"}},
		},
	})
}

func connect(srv *ekstest.Server) (*eks.Provider, error) {
	return eks.New(context.Background(), eks.Options{
		Region: "us-west-2", Endpoint: srv.URL,
		Credentials:  credentials.NewStaticCredentialsProvider(fakeKeyID, fakeSecret, ""),
		PollInterval: time.Second,
	})
}

// actions maps the suite's call kinds to the EKS operation each provider
// call makes first.
var actions = map[string]string{
	conformance.DescribeCluster:          ekstest.DescribeCluster,
	conformance.StartControlPlaneUpgrade: ekstest.UpdateClusterVersion,
	conformance.ListNodeGroups:           ekstest.ListNodegroups,
	conformance.StartNodeGroupUpgrade:    ekstest.UpdateNodegroupVersion,
	conformance.StartCreateNodeGroup:     ekstest.CreateNodegroup,
	conformance.StartDeleteNodeGroup:     ekstest.DeleteNodegroup,
	conformance.ListAddons:               ekstest.ListAddons,
	conformance.StartAddonUpdate:         ekstest.UpdateAddon,
	conformance.PollOperation:            ekstest.DescribeUpdate,
}

var onFake = conformance.OnFake[*ekstest.Server, *eks.Provider]{Fixture: fixture, Ref: ref, NewFake: ekstest.New, Seed: seed, Connect: connect, Actions: actions}

func TestConformance(t *testing.T) { onFake.Run(t) }

func TestErrorClassification(t *testing.T) {
	onFake.ExpectFaultsClassified(t, []conformance.FaultCase{
		{Name: "throttling with Retry-After", Fault: cloudtest.Throttle, RetryAfter: 7 * time.Second, Want: conformance.Classified{Kind: cloud.Retryable, Status: 429, RetryAfter: 7 * time.Second}},
		{Name: "throttling without Retry-After", Fault: cloudtest.Throttle, Want: conformance.Classified{Kind: cloud.Retryable, Status: 429}},
		{Name: "server error", Fault: cloudtest.ServerError, Want: conformance.Classified{Kind: cloud.Retryable, Status: 500}},
		{Name: "invalid parameter", Fault: cloudtest.Permanent, Want: conformance.Classified{Kind: cloud.Permanent, Status: 400}},
	}, func(t *testing.T, ce *cloud.Error) {
		NewWithT(t).Expect(ce.Op).To(Equal("DescribeCluster"))
	}, fakeKeyID, "http://")
}

func TestNotFound(t *testing.T) {
	onFake.ExpectRefusals(t, []conformance.Refusal[*eks.Provider]{
		{Name: "cluster in another region", Kind: cloud.NotFound, Call: func(p *eks.Provider) error {
			other := ref
			other.Region = "us-east-1"
			_, err := p.DescribeCluster(context.Background(), other)
			return err
		}},
		{Name: "upgrade of a missing node group", Kind: cloud.NotFound, Call: func(p *eks.Provider) error {
			_, err := p.StartNodeGroupUpgrade(context.Background(), ref, "nope", "1.30", "tok")
			return err
		}},
		{Name: "delete of a missing node group", Kind: cloud.NotFound, Call: func(p *eks.Provider) error {
			_, err := p.StartDeleteNodeGroup(context.Background(), ref, "nope", "tok")
			return err
		}},
		{Name: "poll of an unknown update", Kind: cloud.NotFound, Call: func(p *eks.Provider) error {
			_, err := p.PollOperation(context.Background(), ref, "cluster:prod:00000000-0000")
			return err
		}},
	})
}

func TestCloneKeepsSettings(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv, p := onFake.Start(t)
	groups, err := p.ListNodeGroups(ctx, ref)
	g.Expect(err).NotTo(HaveOccurred())
	for _, src := range []string{fixture.GroupA, fixture.GroupB} {
		old := conformance.NodeGroupNamed(groups, src)
		clone := old
		clone.Name, clone.Version = src+"-130", "1.30"
		id, err := p.StartCreateNodeGroup(ctx, ref, clone, "tok-"+src)
		g.Expect(err).NotTo(HaveOccurred())
		// A repeat with the same token is answered with the same group.
		id2, err := p.StartCreateNodeGroup(ctx, ref, clone, "tok-"+src)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(id2).To(Equal(id))
		g.Expect(onFake.Poll(t, p, id).State).To(Equal(cloud.OperationSucceeded))

		was, _ := srv.NodeGroup(ref.Name, src)
		got, ok := srv.NodeGroup(ref.Name, clone.Name)
		g.Expect(ok).To(BeTrue())
		g.Expect(got.Version).To(Equal("1.30"))
		g.Expect(got.NodeRole).To(Equal(was.NodeRole))
		g.Expect(got.Subnets).To(Equal(was.Subnets))
		g.Expect(got.InstanceTypes).To(Equal(was.InstanceTypes))
		g.Expect(got.Labels).To(Equal(was.Labels))
		g.Expect(got.Taints).To(Equal(was.Taints))
		g.Expect(got.Tags).To(Equal(was.Tags))
		g.Expect([]int32{got.DesiredSize, got.MinSize, got.MaxSize}).To(Equal([]int32{was.DesiredSize, was.MinSize, was.MaxSize}))
		g.Expect(got.LaunchTemplateID).To(Equal(was.LaunchTemplateID))
		g.Expect(got.LaunchTemplateVer).To(Equal(was.LaunchTemplateVer))
		g.Expect(got.DiskSize).To(Equal(was.DiskSize))
		g.Expect(got.RemoteAccessSSHKey).To(Equal(was.RemoteAccessSSHKey))
		g.Expect(got.UpdateMaxUnavailable).To(Equal(was.UpdateMaxUnavailable))
	}
}

func TestCloneWithoutSourceNeedsRoleAndSubnets(t *testing.T) {
	_, p := onFake.Start(t)
	_, err := p.StartCreateNodeGroup(context.Background(), ref, cloud.NodeGroup{Name: "bare", Version: "1.30", DesiredSize: 1}, "tok")
	g := NewWithT(t)
	g.Expect(cloud.KindOf(err)).To(Equal(cloud.Permanent))
	g.Expect(err.Error()).To(ContainSubstring("node role and subnets"))
}

func TestFailedOperationsReportTheCloudsMessage(t *testing.T) {
	ctx := context.Background()
	onFake.ExpectFailuresReported(t, []conformance.Operation[*eks.Provider]{
		{Name: "node group update", Start: func(p *eks.Provider) (string, error) {
			return p.StartNodeGroupUpgrade(ctx, ref, fixture.GroupA, "1.30", "tok")
		}, Message: "NodeCreationFailure"},
		{Name: "node group creation", Start: func(p *eks.Provider) (string, error) {
			return p.StartCreateNodeGroup(ctx, ref, cloud.NodeGroup{Name: "x", DesiredSize: 1, Extra: map[string]string{
				eks.ExtraNodeRole: "arn:aws:iam::000000000000:role/nodes", eks.ExtraSubnets: "subnet-1"}}, "tok")
		}, Message: "CREATE_FAILED"},
		{Name: "node group deletion", Start: func(p *eks.Provider) (string, error) {
			return p.StartDeleteNodeGroup(ctx, ref, fixture.GroupB, "tok")
		}, Message: "DELETE_FAILED"},
	})
}

func TestRepeatedDeleteIsTheSameOperation(t *testing.T) {
	g := NewWithT(t)
	_, p := onFake.Start(t)
	id1, err := p.StartDeleteNodeGroup(context.Background(), ref, fixture.GroupA, "tok")
	g.Expect(err).NotTo(HaveOccurred())
	id2, err := p.StartDeleteNodeGroup(context.Background(), ref, fixture.GroupA, "tok")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(id2).To(Equal(id1))
	g.Expect(onFake.Poll(t, p, id1).State).To(Equal(cloud.OperationSucceeded))
}

func TestAddonRequests(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name     string
		update   cloud.AddonUpdate
		wantKind cloud.ErrorKind
	}{
		{name: "unknown resolveConflicts", update: cloud.AddonUpdate{Name: fixture.Addon, Version: fixture.AddonTo, ResolveConflicts: "MERGE"}, wantKind: cloud.Permanent},
		{name: "unsupported version", update: cloud.AddonUpdate{Name: fixture.Addon, Version: "v9"}, wantKind: cloud.Permanent},
		{name: "missing addon", update: cloud.AddonUpdate{Name: "nope", Version: "v1"}, wantKind: cloud.NotFound},
		{name: "lower-case resolveConflicts", update: cloud.AddonUpdate{Name: fixture.Addon, Version: fixture.AddonTo, ResolveConflicts: "overwrite"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, p := onFake.Start(t)
			id, err := p.StartAddonUpdate(ctx, ref, tc.update, "tok")
			if tc.wantKind == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(id).To(HavePrefix("addon:" + fixture.Addon + ":"))
				return
			}
			g.Expect(cloud.KindOf(err)).To(Equal(tc.wantKind), "%v", err)
		})
	}
}

func TestListAddonsPaginatesAndDescribes(t *testing.T) {
	g := NewWithT(t)
	srv, p := onFake.Start(t)
	addons, err := p.ListAddons(context.Background(), ref)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(addons).To(HaveLen(2))
	g.Expect(addons[1].Name).To(Equal(fixture.Addon))
	g.Expect(addons[1].AvailableVersions).To(Equal([]string{fixture.AddonTo, "v1.18.1-eksbuild.1", fixture.AddonFrom}))
	g.Expect(srv.Calls(ekstest.ListAddons)).To(Equal(2), "page size 1: two pages")
}

func TestMalformedOperationIDs(t *testing.T) {
	_, p := onFake.Start(t)
	for _, id := range []string{"", "cluster", "cluster:prod", "nodegroup::x", "create-nodegroup:a:b", "what:x:y"} {
		t.Run(id, func(t *testing.T) {
			_, err := p.PollOperation(context.Background(), ref, id)
			NewWithT(t).Expect(cloud.KindOf(err)).To(Equal(cloud.Permanent))
		})
	}
}

func TestNodeSelector(t *testing.T) {
	_, p := onFake.Start(t)
	sel, err := p.NodeSelector(context.Background(), ref, fixture.GroupA)
	g := NewWithT(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sel).To(Equal(map[string]string{eks.NodeGroupLabel: fixture.GroupA}))
	g.Expect(strings.Contains(p.NodeGroupLabel(), "eks.amazonaws.com")).To(BeTrue())
}

func TestNodeGroupEvents(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv, p := onFake.Start(t)
	g.Expect(srv.NodeGroupEvents()).To(HaveLen(2))
	id, err := p.StartCreateNodeGroup(ctx, ref, cloud.NodeGroup{Name: "ng-c", Version: "1.30", DesiredSize: 3, Labels: map[string]string{"x": "y"},
		Extra: map[string]string{eks.ExtraSource: fixture.GroupA}}, "tok")
	g.Expect(err).NotTo(HaveOccurred())
	onFake.Poll(t, p, id)
	id, err = p.StartDeleteNodeGroup(ctx, ref, "ng-c", "tok2")
	g.Expect(err).NotTo(HaveOccurred())
	onFake.Poll(t, p, id)
	g.Expect(srv.NodeGroupEvents()[2:]).To(Equal([]ekstest.NodeGroupEvent{
		{Cluster: ref.Name, Name: "ng-c", LabelValue: "ng-c", Version: "1.30", Size: 3, Labels: map[string]string{"x": "y"}},
		{Cluster: ref.Name, Name: "ng-c", LabelValue: "ng-c", Version: "1.30", Size: 3, Labels: map[string]string{"x": "y"}, Deleted: true},
	}))
}
