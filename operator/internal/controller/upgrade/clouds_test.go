package upgrade_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/alibabacloud-go/tea/tea"
	alicredentials "github.com/aliyun/credentials-go/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials"
	. "github.com/onsi/gomega"
	"golang.org/x/oauth2"
	"google.golang.org/api/option"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/manager"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/ack"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/ack/acktest"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/aks"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/aks/akstest"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/eks"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/eks/ekstest"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/gke"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/gke/gketest"
)

// groupEvent is a fake cloud's node-group change, whatever the cloud.
type groupEvent struct {
	labelValue string
	size       int32
	deleted    bool
}

// cloudCase is one cloud's fake server and provider for a whole
// ClusterUpgradeOperation: the control plane, an addon where the cloud
// has them, an in-place node group and a blue-green one.
type cloudCase struct {
	provider opsv1.CloudProvider
	// target is the target version ("1.30" unless set), and resolved the
	// version the operator resolves it to (ACK: its full version; the
	// target itself unless set).
	target   string
	resolved string
	region   string
	inPlace  string
	oldGroup string
	newGroup string
	addons   []opsv1.ClusterAddon
	// start starts the fake cloud, reporting node-group changes to
	// mirror, and returns the provider, the cluster's identity and the
	// number of mutating calls the cloud answered so far.
	start func(t *testing.T, cluster string, mirror func(groupEvent)) (cloud.Provider, cloud.ClusterIdentity, func() int)
}

var cloudCases = []cloudCase{
	{
		provider: opsv1.CloudProviderEKS, region: "eu-west-1", inPlace: "eks-a", oldGroup: "eks-b", newGroup: "eks-b-130",
		addons: []opsv1.ClusterAddon{{Name: "vpc-cni", Version: "v1.18.5-eksbuild.1", ResolveConflicts: opsv1.ResolveConflictsPreserve}},
		start: func(t *testing.T, cluster string, mirror func(groupEvent)) (cloud.Provider, cloud.ClusterIdentity, func() int) {
			srv := ekstest.New(t)
			srv.OnNodeGroup = func(e ekstest.NodeGroupEvent) { mirror(groupEvent{e.LabelValue, e.Size, e.Deleted}) }
			group := func(name string) ekstest.NodeGroup {
				return ekstest.NodeGroup{Name: name, DesiredSize: 2, MinSize: 1, MaxSize: 3, InstanceTypes: []string{"m5.large"},
					Labels: map[string]string{"role": name}, Subnets: []string{"subnet-1"}, NodeRole: "arn:aws:iam::000000000000:role/nodes"}
			}
			srv.AddCluster(ekstest.Cluster{Name: cluster, Region: "eu-west-1", Version: "1.29",
				NodeGroups: []ekstest.NodeGroup{group("eks-a"), group("eks-b")},
				Addons:     []ekstest.Addon{{Name: "vpc-cni", Version: "v1.18.3-eksbuild.1", Versions: []string{"v1.18.5-eksbuild.1", "v1.18.3-eksbuild.1"}}}})
			p, err := eks.New(context.Background(), eks.Options{Region: "us-west-2", Endpoint: srv.URL, PollInterval: time.Second,
				Credentials: credentials.NewStaticCredentialsProvider("AKIAFAKEFAKEFAKEFAKE", "fake", "")})
			NewWithT(t).Expect(err).NotTo(HaveOccurred())
			return p, cloud.ClusterIdentity{}, func() int {
				return srv.Calls(ekstest.UpdateClusterVersion) + srv.Calls(ekstest.UpdateAddon) + srv.Calls(ekstest.UpdateNodegroupVersion) +
					srv.Calls(ekstest.CreateNodegroup) + srv.Calls(ekstest.DeleteNodegroup)
			}
		},
	},
	{
		provider: opsv1.CloudProviderGKE, region: "europe-west1", inPlace: "gke-a", oldGroup: "gke-b", newGroup: "gke-b-130",
		start: func(t *testing.T, cluster string, mirror func(groupEvent)) (cloud.Provider, cloud.ClusterIdentity, func() int) {
			srv := gketest.New(t)
			srv.OnNodeGroup = func(e gketest.NodeGroupEvent) { mirror(groupEvent{e.LabelValue, e.Size, e.Deleted}) }
			srv.AddCluster(gketest.Cluster{Project: "obs", Location: "europe-west1", Name: cluster, Version: "1.29.8-gke.1031000",
				NodePools: []gketest.NodePool{
					{Name: "gke-a", NodeCount: 2, MachineType: "e2-standard-4", Labels: map[string]string{"role": "a"}},
					{Name: "gke-b", NodeCount: 1, Locations: []string{"europe-west1-b", "europe-west1-c"}, MachineType: "n2-highmem-8"},
				}})
			p, err := gke.New(context.Background(), gke.Options{Endpoint: srv.URL, PollInterval: time.Second,
				ClientOptions: []option.ClientOption{option.WithTokenSource(oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "fake"}))}})
			NewWithT(t).Expect(err).NotTo(HaveOccurred())
			return p, cloud.ClusterIdentity{Project: "obs"}, func() int {
				return srv.Calls(gketest.UpdateMaster) + srv.Calls(gketest.UpdateNodePool) + srv.Calls(gketest.CreateNodePool) + srv.Calls(gketest.DeleteNodePool)
			}
		},
	},
	{
		provider: opsv1.CloudProviderAKS, region: "westeurope", inPlace: "aksa", oldGroup: "aksb", newGroup: "aksb130",
		start: func(t *testing.T, cluster string, mirror func(groupEvent)) (cloud.Provider, cloud.ClusterIdentity, func() int) {
			srv := akstest.New(t)
			srv.OnNodeGroup = func(e akstest.NodeGroupEvent) { mirror(groupEvent{e.LabelValue, e.Size, e.Deleted}) }
			srv.AddCluster(akstest.Cluster{SubscriptionID: "sub", ResourceGroup: "rg", Name: cluster, Location: "westeurope", Version: "1.29.9",
				AgentPools: []akstest.AgentPool{
					{Name: "aksa", Count: 2, VMSize: "Standard_D4s_v5"},
					{Name: "aksb", Count: 2, VMSize: "Standard_E8s_v5", Labels: map[string]string{"app": "vmstorage"}},
				}})
			p, err := aks.New(aks.Options{Credential: fakeAzureCredential{}, Endpoint: srv.URL, Transport: srv.Client(), PollInterval: time.Second})
			NewWithT(t).Expect(err).NotTo(HaveOccurred())
			return p, cloud.ClusterIdentity{SubscriptionID: "sub", ResourceGroup: "rg"}, func() int {
				return srv.Calls(akstest.PutManagedCluster) + srv.Calls(akstest.PutAgentPool) + srv.Calls(akstest.DeleteAgentPool)
			}
		},
	},
}

func init() {
	cloudCases = append(cloudCases, cloudCase{
		// A minor, as a CR committed to Git may hold: the operator resolves
		// it to the newest 1.30 version ACK offers (acktest.DefaultVersions).
		provider: opsv1.CloudProviderACK, region: "cn-beijing", target: "1.30", resolved: "1.30.1-aliyun.1",
		inPlace: "ack-a", oldGroup: "ack-b", newGroup: "ack-b-130",
		addons: []opsv1.ClusterAddon{{Name: "terway-eniip", Version: "v1.9.0"}},
		start: func(t *testing.T, cluster string, mirror func(groupEvent)) (cloud.Provider, cloud.ClusterIdentity, func() int) {
			srv := acktest.New(t)
			srv.OnNodeGroup = func(e acktest.NodeGroupEvent) { mirror(groupEvent{e.LabelValue, e.Size, e.Deleted}) }
			id := "c-" + strings.ReplaceAll(cluster, "-", "")
			if len(id) > 30 {
				id = id[:30]
			}
			srv.AddCluster(acktest.Cluster{ID: id, Name: cluster, Region: "cn-beijing", Version: "1.29.3-aliyun.1",
				NodePools: []acktest.NodePool{
					{ID: "np-a" + id[2:8], Name: "ack-a", DesiredSize: 2, InstanceTypes: []string{"ecs.g7.xlarge"}, VSwitchIDs: []string{"vsw-1"}},
					{ID: "np-b" + id[2:8], Name: "ack-b", DesiredSize: 2, InstanceTypes: []string{"ecs.r7.2xlarge"}, VSwitchIDs: []string{"vsw-1"}, Labels: map[string]string{"app": "vmstorage"}},
				},
				Addons: []acktest.Addon{{Name: "terway-eniip", Version: "v1.8.0", Latest: "v1.9.0"}}})
			cred, err := alicredentials.NewCredential(&alicredentials.Config{Type: tea.String("access_key"), AccessKeyId: tea.String("LTAIfakefakefake"), AccessKeySecret: tea.String("fake")})
			NewWithT(t).Expect(err).NotTo(HaveOccurred())
			p, err := ack.New(ack.Options{Region: "cn-beijing", Endpoint: srv.URL, Credential: cred, PollInterval: time.Second})
			NewWithT(t).Expect(err).NotTo(HaveOccurred())
			return p, cloud.ClusterIdentity{ClusterID: id}, func() int {
				return srv.Calls(acktest.UpgradeCluster) + srv.Calls(acktest.UpgradeClusterAddons) + srv.Calls(acktest.UpgradeClusterNodepool) +
					srv.Calls(acktest.CreateClusterNodePool) + srv.Calls(acktest.DeleteClusterNodepool)
			}
		},
	})
}

type fakeAzureCredential struct{}

func (fakeAzureCredential) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: "fake", ExpiresOn: time.Now().Add(time.Hour)}, nil
}

// nodeMirror plays the cloud's node provisioning: a fake cloud's node-group
// events become Ready Nodes labelled with the provider's node-group label.
func nodeMirror(t *testing.T, prefix, labelKey string) func(groupEvent) {
	return func(e groupEvent) {
		ctx := context.Background()
		sel := client.MatchingLabels{labelKey: e.labelValue}
		if e.deleted {
			if err := env.Client.DeleteAllOf(ctx, &corev1.Node{}, sel); err != nil {
				t.Errorf("deleting nodes of %s: %v", e.labelValue, err)
			}
			return
		}
		for i := int32(0); i < e.size; i++ {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-%d", prefix, e.labelValue, i), Labels: map[string]string{labelKey: e.labelValue}}}
			if err := env.Client.Create(ctx, node); err != nil {
				if client.IgnoreAlreadyExists(err) != nil {
					t.Errorf("creating node: %v", err)
				}
				continue
			}
			node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
			if err := env.Client.Status().Update(ctx, node); err != nil {
				t.Errorf("node status: %v", err)
			}
		}
	}
}

// TestUpgradeOnEachCloud runs a whole ClusterUpgradeOperation through the
// operator against each cloud's fake server, with the real SDKs.
func TestUpgradeOnEachCloud(t *testing.T) {
	for _, tc := range cloudCases {
		t.Run(string(tc.provider), func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := env.NewNamespace(t)
			cluster := "cl-" + ns
			var p cloud.Provider
			labelKey := map[opsv1.CloudProvider]string{opsv1.CloudProviderEKS: eks.NodeGroupLabel, opsv1.CloudProviderGKE: gke.NodeGroupLabel,
				opsv1.CloudProviderAKS: aks.NodeGroupLabel, opsv1.CloudProviderACK: ack.NodeGroupLabel}[tc.provider]
			target := tc.target
			if target == "" {
				target = "1.30"
			}
			p, identity, mutations := tc.start(t, cluster, nodeMirror(t, ns, labelKey))
			reg := cloud.NewRegistry(p)
			reg.Defaults[p.Name()] = identity

			o := testOptions()
			o.WatchNamespace = ns
			mgr, err := manager.New(env.Config, o, reg)
			g.Expect(err).NotTo(HaveOccurred())
			mctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() {
				defer close(done)
				if err := mgr.Start(mctx); err != nil {
					t.Errorf("manager: %v", err)
				}
			}()
			t.Cleanup(func() { cancel(); <-done })

			op := &opsv1.ClusterUpgradeOperation{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "upgrade"},
				Spec: opsv1.ClusterUpgradeOperationSpec{
					K8sClusterName: cluster, Region: tc.region, CloudProvider: tc.provider, TargetVersion: target,
					ClusterAddons: tc.addons,
					NodeGroupUpgrades: []opsv1.NodeGroupUpgrade{
						{NodeGroupName: tc.inPlace, Strategy: opsv1.StrategyInPlace},
						{NodeGroupName: tc.oldGroup, Strategy: opsv1.StrategyBlueGreen, NewNodeGroupName: tc.newGroup},
					},
				},
			}
			_, seedRef, err := reg.Resolve(p.Name(), cluster, tc.region)
			g.Expect(err).NotTo(HaveOccurred())
			oldSel, err := cloud.NodeSelectorFor(ctx, p, seedRef, tc.oldGroup)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(env.Client.List(ctx, &corev1.NodeList{}, client.MatchingLabels(oldSel))).To(Succeed())
			g.Expect(env.Client.Create(ctx, op)).To(Succeed())
			final := waitPhase(t, op, opsv1.UpgradePhaseSucceeded, 2*time.Minute)
			resolved := tc.resolved
			if resolved == "" {
				resolved = target
			}
			g.Expect(final.Status.ResolvedTargetVersion).To(Equal(resolved), "resolved once in preflight, recorded in status")
			for _, s := range final.Status.Steps {
				g.Expect(s.Phase).To(Equal(opsv1.StepPhaseSucceeded), "%s: %s", s.ID, s.Message)
			}

			_, ref, err := reg.Resolve(p.Name(), cluster, tc.region)
			g.Expect(err).NotTo(HaveOccurred())
			c, err := p.DescribeCluster(ctx, ref)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(c.Version).To(HavePrefix("1.30"))
			groups, err := p.ListNodeGroups(ctx, ref)
			g.Expect(err).NotTo(HaveOccurred())
			versions := map[string]string{}
			for _, x := range groups {
				versions[x.Name] = x.Version
			}
			g.Expect(versions).To(HaveLen(2), "%v", versions)
			g.Expect(versions[tc.inPlace]).To(HavePrefix("1.30"))
			g.Expect(versions[tc.newGroup]).To(HavePrefix("1.30"))
			if len(tc.addons) > 0 {
				addons, err := p.ListAddons(ctx, ref)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(addons).To(ContainElement(HaveField("Version", tc.addons[0].Version)))
			}
			// One cloud call per cloud step: control plane, addons, the
			// in-place upgrade, the clone and the delete.
			g.Expect(mutations()).To(Equal(4 + len(tc.addons)))

			// Nodes are found by the provider's selector (ACK labels the
			// node-pool id, not the name).
			nodes := &corev1.NodeList{}
			g.Expect(env.Client.List(ctx, nodes, client.MatchingLabels(oldSel))).To(Succeed())
			g.Expect(nodes.Items).To(BeEmpty(), "the old group's Nodes are gone with it")
			newSel, err := cloud.NodeSelectorFor(ctx, p, ref, tc.newGroup)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(env.Client.List(ctx, nodes, client.MatchingLabels(newSel))).To(Succeed())
			g.Expect(nodes.Items).NotTo(BeEmpty())
		})
	}
}
