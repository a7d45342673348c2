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

func connect(srv *akstest.Server) (*aks.Provider, error) {
	return aks.New(aks.Options{Credential: staticCredential{}, Endpoint: srv.URL, Transport: srv.Client(), PollInterval: time.Second})
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

var onFake = conformance.OnFake[*akstest.Server, *aks.Provider]{Fixture: fixture, Ref: ref, NewFake: akstest.New, Seed: seed, Connect: connect, Actions: actions}

func TestConformance(t *testing.T) { onFake.Run(t) }

func TestOperationIDsCarryTheResumeToken(t *testing.T) {
	g := NewWithT(t)
	_, p := onFake.Start(t)
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
	onFake.ExpectFaultsClassified(t, []conformance.FaultCase{
		{Name: "throttled", Fault: cloudtest.Throttle, RetryAfter: 17 * time.Second, Want: conformance.Classified{Kind: cloud.Retryable, Status: 429, RetryAfter: 17 * time.Second}},
		{Name: "unavailable", Fault: cloudtest.ServerError, Want: conformance.Classified{Kind: cloud.Retryable, Status: 503}},
		{Name: "invalid parameter", Fault: cloudtest.Permanent, Want: conformance.Classified{Kind: cloud.Permanent, Status: 400}},
	}, nil, fakeToken, "api-version", ref.SubscriptionID)
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
			srv, p := onFake.Start(t)
			puts := srv.Calls(akstest.PutAgentPool) + srv.Calls(akstest.PutManagedCluster) + srv.Calls(akstest.DeleteAgentPool)
			id1, err := tc.start(p)
			g.Expect(err).NotTo(HaveOccurred())
			// The same instance answers the same id.
			same, err := tc.start(p)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(same).To(Equal(id1))
			// A restarted operator repeating the call finds the operation
			// in flight and starts nothing.
			fresh := onFake.Provider(t, srv)
			id2, err := tc.start(fresh)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(srv.Calls(akstest.PutAgentPool) + srv.Calls(akstest.PutManagedCluster) + srv.Calls(akstest.DeleteAgentPool)).To(Equal(puts + 1))
			g.Expect(onFake.Poll(t, fresh, id2).State).To(Equal(cloud.OperationSucceeded))
			g.Expect(onFake.Poll(t, p, id1).State).To(Equal(cloud.OperationSucceeded))
			if tc.after != nil {
				tc.after(g, srv)
			}
		})
	}
}

func TestCloneKeepsSettings(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv, p := onFake.Start(t)
	groups, err := p.ListNodeGroups(ctx, ref)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(groups).To(HaveLen(3), "three pages of one")
	old := conformance.NodeGroupNamed(groups, fixture.GroupB)
	g.Expect(old.Taints).To(Equal([]cloud.Taint{{Key: "dedicated", Value: "vmstorage", Effect: "NoSchedule"}}))
	clone := old
	clone.Name, clone.Version = "poolb130", "1.30"
	id, err := p.StartCreateNodeGroup(ctx, ref, clone, "tok")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(onFake.Poll(t, p, id).State).To(Equal(cloud.OperationSucceeded))

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
	const want = "ReconcileVMSSAgentPoolFailed"
	onFake.ExpectFailuresReported(t, []conformance.Operation[*aks.Provider]{
		{Name: "control plane", Message: want, Start: func(p *aks.Provider) (string, error) { return p.StartControlPlaneUpgrade(ctx, ref, "1.30", "tok") }},
		{Name: "agent pool", Message: want, Start: func(p *aks.Provider) (string, error) {
			return p.StartNodeGroupUpgrade(ctx, ref, fixture.GroupA, "1.30", "tok")
		}},
		{Name: "delete", Message: want, Start: func(p *aks.Provider) (string, error) { return p.StartDeleteNodeGroup(ctx, ref, fixture.GroupA, "tok") }},
	})
}

func TestRequests(t *testing.T) {
	ctx := context.Background()
	onFake.ExpectRefusals(t, []conformance.Refusal[*aks.Provider]{
		{Name: "missing cluster", Kind: cloud.NotFound, Call: func(p *aks.Provider) error {
			other := ref
			other.ResourceGroup = "elsewhere"
			_, err := p.DescribeCluster(ctx, other)
			return err
		}},
		{Name: "no resource group", Kind: cloud.Permanent, Message: "resource group", Call: func(p *aks.Provider) error {
			other := ref
			other.ResourceGroup = ""
			_, err := p.ListNodeGroups(ctx, other)
			return err
		}},
		{Name: "pool name too long for AKS", Kind: cloud.Permanent, Message: "12 lowercase", Call: func(p *aks.Provider) error {
			_, err := p.StartCreateNodeGroup(ctx, ref, cloud.NodeGroup{Name: "vmstorage-130", DesiredSize: 1, InstanceTypes: []string{"x"}}, "tok")
			return err
		}},
		{Name: "existing pool", Kind: cloud.Permanent, Message: "already exists", Call: func(p *aks.Provider) error {
			_, err := p.StartCreateNodeGroup(ctx, ref, cloud.NodeGroup{Name: fixture.GroupA, DesiredSize: 1, InstanceTypes: []string{"x"}}, "tok")
			return err
		}},
		{Name: "upgrade of a missing pool", Kind: cloud.NotFound, Call: func(p *aks.Provider) error {
			_, err := p.StartNodeGroupUpgrade(ctx, ref, "nope", "1.30", "tok")
			return err
		}},
		{Name: "delete of a missing pool", Kind: cloud.NotFound, Call: func(p *aks.Provider) error {
			_, err := p.StartDeleteNodeGroup(ctx, ref, "nope", "tok")
			return err
		}},
		{Name: "control plane skipping a minor", Kind: cloud.Permanent, Message: "UpgradeNotAllowed", Call: func(p *aks.Provider) error {
			_, err := p.StartControlPlaneUpgrade(ctx, ref, "1.31", "tok")
			return err
		}},
		{Name: "malformed operation id", Kind: cloud.Permanent, Call: func(p *aks.Provider) error {
			_, err := p.PollOperation(ctx, ref, "upgrade:poola")
			return err
		}},
		{Name: "addons", Kind: cloud.Unsupported, Call: func(p *aks.Provider) error {
			_, err := p.StartAddonUpdate(ctx, ref, cloud.AddonUpdate{Name: "x", Version: "1"}, "tok")
			return err
		}},
	})
}

func TestAnotherOperationInProgressIsRetryable(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	_, p := onFake.Start(t)
	_, err := p.StartControlPlaneUpgrade(ctx, ref, "1.30", "tok-cp")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = p.StartNodeGroupUpgrade(ctx, ref, fixture.GroupA, "1.30", "tok-ng")
	g.Expect(cloud.IsRetryable(err)).To(BeTrue(), "%v", err)
	g.Expect(strings.ToLower(err.Error())).To(ContainSubstring("in progress"))
}

func TestNodeGroupEvents(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv, p := onFake.Start(t)
	g.Expect(srv.NodeGroupEvents()).To(HaveLen(3))
	id, err := p.StartDeleteNodeGroup(ctx, ref, fixture.GroupA, "tok")
	g.Expect(err).NotTo(HaveOccurred())
	onFake.Poll(t, p, id)
	g.Expect(srv.NodeGroupEvents()[3:]).To(Equal([]akstest.NodeGroupEvent{
		{Cluster: ref.Name, Name: fixture.GroupA, LabelValue: fixture.GroupA, Version: "1.29.9", Size: 2, Labels: map[string]string{"role": "a"}, Deleted: true},
	}))
}
