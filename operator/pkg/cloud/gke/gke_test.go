package gke_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"golang.org/x/oauth2"
	"google.golang.org/api/option"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/cloudtest"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/conformance"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/gke"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/gke/gketest"
)

const fakeToken = "ya29.fake-token-for-tests"

var fixture = conformance.Fixture{
	FromVersion: "1.29", TargetVersion: "1.30",
	GroupA: "pool-a", GroupB: "pool-b", NewGroup: "pool-new",
}

var ref = cloud.ClusterRef{Provider: cloud.GKE, Name: "prod", Region: "europe-west1", Project: "obs-project"}

func seed(srv *gketest.Server) {
	srv.AddCluster(gketest.Cluster{
		Project: ref.Project, Location: ref.Region, Name: ref.Name, Version: "1.29.8-gke.1031000",
		NodePools: []gketest.NodePool{
			{Name: fixture.GroupA, NodeCount: 2, MachineType: "e2-standard-4", Labels: map[string]string{"role": "a"}, DiskSizeGB: 100},
			{Name: fixture.GroupB, NodeCount: 1, Locations: []string{"europe-west1-b", "europe-west1-c"}, MachineType: "n2-highmem-8",
				ImageType: "UBUNTU_CONTAINERD", ServiceAccount: "nodes@obs-project.iam.gserviceaccount.com",
				Labels: map[string]string{"role": "b", "app": "vmstorage"}, Taints: []gketest.Taint{{Key: "dedicated", Value: "vmstorage", Effect: "NO_SCHEDULE"}},
				MinNodes: 1, MaxNodes: 3},
		},
	})
}

func connect(srv *gketest.Server) (*gke.Provider, error) {
	return gke.New(context.Background(), gke.Options{
		Endpoint:      srv.URL,
		ClientOptions: []option.ClientOption{option.WithTokenSource(oauth2.StaticTokenSource(&oauth2.Token{AccessToken: fakeToken}))},
		PollInterval:  time.Second,
	})
}

// actions maps the suite's call kinds to the GKE call that does the work.
var actions = map[string]string{
	conformance.DescribeCluster:          gketest.GetCluster,
	conformance.StartControlPlaneUpgrade: gketest.UpdateMaster,
	conformance.ListNodeGroups:           gketest.ListNodePools,
	conformance.StartNodeGroupUpgrade:    gketest.UpdateNodePool,
	conformance.StartCreateNodeGroup:     gketest.CreateNodePool,
	conformance.StartDeleteNodeGroup:     gketest.DeleteNodePool,
	conformance.PollOperation:            gketest.GetOperation,
}

var onFake = conformance.OnFake[*gketest.Server, *gke.Provider]{Fixture: fixture, Ref: ref, NewFake: gketest.New, Seed: seed, Connect: connect, Actions: actions}

func TestConformance(t *testing.T) { onFake.Run(t) }

func TestErrorClassification(t *testing.T) {
	onFake.ExpectFaultsClassified(t, []conformance.FaultCase{
		{Name: "quota exhausted with Retry-After", Fault: cloudtest.Throttle, RetryAfter: 3 * time.Second, Want: conformance.Classified{Kind: cloud.Retryable, Status: 429, RetryAfter: 3 * time.Second}},
		{Name: "quota exhausted", Fault: cloudtest.Throttle, Want: conformance.Classified{Kind: cloud.Retryable, Status: 429}},
		{Name: "unavailable", Fault: cloudtest.ServerError, Want: conformance.Classified{Kind: cloud.Retryable, Status: 503}},
		{Name: "invalid argument", Fault: cloudtest.Permanent, Want: conformance.Classified{Kind: cloud.Permanent, Status: 400}},
	}, nil, fakeToken)
}

func TestAnotherOperationRunningIsRetryable(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	_, p := onFake.Start(t)
	_, err := p.StartControlPlaneUpgrade(ctx, ref, "1.30", "tok-cp")
	g.Expect(err).NotTo(HaveOccurred())
	// The master upgrade holds the cluster: GKE answers FAILED_PRECONDITION.
	_, err = p.StartNodeGroupUpgrade(ctx, ref, fixture.GroupA, "1.30", "tok-ng")
	g.Expect(cloud.IsRetryable(err)).To(BeTrue(), "%v (%s)", err, cloud.KindOf(err))
	g.Expect(err.Error()).To(ContainSubstring("FAILED_PRECONDITION"))
}

func TestRepeatedStartsFindTheRunningOperation(t *testing.T) {
	ctx := context.Background()
	// Repeated after the operation finished (Again): the same, done,
	// operation.
	onFake.ExpectRestartsFindTheOperation(t, []conformance.Operation[*gke.Provider]{
		{Name: "master upgrade", Again: true, Start: func(p *gke.Provider) (string, error) { return p.StartControlPlaneUpgrade(ctx, ref, "1.30", "tok") }},
		{Name: "create", Again: true, Start: func(p *gke.Provider) (string, error) {
			return p.StartCreateNodeGroup(ctx, ref, cloud.NodeGroup{Name: "new", DesiredSize: 1, InstanceTypes: []string{"e2-small"}}, "tok")
		}},
		{Name: "delete", Start: func(p *gke.Provider) (string, error) { return p.StartDeleteNodeGroup(ctx, ref, fixture.GroupA, "tok") }},
	})
}

func TestCloneKeepsSettings(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv, p := onFake.Start(t)
	groups, err := p.ListNodeGroups(ctx, ref)
	g.Expect(err).NotTo(HaveOccurred())
	old := conformance.NodeGroupNamed(groups, fixture.GroupB)
	g.Expect(old.DesiredSize).To(Equal(int32(2)), "one node in each of two zones")
	g.Expect([]int32{old.MinSize, old.MaxSize}).To(Equal([]int32{2, 6}))
	clone := old
	clone.Name, clone.Version = "pool-b-130", "1.30"
	id, err := p.StartCreateNodeGroup(ctx, ref, clone, "tok")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(onFake.Poll(t, p, id).State).To(Equal(cloud.OperationSucceeded))

	was, _ := srv.NodePool(ref.Project, ref.Region, ref.Name, fixture.GroupB)
	got, ok := srv.NodePool(ref.Project, ref.Region, ref.Name, clone.Name)
	g.Expect(ok).To(BeTrue())
	g.Expect(got.Version).To(Equal("1.30.4-gke.1200"))
	g.Expect(got.InitialNodeCount).To(Equal(was.InitialNodeCount))
	g.Expect(got.Locations).To(Equal(was.Locations))
	g.Expect(got.Config.MachineType).To(Equal(was.Config.MachineType))
	g.Expect(got.Config.ImageType).To(Equal(was.Config.ImageType))
	g.Expect(got.Config.ServiceAccount).To(Equal(was.Config.ServiceAccount))
	g.Expect(got.Config.Labels).To(Equal(was.Config.Labels))
	g.Expect(got.Config.Taints).To(Equal(was.Config.Taints))
	g.Expect(got.Autoscaling.MinNodeCount).To(Equal(was.Autoscaling.MinNodeCount))
	g.Expect(got.Autoscaling.MaxNodeCount).To(Equal(was.Autoscaling.MaxNodeCount))
	g.Expect(got.Management).To(Equal(was.Management))
}

func TestFailedOperationsReportTheCloudsMessage(t *testing.T) {
	onFake.ExpectFailuresReported(t, []conformance.Operation[*gke.Provider]{
		{Name: "node pool upgrade", Message: "simulated failure of UPGRADE_NODES", Start: func(p *gke.Provider) (string, error) {
			return p.StartNodeGroupUpgrade(context.Background(), ref, fixture.GroupA, "1.30", "tok")
		}},
	})
}

func TestRequests(t *testing.T) {
	ctx := context.Background()
	onFake.ExpectRefusals(t, []conformance.Refusal[*gke.Provider]{
		{Name: "missing cluster", Kind: cloud.NotFound, Call: func(p *gke.Provider) error {
			other := ref
			other.Region = "us-central1"
			_, err := p.DescribeCluster(ctx, other)
			return err
		}},
		{Name: "no project", Kind: cloud.Permanent, Call: func(p *gke.Provider) error {
			other := ref
			other.Project = ""
			_, err := p.ListNodeGroups(ctx, other)
			return err
		}},
		{Name: "upgrade of a missing pool", Kind: cloud.NotFound, Call: func(p *gke.Provider) error {
			_, err := p.StartNodeGroupUpgrade(ctx, ref, "nope", "1.30", "tok")
			return err
		}},
		{Name: "create of an existing pool", Kind: cloud.Permanent, Call: func(p *gke.Provider) error {
			_, err := p.StartCreateNodeGroup(ctx, ref, cloud.NodeGroup{Name: fixture.GroupA, DesiredSize: 1}, "tok")
			return err
		}},
		{Name: "two machine types", Kind: cloud.Permanent, Call: func(p *gke.Provider) error {
			_, err := p.StartCreateNodeGroup(ctx, ref, cloud.NodeGroup{Name: "x", DesiredSize: 1, InstanceTypes: []string{"a", "b"}}, "tok")
			return err
		}},
		{Name: "master skipping a minor", Kind: cloud.Permanent, Call: func(p *gke.Provider) error {
			_, err := p.StartControlPlaneUpgrade(ctx, ref, "1.31", "tok")
			return err
		}},
		{Name: "unknown operation", Kind: cloud.NotFound, Call: func(p *gke.Provider) error {
			_, err := p.PollOperation(ctx, ref, "operation-1-deadbeef")
			return err
		}},
		{Name: "malformed operation id", Kind: cloud.Permanent, Call: func(p *gke.Provider) error {
			_, err := p.PollOperation(ctx, ref, "a/b")
			return err
		}},
		{Name: "addons", Kind: cloud.Unsupported, Call: func(p *gke.Provider) error {
			_, err := p.ListAddons(ctx, ref)
			return err
		}},
	})
}

func TestPollAcceptsFullOperationNames(t *testing.T) {
	g := NewWithT(t)
	_, p := onFake.Start(t)
	id, err := p.StartDeleteNodeGroup(context.Background(), ref, fixture.GroupB, "tok")
	g.Expect(err).NotTo(HaveOccurred())
	full := "projects/" + ref.Project + "/locations/" + ref.Region + "/operations/" + id
	g.Expect(onFake.Poll(t, p, full).State).To(Equal(cloud.OperationSucceeded))
}

func TestNodeGroupEvents(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv, p := onFake.Start(t)
	g.Expect(srv.NodeGroupEvents()).To(HaveLen(2))
	id, err := p.StartNodeGroupUpgrade(ctx, ref, fixture.GroupA, "1.30", "tok")
	g.Expect(err).NotTo(HaveOccurred())
	onFake.Poll(t, p, id)
	g.Expect(srv.NodeGroupEvents()[2:]).To(Equal([]gketest.NodeGroupEvent{
		{Cluster: ref.Name, Name: fixture.GroupA, LabelValue: fixture.GroupA, Version: "1.30.4-gke.1200", Size: 2, Labels: map[string]string{"role": "a"}},
	}))
}
