package aks_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/aks"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/aks/akstest"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/cloudtest"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/conformance"
)

const fakeToken = "eyJ0eXAiOiJKV1QiLCJhbGciOiJub25lIn0.fake-token-for-tests"

// staticCredential is a fake Entra ID credential.
type staticCredential struct{}

func (staticCredential) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: fakeToken, ExpiresOn: time.Now().Add(time.Hour)}, nil
}

var fixture = conformance.Fixture{
	FromVersion: "1.29", TargetVersion: "1.30",
	GroupA: "poola", GroupB: "poolb", NewGroup: "vmstorage130",
}

var ref = cloud.ClusterRef{Provider: cloud.AKS, Name: "prod", Region: "westeurope",
	SubscriptionID: "00000000-0000-0000-0000-000000000001", ResourceGroup: "obs-rg"}

func seed(srv *akstest.Server) {
	srv.AddCluster(akstest.Cluster{
		SubscriptionID: ref.SubscriptionID, ResourceGroup: ref.ResourceGroup, Name: ref.Name, Location: ref.Region, Version: "1.29.9",
		AgentPools: []akstest.AgentPool{
			{Name: "system", Count: 1, VMSize: "Standard_D2s_v5", Mode: "System"},
			{Name: fixture.GroupA, Count: 2, VMSize: "Standard_D4s_v5", Labels: map[string]string{"role": "a"}},
			{Name: fixture.GroupB, Count: 2, VMSize: "Standard_E8s_v5", Labels: map[string]string{"role": "b", "app": "vmstorage"},
				Taints: []string{"dedicated=vmstorage:NoSchedule"}, Zones: []string{"1", "2"}, MaxPods: 60, OSDiskSizeGB: 256,
				SubnetID: "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/v/subnets/nodes",
				MinCount: 2, MaxCount: 5, Tags: map[string]string{"team": "obs"}},
		},
	})
}

func newProvider(t *testing.T, srv *akstest.Server) *aks.Provider {
	t.Helper()
	p, err := aks.New(aks.Options{Credential: staticCredential{}, Endpoint: srv.URL, Transport: srv.Client(), PollInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// actions maps the suite's call kinds to the ARM call that does the work.
var actions = map[string]string{
	conformance.DescribeCluster:          akstest.GetManagedCluster,
	conformance.StartControlPlaneUpgrade: akstest.PutManagedCluster,
	conformance.ListNodeGroups:           akstest.ListAgentPools,
	conformance.StartNodeGroupUpgrade:    akstest.PutAgentPool,
	conformance.StartCreateNodeGroup:     akstest.PutAgentPool,
	conformance.StartDeleteNodeGroup:     akstest.DeleteAgentPool,
	conformance.PollOperation:            akstest.GetOperationStatus,
}

func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.OnFake(fixture, ref, newFake, newProvider, actions))
}

// newFake starts a fake AKS holding the fixture.
func newFake(t *testing.T) *akstest.Server {
	srv := akstest.New(t)
	seed(srv)
	return srv
}

func start(t *testing.T) (*akstest.Server, *aks.Provider) {
	srv := newFake(t)
	return srv, newProvider(t, srv)
}

func waitDone(t *testing.T, p cloud.Provider, id string) *cloud.OperationStatus {
	t.Helper()
	return conformance.Poll(t, p, ref, id, 20)
}

func TestOperationIDsCarryTheResumeToken(t *testing.T) {
	g := NewWithT(t)
	_, p := start(t)
	id, err := p.StartNodeGroupUpgrade(context.Background(), ref, fixture.GroupA, "1.30", "tok")
	g.Expect(err).NotTo(HaveOccurred())
	var o map[string]string
	g.Expect(json.Unmarshal([]byte(id), &o)).To(Succeed())
	g.Expect(o).To(HaveKeyWithValue("kind", "upgrade"))
	g.Expect(o).To(HaveKeyWithValue("target", fixture.GroupA))
	g.Expect(o["resumeToken"]).To(ContainSubstring("asyncURL"), "an Azure-AsyncOperation poller's token")
	g.Expect(len(id)).To(BeNumerically("<", 8192), "fits status.steps[].operationID")
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
		{name: "throttled", fault: cloudtest.Throttle, retryAfter: "17", wantKind: cloud.Retryable, wantStatus: 429, wantAfter: 17 * time.Second},
		{name: "unavailable", fault: cloudtest.ServerError, wantKind: cloud.Retryable, wantStatus: 503},
		{name: "invalid parameter", fault: cloudtest.Permanent, wantKind: cloud.Permanent, wantStatus: 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, p := start(t)
			srv.ThrottleRetryAfter = tc.retryAfter
			srv.Inject(akstest.GetManagedCluster, 1, tc.fault)
			_, err := p.DescribeCluster(context.Background(), ref)
			conformance.ExpectClassified(t, err, conformance.Classified{Kind: tc.wantKind, Status: tc.wantStatus, RetryAfter: tc.wantAfter},
				fakeToken, "api-version", ref.SubscriptionID)
		})
	}
}

func TestPlainHTTPNeedsTheInsecureOption(t *testing.T) {
	g := NewWithT(t)
	srv := akstest.NewServer(false)
	defer srv.Close()
	seed(srv)
	p, err := aks.New(aks.Options{Credential: staticCredential{}, Endpoint: srv.URL})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = p.DescribeCluster(context.Background(), ref)
	g.Expect(err).To(HaveOccurred(), "azcore refuses to send a bearer token over http")

	p, err = aks.New(aks.Options{Credential: staticCredential{}, Endpoint: srv.URL, InsecureAllowCredentialWithHTTP: true})
	g.Expect(err).NotTo(HaveOccurred())
	c, err := p.DescribeCluster(context.Background(), ref)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Version).To(Equal("1.29.9"))
}

func TestRepeatedStartsInAFreshProvider(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		start func(p *aks.Provider) (string, error)
		after func(g Gomega, srv *akstest.Server)
	}{
		{name: "control plane", start: func(p *aks.Provider) (string, error) { return p.StartControlPlaneUpgrade(ctx, ref, "1.30", "tok-cp") }},
		{name: "agent pool upgrade", start: func(p *aks.Provider) (string, error) {
			return p.StartNodeGroupUpgrade(ctx, ref, fixture.GroupA, "1.30", "tok-ng")
		}, after: func(g Gomega, srv *akstest.Server) {
			ap, _ := srv.AgentPool(ref.SubscriptionID, ref.ResourceGroup, ref.Name, fixture.GroupA)
			g.Expect(*ap.Properties.CurrentOrchestratorVersion).To(Equal("1.30.6"))
		}},
		{name: "create", start: func(p *aks.Provider) (string, error) {
			return p.StartCreateNodeGroup(ctx, ref, cloud.NodeGroup{Name: "extra", DesiredSize: 1, InstanceTypes: []string{"Standard_D2s_v5"}}, "tok-create")
		}, after: func(g Gomega, srv *akstest.Server) {
			ap, ok := srv.AgentPool(ref.SubscriptionID, ref.ResourceGroup, ref.Name, "extra")
			g.Expect(ok).To(BeTrue())
			g.Expect(*ap.Properties.Tags[aks.TokenTag]).To(Equal("tok-create"))
		}},
		{name: "delete", start: func(p *aks.Provider) (string, error) {
			return p.StartDeleteNodeGroup(ctx, ref, fixture.GroupB, "tok-del")
		},
			after: func(g Gomega, srv *akstest.Server) {
				_, ok := srv.AgentPool(ref.SubscriptionID, ref.ResourceGroup, ref.Name, fixture.GroupB)
				g.Expect(ok).To(BeFalse())
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			srv, p := start(t)
			puts := srv.Calls(akstest.PutAgentPool) + srv.Calls(akstest.PutManagedCluster) + srv.Calls(akstest.DeleteAgentPool)
			id1, err := tc.start(p)
			g.Expect(err).NotTo(HaveOccurred())
			// The same instance answers the same id.
			same, err := tc.start(p)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(same).To(Equal(id1))
			// A restarted operator repeating the call finds the operation
			// in flight and starts nothing.
			fresh := newProvider(t, srv)
			id2, err := tc.start(fresh)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(srv.Calls(akstest.PutAgentPool) + srv.Calls(akstest.PutManagedCluster) + srv.Calls(akstest.DeleteAgentPool)).To(Equal(puts + 1))
			g.Expect(waitDone(t, fresh, id2).State).To(Equal(cloud.OperationSucceeded))
			g.Expect(waitDone(t, p, id1).State).To(Equal(cloud.OperationSucceeded))
			if tc.after != nil {
				tc.after(g, srv)
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
	g.Expect(groups).To(HaveLen(3), "three pages of one")
	var old cloud.NodeGroup
	for _, x := range groups {
		if x.Name == fixture.GroupB {
			old = x
		}
	}
	g.Expect(old.Taints).To(Equal([]cloud.Taint{{Key: "dedicated", Value: "vmstorage", Effect: "NoSchedule"}}))
	clone := old
	clone.Name, clone.Version = "poolb130", "1.30"
	id, err := p.StartCreateNodeGroup(ctx, ref, clone, "tok")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(waitDone(t, p, id).State).To(Equal(cloud.OperationSucceeded))

	was, _ := srv.AgentPool(ref.SubscriptionID, ref.ResourceGroup, ref.Name, fixture.GroupB)
	got, ok := srv.AgentPool(ref.SubscriptionID, ref.ResourceGroup, ref.Name, clone.Name)
	g.Expect(ok).To(BeTrue())
	w, n := was.Properties, got.Properties
	g.Expect(*n.CurrentOrchestratorVersion).To(Equal("1.30.6"))
	g.Expect(n.VMSize).To(Equal(w.VMSize))
	g.Expect(n.Count).To(Equal(w.Count))
	g.Expect([]any{n.EnableAutoScaling, n.MinCount, n.MaxCount}).To(Equal([]any{w.EnableAutoScaling, w.MinCount, w.MaxCount}))
	g.Expect(n.NodeLabels).To(Equal(w.NodeLabels))
	g.Expect(n.NodeTaints).To(Equal(w.NodeTaints))
	g.Expect(n.AvailabilityZones).To(Equal(w.AvailabilityZones))
	g.Expect(n.VnetSubnetID).To(Equal(w.VnetSubnetID))
	g.Expect(n.MaxPods).To(Equal(w.MaxPods))
	g.Expect(n.OSDiskSizeGB).To(Equal(w.OSDiskSizeGB))
	g.Expect(n.Mode).To(Equal(w.Mode))
	g.Expect(*n.Tags["team"]).To(Equal("obs"))
	g.Expect(*n.Tags[aks.TokenTag]).To(Equal("tok"))
}

func TestFailedOperationsReportTheCloudsMessage(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		start func(p *aks.Provider) (string, error)
	}{
		{name: "control plane", start: func(p *aks.Provider) (string, error) { return p.StartControlPlaneUpgrade(ctx, ref, "1.30", "tok") }},
		{name: "agent pool", start: func(p *aks.Provider) (string, error) {
			return p.StartNodeGroupUpgrade(ctx, ref, fixture.GroupA, "1.30", "tok")
		}},
		{name: "delete", start: func(p *aks.Provider) (string, error) { return p.StartDeleteNodeGroup(ctx, ref, fixture.GroupA, "tok") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			srv, p := start(t)
			srv.FailOperations(1)
			id, err := tc.start(p)
			g.Expect(err).NotTo(HaveOccurred())
			st := waitDone(t, p, id)
			g.Expect(st.State).To(Equal(cloud.OperationFailed))
			g.Expect(st.Message).To(ContainSubstring("ReconcileVMSSAgentPoolFailed"))
		})
	}
}

func TestRequests(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name     string
		call     func(p *aks.Provider) error
		wantKind cloud.ErrorKind
		wantMsg  string
	}{
		{name: "missing cluster", wantKind: cloud.NotFound, call: func(p *aks.Provider) error {
			other := ref
			other.ResourceGroup = "elsewhere"
			_, err := p.DescribeCluster(ctx, other)
			return err
		}},
		{name: "no resource group", wantKind: cloud.Permanent, wantMsg: "resource group", call: func(p *aks.Provider) error {
			other := ref
			other.ResourceGroup = ""
			_, err := p.ListNodeGroups(ctx, other)
			return err
		}},
		{name: "pool name too long for AKS", wantKind: cloud.Permanent, wantMsg: "12 lowercase", call: func(p *aks.Provider) error {
			_, err := p.StartCreateNodeGroup(ctx, ref, cloud.NodeGroup{Name: "vmstorage-130", DesiredSize: 1, InstanceTypes: []string{"x"}}, "tok")
			return err
		}},
		{name: "existing pool", wantKind: cloud.Permanent, wantMsg: "already exists", call: func(p *aks.Provider) error {
			_, err := p.StartCreateNodeGroup(ctx, ref, cloud.NodeGroup{Name: fixture.GroupA, DesiredSize: 1, InstanceTypes: []string{"x"}}, "tok")
			return err
		}},
		{name: "upgrade of a missing pool", wantKind: cloud.NotFound, call: func(p *aks.Provider) error {
			_, err := p.StartNodeGroupUpgrade(ctx, ref, "nope", "1.30", "tok")
			return err
		}},
		{name: "delete of a missing pool", wantKind: cloud.NotFound, call: func(p *aks.Provider) error {
			_, err := p.StartDeleteNodeGroup(ctx, ref, "nope", "tok")
			return err
		}},
		{name: "control plane skipping a minor", wantKind: cloud.Permanent, wantMsg: "UpgradeNotAllowed", call: func(p *aks.Provider) error {
			_, err := p.StartControlPlaneUpgrade(ctx, ref, "1.31", "tok")
			return err
		}},
		{name: "malformed operation id", wantKind: cloud.Permanent, call: func(p *aks.Provider) error {
			_, err := p.PollOperation(ctx, ref, "upgrade:poola")
			return err
		}},
		{name: "addons", wantKind: cloud.Unsupported, call: func(p *aks.Provider) error {
			_, err := p.StartAddonUpdate(ctx, ref, cloud.AddonUpdate{Name: "x", Version: "1"}, "tok")
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, p := start(t)
			err := tc.call(p)
			g.Expect(cloud.KindOf(err)).To(Equal(tc.wantKind), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring(tc.wantMsg))
		})
	}
}

func TestAnotherOperationInProgressIsRetryable(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	_, p := start(t)
	_, err := p.StartControlPlaneUpgrade(ctx, ref, "1.30", "tok-cp")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = p.StartNodeGroupUpgrade(ctx, ref, fixture.GroupA, "1.30", "tok-ng")
	g.Expect(cloud.IsRetryable(err)).To(BeTrue(), "%v", err)
	g.Expect(strings.ToLower(err.Error())).To(ContainSubstring("in progress"))
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
	srv := akstest.New(t)
	var events []akstest.NodeGroupEvent
	srv.OnNodeGroup = func(e akstest.NodeGroupEvent) { events = append(events, e) }
	seed(srv)
	p := newProvider(t, srv)
	g.Expect(events).To(HaveLen(3))
	id, err := p.StartDeleteNodeGroup(ctx, ref, fixture.GroupA, "tok")
	g.Expect(err).NotTo(HaveOccurred())
	waitDone(t, p, id)
	g.Expect(events[3:]).To(Equal([]akstest.NodeGroupEvent{
		{Cluster: ref.Name, Name: fixture.GroupA, LabelValue: fixture.GroupA, Version: "1.29.9", Size: 2, Labels: map[string]string{"role": "a"}, Deleted: true},
	}))
}
