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

func newProvider(t *testing.T, srv *gketest.Server) *gke.Provider {
	t.Helper()
	p, err := gke.New(context.Background(), gke.Options{
		Endpoint:      srv.URL,
		ClientOptions: []option.ClientOption{option.WithTokenSource(oauth2.StaticTokenSource(&oauth2.Token{AccessToken: fakeToken}))},
		PollInterval:  time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
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

func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.OnFake(fixture, ref, newFake, newProvider, actions))
}

// newFake starts a fake GKE holding the fixture.
func newFake(t *testing.T) *gketest.Server {
	srv := gketest.New(t)
	seed(srv)
	return srv
}

func start(t *testing.T) (*gketest.Server, *gke.Provider) {
	srv := newFake(t)
	return srv, newProvider(t, srv)
}

func waitDone(t *testing.T, p cloud.Provider, id string) *cloud.OperationStatus {
	t.Helper()
	return conformance.Poll(t, p, ref, id, 20)
}

func TestErrorClassification(t *testing.T) {
	cases := []struct {
		name       string
		fault      cloudtest.Fault
		retryAfter string
		wantKind   cloud.ErrorKind
		wantStatus int
		wantAfter  time.Duration
	}{
		{name: "quota exhausted with Retry-After", fault: cloudtest.Throttle, retryAfter: "3", wantKind: cloud.Retryable, wantStatus: 429, wantAfter: 3 * time.Second},
		{name: "quota exhausted", fault: cloudtest.Throttle, wantKind: cloud.Retryable, wantStatus: 429},
		{name: "unavailable", fault: cloudtest.ServerError, wantKind: cloud.Retryable, wantStatus: 503},
		{name: "invalid argument", fault: cloudtest.Permanent, wantKind: cloud.Permanent, wantStatus: 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, p := start(t)
			srv.ThrottleRetryAfter = tc.retryAfter
			srv.Inject(gketest.GetCluster, 1, tc.fault)
			_, err := p.DescribeCluster(context.Background(), ref)
			conformance.ExpectClassified(t, err, conformance.Classified{Kind: tc.wantKind, Status: tc.wantStatus, RetryAfter: tc.wantAfter},
				fakeToken)
		})
	}
}

func TestAnotherOperationRunningIsRetryable(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	_, p := start(t)
	_, err := p.StartControlPlaneUpgrade(ctx, ref, "1.30", "tok-cp")
	g.Expect(err).NotTo(HaveOccurred())
	// The master upgrade holds the cluster: GKE answers FAILED_PRECONDITION.
	_, err = p.StartNodeGroupUpgrade(ctx, ref, fixture.GroupA, "1.30", "tok-ng")
	g.Expect(cloud.IsRetryable(err)).To(BeTrue(), "%v (%s)", err, cloud.KindOf(err))
	g.Expect(err.Error()).To(ContainSubstring("FAILED_PRECONDITION"))
}

func TestRepeatedStartsFindTheRunningOperation(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		start func(p *gke.Provider) (string, error)
	}{
		{name: "master upgrade", start: func(p *gke.Provider) (string, error) { return p.StartControlPlaneUpgrade(ctx, ref, "1.30", "tok") }},
		{name: "create", start: func(p *gke.Provider) (string, error) {
			return p.StartCreateNodeGroup(ctx, ref, cloud.NodeGroup{Name: "new", DesiredSize: 1, InstanceTypes: []string{"e2-small"}}, "tok")
		}},
		{name: "delete", start: func(p *gke.Provider) (string, error) { return p.StartDeleteNodeGroup(ctx, ref, fixture.GroupA, "tok") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			srv, p := start(t)
			id1, err := tc.start(p)
			g.Expect(err).NotTo(HaveOccurred())
			// A fresh provider (restarted operator) repeats the call.
			id2, err := tc.start(newProvider(t, srv))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(id2).To(Equal(id1))
			g.Expect(waitDone(t, p, id1).State).To(Equal(cloud.OperationSucceeded))
			// Repeated after the operation finished: the same, done, operation.
			if tc.name != "delete" {
				id3, err := tc.start(p)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(id3).To(Equal(id1))
			}
		})
	}
}

func TestCloneKeepsSettings(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv, p := start(t)
	groups, err := p.ListNodeGroups(ctx, ref)
	g.Expect(err).NotTo(HaveOccurred())
	var old cloud.NodeGroup
	for _, x := range groups {
		if x.Name == fixture.GroupB {
			old = x
		}
	}
	g.Expect(old.DesiredSize).To(Equal(int32(2)), "one node in each of two zones")
	g.Expect([]int32{old.MinSize, old.MaxSize}).To(Equal([]int32{2, 6}))
	clone := old
	clone.Name, clone.Version = "pool-b-130", "1.30"
	id, err := p.StartCreateNodeGroup(ctx, ref, clone, "tok")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(waitDone(t, p, id).State).To(Equal(cloud.OperationSucceeded))

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
	g := NewWithT(t)
	srv, p := start(t)
	srv.FailOperations(1)
	id, err := p.StartNodeGroupUpgrade(context.Background(), ref, fixture.GroupA, "1.30", "tok")
	g.Expect(err).NotTo(HaveOccurred())
	st := waitDone(t, p, id)
	g.Expect(st.State).To(Equal(cloud.OperationFailed))
	g.Expect(st.Message).To(ContainSubstring("simulated failure of UPGRADE_NODES"))
}

func TestRequests(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name     string
		call     func(p *gke.Provider) error
		wantKind cloud.ErrorKind
	}{
		{name: "missing cluster", wantKind: cloud.NotFound, call: func(p *gke.Provider) error {
			other := ref
			other.Region = "us-central1"
			_, err := p.DescribeCluster(ctx, other)
			return err
		}},
		{name: "no project", wantKind: cloud.Permanent, call: func(p *gke.Provider) error {
			other := ref
			other.Project = ""
			_, err := p.ListNodeGroups(ctx, other)
			return err
		}},
		{name: "upgrade of a missing pool", wantKind: cloud.NotFound, call: func(p *gke.Provider) error {
			_, err := p.StartNodeGroupUpgrade(ctx, ref, "nope", "1.30", "tok")
			return err
		}},
		{name: "create of an existing pool", wantKind: cloud.Permanent, call: func(p *gke.Provider) error {
			_, err := p.StartCreateNodeGroup(ctx, ref, cloud.NodeGroup{Name: fixture.GroupA, DesiredSize: 1}, "tok")
			return err
		}},
		{name: "two machine types", wantKind: cloud.Permanent, call: func(p *gke.Provider) error {
			_, err := p.StartCreateNodeGroup(ctx, ref, cloud.NodeGroup{Name: "x", DesiredSize: 1, InstanceTypes: []string{"a", "b"}}, "tok")
			return err
		}},
		{name: "master skipping a minor", wantKind: cloud.Permanent, call: func(p *gke.Provider) error {
			_, err := p.StartControlPlaneUpgrade(ctx, ref, "1.31", "tok")
			return err
		}},
		{name: "unknown operation", wantKind: cloud.NotFound, call: func(p *gke.Provider) error {
			_, err := p.PollOperation(ctx, ref, "operation-1-deadbeef")
			return err
		}},
		{name: "malformed operation id", wantKind: cloud.Permanent, call: func(p *gke.Provider) error {
			_, err := p.PollOperation(ctx, ref, "a/b")
			return err
		}},
		{name: "addons", wantKind: cloud.Unsupported, call: func(p *gke.Provider) error {
			_, err := p.ListAddons(ctx, ref)
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, p := start(t)
			err := tc.call(p)
			NewWithT(t).Expect(cloud.KindOf(err)).To(Equal(tc.wantKind), "%v", err)
		})
	}
}

func TestPollAcceptsFullOperationNames(t *testing.T) {
	g := NewWithT(t)
	_, p := start(t)
	id, err := p.StartDeleteNodeGroup(context.Background(), ref, fixture.GroupB, "tok")
	g.Expect(err).NotTo(HaveOccurred())
	full := "projects/" + ref.Project + "/locations/" + ref.Region + "/operations/" + id
	g.Expect(waitDone(t, p, full).State).To(Equal(cloud.OperationSucceeded))
}

func TestUnreachableEndpointIsRetryable(t *testing.T) {
	srv, p := start(t)
	srv.Close()
	_, err := p.ListNodeGroups(context.Background(), ref)
	NewWithT(t).Expect(cloud.IsRetryable(err)).To(BeTrue(), "%v", err)
}

func TestNodeGroupEvents(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := gketest.New(t)
	var events []gketest.NodeGroupEvent
	srv.OnNodeGroup = func(e gketest.NodeGroupEvent) { events = append(events, e) }
	seed(srv)
	p := newProvider(t, srv)
	g.Expect(events).To(HaveLen(2))
	id, err := p.StartNodeGroupUpgrade(ctx, ref, fixture.GroupA, "1.30", "tok")
	g.Expect(err).NotTo(HaveOccurred())
	waitDone(t, p, id)
	g.Expect(events[2:]).To(Equal([]gketest.NodeGroupEvent{
		{Cluster: ref.Name, Name: fixture.GroupA, LabelValue: fixture.GroupA, Version: "1.30.4-gke.1200", Size: 2, Labels: map[string]string{"role": "a"}},
	}))
}
