// Package aks implements cloud.Provider for Azure Kubernetes Service on
// github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v8.
//
// A cluster is managedClusters/<Name> in ClusterRef.SubscriptionID and
// ClusterRef.ResourceGroup. Upgrades are read-modify-write PUTs (with
// If-Match on the resource's ETag): the control plane by the managed
// cluster's kubernetesVersion (agent pools keep their orchestratorVersion,
// like `az aks upgrade --control-plane-only`), an agent pool by its
// orchestratorVersion. A clone is a PUT of a new agent pool (with
// If-None-Match: *) carrying the source pool's properties.
//
// Operation ids are small JSON documents holding the SDK poller's resume
// token (runtime.Poller.ResumeToken), which PollOperation hands back to
// the SDK (the Begin* call's ResumeToken option) from any provider
// instance. ARM has no request tokens, so a repeated Start checks the
// cloud's state: a target already moving towards the same intent
// (Upgrading to the same version, Creating with our idempotency tag,
// Deleting) is the earlier call's operation, and its id then names the
// target instead of a poller (PollOperation reads the target's
// provisioningState). Within one provider instance the id the token got
// first is returned again.
package aks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	azcloud "github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v8"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// NodeGroupLabel is the label AKS puts on the Nodes of an agent pool.
const NodeGroupLabel = "kubernetes.azure.com/agentpool"

// TokenTag is the agent-pool tag holding the idempotency token of the
// call that created the pool.
const TokenTag = "ops.observability.tidbcloud.com/idempotency-token"

// Keys of cloud.NodeGroup.Extra that StartCreateNodeGroup reads when it
// clones an agent pool; ListNodeGroups fills them.
const (
	// ExtraSource names the pool the settings were read from; when it
	// still exists all its properties are copied (subnets, zones, OS,
	// disks, kubelet config, upgrade settings, ...), then the explicit
	// keys below and the NodeGroup's own fields are applied.
	ExtraSource            = "source"
	ExtraMode              = "mode" // System | User
	ExtraOSType            = "osType"
	ExtraOSSKU             = "osSKU"
	ExtraOSDiskSizeGB      = "osDiskSizeGB"
	ExtraVnetSubnetID      = "vnetSubnetID"
	ExtraAvailabilityZones = "availabilityZones" // comma-separated
	ExtraMaxPods           = "maxPods"
	ExtraAutoScaling       = "enableAutoScaling" // "true"
)

// ManagedClustersAPI is the part of armcontainerservice.ManagedClustersClient
// the provider uses.
type ManagedClustersAPI interface {
	Get(ctx context.Context, resourceGroupName, resourceName string, options *armcontainerservice.ManagedClustersClientGetOptions) (armcontainerservice.ManagedClustersClientGetResponse, error)
	BeginCreateOrUpdate(ctx context.Context, resourceGroupName, resourceName string, parameters armcontainerservice.ManagedCluster, options *armcontainerservice.ManagedClustersClientBeginCreateOrUpdateOptions) (*runtime.Poller[armcontainerservice.ManagedClustersClientCreateOrUpdateResponse], error)
}

// AgentPoolsAPI is the part of armcontainerservice.AgentPoolsClient the
// provider uses.
type AgentPoolsAPI interface {
	Get(ctx context.Context, resourceGroupName, resourceName, agentPoolName string, options *armcontainerservice.AgentPoolsClientGetOptions) (armcontainerservice.AgentPoolsClientGetResponse, error)
	NewListPager(resourceGroupName, resourceName string, options *armcontainerservice.AgentPoolsClientListOptions) *runtime.Pager[armcontainerservice.AgentPoolsClientListResponse]
	BeginCreateOrUpdate(ctx context.Context, resourceGroupName, resourceName, agentPoolName string, parameters armcontainerservice.AgentPool, options *armcontainerservice.AgentPoolsClientBeginCreateOrUpdateOptions) (*runtime.Poller[armcontainerservice.AgentPoolsClientCreateOrUpdateResponse], error)
	BeginDelete(ctx context.Context, resourceGroupName, resourceName, agentPoolName string, options *armcontainerservice.AgentPoolsClientBeginDeleteOptions) (*runtime.Poller[armcontainerservice.AgentPoolsClientDeleteResponse], error)
}

var (
	_ ManagedClustersAPI = (*armcontainerservice.ManagedClustersClient)(nil)
	_ AgentPoolsAPI      = (*armcontainerservice.AgentPoolsClient)(nil)
)

// Clients are the SDK clients of one subscription.
type Clients struct {
	ManagedClusters ManagedClustersAPI
	AgentPools      AgentPoolsAPI
}

// Options configure the provider.
type Options struct {
	// Credential overrides the default chain (azidentity's
	// DefaultAzureCredential: environment, AKS workload identity, managed
	// identity, Azure CLI).
	Credential azcore.TokenCredential
	// Endpoint overrides the Azure Resource Manager endpoint (tests,
	// sovereign clouds); Audience is its token audience (default: the
	// public cloud's).
	Endpoint string
	Audience string
	// Transport overrides the HTTP client.
	Transport policy.Transporter
	// InsecureAllowCredentialWithHTTP lets the bearer token go over plain
	// http (a local test endpoint only).
	InsecureAllowCredentialWithHTTP bool
	// MaxRetries is the SDK's retries per call (default 0: the reconciler
	// retries, honouring Retry-After).
	MaxRetries int32
	// PollInterval is the RetryAfter hint for running operations when ARM
	// sends none (default 30s).
	PollInterval time.Duration
	// Factory replaces the SDK clients altogether.
	Factory func(subscriptionID string) (*Clients, error)
}

// Provider is the AKS cloud.Provider.
type Provider struct {
	factory      func(subscriptionID string) (*Clients, error)
	pollInterval time.Duration

	mu      sync.Mutex
	clients map[string]*Clients
	// issued remembers the id each idempotency token got, so a repeat in
	// the same process answers the same id (bounded, oldest dropped).
	issued      map[string]string
	issuedOrder []string
}

var _ cloud.Provider = (*Provider)(nil)

const maxIssued = 4096

// New builds the provider. SDK clients are built per subscription on
// first use.
func New(o Options) (*Provider, error) {
	p := &Provider{factory: o.Factory, pollInterval: o.PollInterval, clients: map[string]*Clients{}, issued: map[string]string{}}
	if p.pollInterval <= 0 {
		p.pollInterval = 30 * time.Second
	}
	if p.factory != nil {
		return p, nil
	}
	cred := o.Credential
	if cred == nil {
		var err error
		if cred, err = azidentity.NewDefaultAzureCredential(nil); err != nil {
			return nil, fmt.Errorf("building the default Azure credential: %s", cloud.Sanitize(err.Error()))
		}
	}
	opts := &arm.ClientOptions{DisableRPRegistration: true}
	opts.InsecureAllowCredentialWithHTTP = o.InsecureAllowCredentialWithHTTP
	opts.Transport = o.Transport
	opts.Retry.MaxRetries = o.MaxRetries
	if opts.Retry.MaxRetries == 0 {
		opts.Retry.MaxRetries = -1 // one try, no retries
	}
	if o.Endpoint != "" {
		audience := o.Audience
		if audience == "" {
			audience = azcloud.AzurePublic.Services[azcloud.ResourceManager].Audience
		}
		opts.Cloud = azcloud.Configuration{
			ActiveDirectoryAuthorityHost: azcloud.AzurePublic.ActiveDirectoryAuthorityHost,
			Services:                     map[azcloud.ServiceName]azcloud.ServiceConfiguration{azcloud.ResourceManager: {Endpoint: o.Endpoint, Audience: audience}},
		}
	}
	p.factory = func(sub string) (*Clients, error) {
		mc, err := armcontainerservice.NewManagedClustersClient(sub, cred, opts)
		if err != nil {
			return nil, err
		}
		ap, err := armcontainerservice.NewAgentPoolsClient(sub, cred, opts)
		if err != nil {
			return nil, err
		}
		return &Clients{ManagedClusters: mc, AgentPools: ap}, nil
	}
	return p, nil
}

func (p *Provider) Name() string           { return cloud.AKS }
func (p *Provider) NodeGroupLabel() string { return NodeGroupLabel }
func (p *Provider) SupportsAddons() bool   { return false }

// NodeSelector is the label selector of an agent pool's Nodes.
func (p *Provider) NodeSelector(_ context.Context, _ cloud.ClusterRef, group string) (map[string]string, error) {
	return map[string]string{NodeGroupLabel: group}, nil
}

func (p *Provider) clientsFor(op string, c cloud.ClusterRef) (*Clients, error) {
	if c.SubscriptionID == "" || c.ResourceGroup == "" || c.Name == "" {
		return nil, cloud.Errorf(cloud.Permanent, cloud.AKS, op, "an AKS cluster needs a subscription, a resource group and a name; got subscription %q resource group %q name %q", c.SubscriptionID, c.ResourceGroup, c.Name)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if cl := p.clients[c.SubscriptionID]; cl != nil {
		return cl, nil
	}
	cl, err := p.factory(c.SubscriptionID)
	if err != nil {
		return nil, cloud.Errorf(cloud.Permanent, cloud.AKS, op, "building AKS clients: %s", cloud.Sanitize(err.Error()))
	}
	p.clients[c.SubscriptionID] = cl
	return cl, nil
}

// Operation kinds.
const (
	kindCluster = "cluster"
	kindUpgrade = "upgrade"
	kindCreate  = "create"
	kindDelete  = "delete"
)

// opID is the operation id: what PollOperation needs to resume the SDK
// poller (ResumeToken) or, without one, which target to watch.
type opID struct {
	Kind        string `json:"kind"`
	Target      string `json:"target"`
	Version     string `json:"version,omitempty"`
	ResumeToken string `json:"resumeToken,omitempty"`
}

func (o opID) String() string {
	raw, _ := json.Marshal(o)
	return string(raw)
}

func parseOpID(s string) (opID, error) {
	var o opID
	if err := json.Unmarshal([]byte(s), &o); err != nil || o.Target == "" {
		return o, cloud.Errorf(cloud.Permanent, cloud.AKS, "PollOperation", "malformed operation id")
	}
	switch o.Kind {
	case kindCluster, kindUpgrade, kindCreate, kindDelete:
		return o, nil
	}
	return o, cloud.Errorf(cloud.Permanent, cloud.AKS, "PollOperation", "unknown operation kind %q", o.Kind)
}

// resumeToken is the poller's resume token, or "" when the poller already
// finished (a synchronous answer): the id then watches the target.
func resumeToken[T any](poller *runtime.Poller[T]) (string, error) {
	if poller.Done() {
		return "", nil
	}
	tok, err := poller.ResumeToken()
	if err != nil {
		return "", cloud.Errorf(cloud.Permanent, cloud.AKS, "", "reading the resume token: %v", err)
	}
	return tok, nil
}

func (p *Provider) remembered(key string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	id, ok := p.issued[key]
	return id, ok
}

func (p *Provider) remember(key, id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.issued[key]; !ok {
		p.issuedOrder = append(p.issuedOrder, key)
		if len(p.issuedOrder) > maxIssued {
			delete(p.issued, p.issuedOrder[0])
			p.issuedOrder = p.issuedOrder[1:]
		}
	}
	p.issued[key] = id
}

func tokenKey(c cloud.ClusterRef, kind, target, token string) string {
	if token == "" {
		return ""
	}
	return strings.Join([]string{c.SubscriptionID, c.ResourceGroup, c.Name, kind, target, token}, "/")
}

// start runs fn unless the token already got an id in this process.
func (p *Provider) start(c cloud.ClusterRef, kind, target, token string, fn func() (string, error)) (string, error) {
	key := tokenKey(c, kind, target, token)
	if key != "" {
		if id, ok := p.remembered(key); ok {
			return id, nil
		}
	}
	id, err := fn()
	if err == nil && key != "" {
		p.remember(key, id)
	}
	return id, err
}

func (p *Provider) DescribeCluster(ctx context.Context, c cloud.ClusterRef) (*cloud.Cluster, error) {
	cl, err := p.clientsFor("ManagedClusters.Get", c)
	if err != nil {
		return nil, err
	}
	resp, err := cl.ManagedClusters.Get(ctx, c.ResourceGroup, c.Name, nil)
	if err != nil {
		return nil, classify("ManagedClusters.Get", err)
	}
	out := &cloud.Cluster{Name: deref(resp.Name)}
	if pr := resp.Properties; pr != nil {
		out.Version = deref(pr.CurrentKubernetesVersion)
		if out.Version == "" {
			out.Version = deref(pr.KubernetesVersion)
		}
		out.Status = deref(pr.ProvisioningState)
	}
	return out, nil
}

func (p *Provider) StartControlPlaneUpgrade(ctx context.Context, c cloud.ClusterRef, version, token string) (string, error) {
	return p.start(c, kindCluster, c.Name, token, func() (string, error) {
		const op = "ManagedClusters.CreateOrUpdate"
		cl, err := p.clientsFor(op, c)
		if err != nil {
			return "", err
		}
		resp, err := cl.ManagedClusters.Get(ctx, c.ResourceGroup, c.Name, nil)
		if err != nil {
			return "", classify("ManagedClusters.Get", err)
		}
		mc := resp.ManagedCluster
		if mc.Properties == nil {
			return "", cloud.Errorf(cloud.Retryable, cloud.AKS, op, "managed cluster %q has no properties", c.Name)
		}
		state := deref(mc.Properties.ProvisioningState)
		if busy(state) {
			if state == "Upgrading" && versionMatches(deref(mc.Properties.KubernetesVersion), version) {
				return opID{Kind: kindCluster, Target: c.Name, Version: version}.String(), nil
			}
			return "", cloud.Errorf(cloud.Retryable, cloud.AKS, op, "managed cluster %q is %s", c.Name, state)
		}
		mc.Properties.KubernetesVersion = to(version)
		mc.Properties.ProvisioningState, mc.Properties.CurrentKubernetesVersion, mc.Properties.PowerState = nil, nil, nil
		poller, err := cl.ManagedClusters.BeginCreateOrUpdate(ctx, c.ResourceGroup, c.Name, mc,
			&armcontainerservice.ManagedClustersClientBeginCreateOrUpdateOptions{IfMatch: mc.ETag})
		if err != nil {
			return "", classify(op, err)
		}
		tok, err := resumeToken(poller)
		if err != nil {
			return "", err
		}
		return opID{Kind: kindCluster, Target: c.Name, Version: version, ResumeToken: tok}.String(), nil
	})
}

func (p *Provider) ListNodeGroups(ctx context.Context, c cloud.ClusterRef) ([]cloud.NodeGroup, error) {
	cl, err := p.clientsFor("AgentPools.List", c)
	if err != nil {
		return nil, err
	}
	var groups []cloud.NodeGroup
	pager := cl.AgentPools.NewListPager(c.ResourceGroup, c.Name, nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, classify("AgentPools.List", err)
		}
		for _, ap := range page.Value {
			if ap != nil {
				groups = append(groups, fromPool(ap))
			}
		}
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].Name < groups[j].Name })
	return groups, nil
}

func (p *Provider) getPool(ctx context.Context, cl *Clients, c cloud.ClusterRef, name string) (*armcontainerservice.AgentPool, error) {
	resp, err := cl.AgentPools.Get(ctx, c.ResourceGroup, c.Name, name, nil)
	if err != nil {
		return nil, classify("AgentPools.Get", err)
	}
	ap := resp.AgentPool
	if ap.Properties == nil {
		ap.Properties = &armcontainerservice.ManagedClusterAgentPoolProfileProperties{}
	}
	return &ap, nil
}

func (p *Provider) StartNodeGroupUpgrade(ctx context.Context, c cloud.ClusterRef, group, version, token string) (string, error) {
	return p.start(c, kindUpgrade, group, token, func() (string, error) {
		const op = "AgentPools.CreateOrUpdate"
		cl, err := p.clientsFor(op, c)
		if err != nil {
			return "", err
		}
		ap, err := p.getPool(ctx, cl, c, group)
		if err != nil {
			return "", err
		}
		state := deref(ap.Properties.ProvisioningState)
		if busy(state) {
			if state == "Upgrading" && versionMatches(deref(ap.Properties.OrchestratorVersion), version) {
				return opID{Kind: kindUpgrade, Target: group, Version: version}.String(), nil
			}
			return "", cloud.Errorf(cloud.Retryable, cloud.AKS, op, "agent pool %q is %s", group, state)
		}
		ap.Properties.OrchestratorVersion = to(version)
		clearReadOnly(ap.Properties)
		poller, err := cl.AgentPools.BeginCreateOrUpdate(ctx, c.ResourceGroup, c.Name, group, *ap,
			&armcontainerservice.AgentPoolsClientBeginCreateOrUpdateOptions{IfMatch: etagOf(ap)})
		if err != nil {
			return "", classify(op, err)
		}
		tok, err := resumeToken(poller)
		if err != nil {
			return "", err
		}
		return opID{Kind: kindUpgrade, Target: group, Version: version, ResumeToken: tok}.String(), nil
	})
}

// validPoolName is AKS's rule for (Linux) agent pool names.
var validPoolName = regexp.MustCompile(`^[a-z][a-z0-9]{0,11}$`)

func (p *Provider) StartCreateNodeGroup(ctx context.Context, c cloud.ClusterRef, g cloud.NodeGroup, token string) (string, error) {
	return p.start(c, kindCreate, g.Name, token, func() (string, error) {
		const op = "AgentPools.CreateOrUpdate"
		if !validPoolName.MatchString(g.Name) {
			return "", cloud.Errorf(cloud.Permanent, cloud.AKS, op, "AKS agent pool names are 1-12 lowercase letters and digits, starting with a letter: %q", g.Name)
		}
		cl, err := p.clientsFor(op, c)
		if err != nil {
			return "", err
		}
		existing, err := p.getPool(ctx, cl, c, g.Name)
		switch {
		case err == nil:
			if token != "" && deref(existing.Properties.Tags[TokenTag]) == token {
				return opID{Kind: kindCreate, Target: g.Name, Version: g.Version}.String(), nil
			}
			return "", cloud.Errorf(cloud.Permanent, cloud.AKS, op, "agent pool %q already exists", g.Name)
		case !cloud.IsNotFound(err):
			return "", err
		}
		props := &armcontainerservice.ManagedClusterAgentPoolProfileProperties{}
		if src := g.Extra[ExtraSource]; src != "" && src != g.Name {
			old, err := p.getPool(ctx, cl, c, src)
			switch {
			case err == nil:
				if props, err = cloneProperties(old.Properties); err != nil {
					return "", err
				}
			case !cloud.IsNotFound(err):
				return "", err
			}
		}
		if err := applyGroup(props, g, token); err != nil {
			return "", err
		}
		poller, err := cl.AgentPools.BeginCreateOrUpdate(ctx, c.ResourceGroup, c.Name, g.Name, armcontainerservice.AgentPool{Properties: props},
			&armcontainerservice.AgentPoolsClientBeginCreateOrUpdateOptions{IfNoneMatch: to("*")})
		if err != nil {
			return "", classify(op, err)
		}
		tok, err := resumeToken(poller)
		if err != nil {
			return "", err
		}
		return opID{Kind: kindCreate, Target: g.Name, Version: g.Version, ResumeToken: tok}.String(), nil
	})
}

func (p *Provider) StartDeleteNodeGroup(ctx context.Context, c cloud.ClusterRef, name, token string) (string, error) {
	return p.start(c, kindDelete, name, token, func() (string, error) {
		const op = "AgentPools.Delete"
		cl, err := p.clientsFor(op, c)
		if err != nil {
			return "", err
		}
		ap, err := p.getPool(ctx, cl, c, name)
		if err != nil {
			return "", err
		}
		if deref(ap.Properties.ProvisioningState) == "Deleting" {
			return opID{Kind: kindDelete, Target: name}.String(), nil
		}
		poller, err := cl.AgentPools.BeginDelete(ctx, c.ResourceGroup, c.Name, name, nil)
		if err != nil {
			return "", classify(op, err)
		}
		tok, err := resumeToken(poller)
		if err != nil {
			return "", err
		}
		return opID{Kind: kindDelete, Target: name, ResumeToken: tok}.String(), nil
	})
}

func (p *Provider) ListAddons(context.Context, cloud.ClusterRef) ([]cloud.Addon, error) {
	return nil, cloud.Errorf(cloud.Unsupported, cloud.AKS, "ListAddons", "AKS add-ons are cluster features upgraded with the cluster, not versioned components")
}

func (p *Provider) StartAddonUpdate(context.Context, cloud.ClusterRef, cloud.AddonUpdate, string) (string, error) {
	return "", cloud.Errorf(cloud.Unsupported, cloud.AKS, "StartAddonUpdate", "AKS add-ons are cluster features upgraded with the cluster, not versioned components")
}

func (p *Provider) PollOperation(ctx context.Context, c cloud.ClusterRef, id string) (*cloud.OperationStatus, error) {
	o, err := parseOpID(id)
	if err != nil {
		return nil, err
	}
	cl, err := p.clientsFor("PollOperation", c)
	if err != nil {
		return nil, err
	}
	if o.ResumeToken == "" {
		return p.pollState(ctx, cl, c, o)
	}
	switch o.Kind {
	case kindCluster:
		poller, err := cl.ManagedClusters.BeginCreateOrUpdate(ctx, c.ResourceGroup, c.Name, armcontainerservice.ManagedCluster{},
			&armcontainerservice.ManagedClustersClientBeginCreateOrUpdateOptions{ResumeToken: o.ResumeToken})
		if err != nil {
			return nil, cloud.Errorf(cloud.Permanent, cloud.AKS, "PollOperation", "resuming the operation: %s", cloud.Sanitize(err.Error()))
		}
		return pollOnce(ctx, poller, p.pollInterval)
	case kindUpgrade, kindCreate:
		poller, err := cl.AgentPools.BeginCreateOrUpdate(ctx, c.ResourceGroup, c.Name, o.Target, armcontainerservice.AgentPool{},
			&armcontainerservice.AgentPoolsClientBeginCreateOrUpdateOptions{ResumeToken: o.ResumeToken})
		if err != nil {
			return nil, cloud.Errorf(cloud.Permanent, cloud.AKS, "PollOperation", "resuming the operation: %s", cloud.Sanitize(err.Error()))
		}
		return pollOnce(ctx, poller, p.pollInterval)
	default:
		poller, err := cl.AgentPools.BeginDelete(ctx, c.ResourceGroup, c.Name, o.Target,
			&armcontainerservice.AgentPoolsClientBeginDeleteOptions{ResumeToken: o.ResumeToken})
		if err != nil {
			return nil, cloud.Errorf(cloud.Permanent, cloud.AKS, "PollOperation", "resuming the operation: %s", cloud.Sanitize(err.Error()))
		}
		return pollOnce(ctx, poller, p.pollInterval)
	}
}

// pollOnce makes one poll of a resumed poller: never PollUntilDone, so a
// worker is never blocked.
func pollOnce[T any](ctx context.Context, poller *runtime.Poller[T], interval time.Duration) (*cloud.OperationStatus, error) {
	if !poller.Done() {
		resp, err := poller.Poll(ctx)
		if err != nil {
			return nil, classify("PollOperation", err)
		}
		if !poller.Done() {
			st := &cloud.OperationStatus{State: cloud.OperationRunning, RetryAfter: interval}
			if resp != nil {
				if d := cloud.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); d > 0 {
					st.RetryAfter = d
				}
			}
			return st, nil
		}
	}
	if _, err := poller.Result(ctx); err != nil {
		var re *azcore.ResponseError
		if errors.As(err, &re) && re.StatusCode < 400 {
			// The operation itself failed: ARM answered the status
			// request with {"status": "Failed", "error": {...}}.
			code, msg := armError(re)
			return &cloud.OperationStatus{State: cloud.OperationFailed, Message: cloud.Sanitize(strings.TrimPrefix(code+": "+msg, ": "))}, nil
		}
		cerr := classify("PollOperation", err)
		if cloud.IsRetryable(cerr) {
			return nil, cerr
		}
		var ce *cloud.Error
		errors.As(cerr, &ce)
		return &cloud.OperationStatus{State: cloud.OperationFailed, Message: ce.Message}, nil
	}
	return &cloud.OperationStatus{State: cloud.OperationSucceeded}, nil
}

// pollState reports an operation whose id names its target: from the
// target's provisioningState.
func (p *Provider) pollState(ctx context.Context, cl *Clients, c cloud.ClusterRef, o opID) (*cloud.OperationStatus, error) {
	running := &cloud.OperationStatus{State: cloud.OperationRunning, RetryAfter: p.pollInterval}
	if o.Kind == kindCluster {
		resp, err := cl.ManagedClusters.Get(ctx, c.ResourceGroup, c.Name, nil)
		if err != nil {
			return nil, classify("ManagedClusters.Get", err)
		}
		if resp.Properties == nil {
			return running, nil
		}
		return stateStatus("managed cluster "+c.Name, deref(resp.Properties.ProvisioningState),
			deref(resp.Properties.CurrentKubernetesVersion), o.Version, running), nil
	}
	resp, err := cl.AgentPools.Get(ctx, c.ResourceGroup, c.Name, o.Target, nil)
	if err != nil {
		cerr := classify("AgentPools.Get", err)
		if cloud.IsNotFound(cerr) {
			if o.Kind == kindDelete {
				return &cloud.OperationStatus{State: cloud.OperationSucceeded}, nil
			}
			return &cloud.OperationStatus{State: cloud.OperationFailed, Message: fmt.Sprintf("agent pool %q does not exist", o.Target)}, nil
		}
		return nil, cerr
	}
	if resp.Properties == nil {
		return running, nil
	}
	state := deref(resp.Properties.ProvisioningState)
	if o.Kind == kindDelete {
		if state == "Deleting" {
			return running, nil
		}
		return &cloud.OperationStatus{State: cloud.OperationFailed, Message: fmt.Sprintf("agent pool %q is %s, not being deleted", o.Target, state)}, nil
	}
	return stateStatus("agent pool "+o.Target, state, currentVersion(resp.Properties), o.Version, running), nil
}

func stateStatus(what, state, current, want string, running *cloud.OperationStatus) *cloud.OperationStatus {
	switch state {
	case "Succeeded":
		if want != "" && !versionMatches(current, want) {
			return &cloud.OperationStatus{State: cloud.OperationFailed, Message: fmt.Sprintf("%s is at %s, not %s", what, current, want)}
		}
		return &cloud.OperationStatus{State: cloud.OperationSucceeded}
	case "Failed", "Canceled":
		return &cloud.OperationStatus{State: cloud.OperationFailed, Message: fmt.Sprintf("%s is %s", what, state)}
	}
	return running
}

// busy reports a provisioning state of an operation in flight.
func busy(state string) bool {
	switch state {
	case "", "Succeeded", "Failed", "Canceled":
		return false
	}
	return true
}

// versionMatches reports whether a version ("1.30.6") satisfies a
// requested one ("1.30", "1.30.6").
func versionMatches(actual, requested string) bool {
	a, r := strings.TrimPrefix(actual, "v"), strings.TrimPrefix(requested, "v")
	return a != "" && r != "" && (a == r || strings.HasPrefix(a, r+".") || strings.HasPrefix(a, r+"-"))
}

func currentVersion(pr *armcontainerservice.ManagedClusterAgentPoolProfileProperties) string {
	if v := deref(pr.CurrentOrchestratorVersion); v != "" {
		return v
	}
	return deref(pr.OrchestratorVersion)
}

func etagOf(ap *armcontainerservice.AgentPool) *string {
	if ap.Properties != nil && ap.Properties.ETag != nil {
		return ap.Properties.ETag
	}
	return nil
}

// clearReadOnly drops the read-only properties of an agent pool read
// back for a PUT.
func clearReadOnly(pr *armcontainerservice.ManagedClusterAgentPoolProfileProperties) {
	pr.ProvisioningState, pr.CurrentOrchestratorVersion, pr.NodeImageVersion, pr.ETag = nil, nil, nil, nil
	pr.Status, pr.VirtualMachineNodesStatus = nil, nil
}

func cloneProperties(in *armcontainerservice.ManagedClusterAgentPoolProfileProperties) (*armcontainerservice.ManagedClusterAgentPoolProfileProperties, error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, cloud.Errorf(cloud.Permanent, cloud.AKS, "AgentPools.CreateOrUpdate", "copying the source pool: %v", err)
	}
	out := &armcontainerservice.ManagedClusterAgentPoolProfileProperties{}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, cloud.Errorf(cloud.Permanent, cloud.AKS, "AgentPools.CreateOrUpdate", "copying the source pool: %v", err)
	}
	clearReadOnly(out)
	out.CreationData = nil
	return out, nil
}

func fromPool(ap *armcontainerservice.AgentPool) cloud.NodeGroup {
	g := cloud.NodeGroup{Name: deref(ap.Name), Extra: map[string]string{ExtraSource: deref(ap.Name)}}
	pr := ap.Properties
	if pr == nil {
		return g
	}
	g.Version, g.Status = currentVersion(pr), deref(pr.ProvisioningState)
	g.DesiredSize = deref(pr.Count)
	g.MinSize, g.MaxSize = g.DesiredSize, g.DesiredSize
	if deref(pr.EnableAutoScaling) {
		g.MinSize, g.MaxSize = deref(pr.MinCount), deref(pr.MaxCount)
		g.Extra[ExtraAutoScaling] = "true"
	}
	if v := deref(pr.VMSize); v != "" {
		g.InstanceTypes = []string{v}
	}
	if len(pr.NodeLabels) > 0 {
		g.Labels = map[string]string{}
		for k, v := range pr.NodeLabels {
			g.Labels[k] = deref(v)
		}
	}
	for _, t := range pr.NodeTaints {
		if tt, ok := parseTaint(deref(t)); ok {
			g.Taints = append(g.Taints, tt)
		}
	}
	set := func(k, v string) {
		if v != "" {
			g.Extra[k] = v
		}
	}
	if pr.Mode != nil {
		set(ExtraMode, string(*pr.Mode))
	}
	if pr.OSType != nil {
		set(ExtraOSType, string(*pr.OSType))
	}
	if pr.OSSKU != nil {
		set(ExtraOSSKU, string(*pr.OSSKU))
	}
	if pr.OSDiskSizeGB != nil {
		set(ExtraOSDiskSizeGB, strconv.Itoa(int(*pr.OSDiskSizeGB)))
	}
	set(ExtraVnetSubnetID, deref(pr.VnetSubnetID))
	var zones []string
	for _, z := range pr.AvailabilityZones {
		zones = append(zones, deref(z))
	}
	set(ExtraAvailabilityZones, strings.Join(zones, ","))
	if pr.MaxPods != nil {
		set(ExtraMaxPods, strconv.Itoa(int(*pr.MaxPods)))
	}
	return g
}

// applyGroup applies the NodeGroup's fields and explicit Extra keys.
func applyGroup(pr *armcontainerservice.ManagedClusterAgentPoolProfileProperties, g cloud.NodeGroup, token string) error {
	const op = "AgentPools.CreateOrUpdate"
	x := g.Extra
	if v := x[ExtraMode]; v != "" {
		pr.Mode = to(armcontainerservice.AgentPoolMode(v))
	}
	if pr.Mode == nil {
		pr.Mode = to(armcontainerservice.AgentPoolModeUser)
	}
	if pr.Type == nil {
		pr.Type = to(armcontainerservice.AgentPoolTypeVirtualMachineScaleSets)
	}
	if v := x[ExtraOSType]; v != "" {
		pr.OSType = to(armcontainerservice.OSType(v))
	}
	if v := x[ExtraOSSKU]; v != "" {
		pr.OSSKU = to(armcontainerservice.OSSKU(v))
	}
	for key, dst := range map[string]**int32{ExtraOSDiskSizeGB: &pr.OSDiskSizeGB, ExtraMaxPods: &pr.MaxPods} {
		if v := x[key]; v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return cloud.Errorf(cloud.Permanent, cloud.AKS, op, "invalid %s %q", key, v)
			}
			*dst = to(int32(n))
		}
	}
	if v := x[ExtraVnetSubnetID]; v != "" {
		pr.VnetSubnetID = to(v)
	}
	if v := x[ExtraAvailabilityZones]; v != "" {
		pr.AvailabilityZones = nil
		for _, z := range strings.Split(v, ",") {
			if z = strings.TrimSpace(z); z != "" {
				pr.AvailabilityZones = append(pr.AvailabilityZones, to(z))
			}
		}
	}
	if x[ExtraAutoScaling] == "true" {
		pr.EnableAutoScaling = to(true)
	}
	switch len(g.InstanceTypes) {
	case 0:
	case 1:
		pr.VMSize = to(g.InstanceTypes[0])
	default:
		return cloud.Errorf(cloud.Permanent, cloud.AKS, op, "an AKS agent pool has one VM size, got %v", g.InstanceTypes)
	}
	pr.Count = to(g.DesiredSize)
	if deref(pr.EnableAutoScaling) {
		pr.MinCount, pr.MaxCount = to(g.MinSize), to(g.MaxSize)
	} else {
		pr.MinCount, pr.MaxCount = nil, nil
	}
	pr.NodeLabels = nil
	if len(g.Labels) > 0 {
		pr.NodeLabels = map[string]*string{}
		for k, v := range g.Labels {
			pr.NodeLabels[k] = to(v)
		}
	}
	pr.NodeTaints = nil
	for _, t := range g.Taints {
		s, err := formatTaint(t)
		if err != nil {
			return err
		}
		pr.NodeTaints = append(pr.NodeTaints, to(s))
	}
	if g.Version != "" {
		pr.OrchestratorVersion = to(g.Version)
	}
	if token != "" {
		if pr.Tags == nil {
			pr.Tags = map[string]*string{}
		}
		pr.Tags[TokenTag] = to(token)
	}
	return nil
}

// parseTaint reads AKS's "key=value:Effect".
func parseTaint(s string) (cloud.Taint, bool) {
	kv, eff, ok := strings.Cut(s, ":")
	if !ok {
		return cloud.Taint{}, false
	}
	k, v, _ := strings.Cut(kv, "=")
	return cloud.Taint{Key: k, Value: v, Effect: eff}, k != ""
}

func formatTaint(t cloud.Taint) (string, error) {
	switch t.Effect {
	case "NoSchedule", "NoExecute", "PreferNoSchedule":
	default:
		return "", cloud.Errorf(cloud.Permanent, cloud.AKS, "AgentPools.CreateOrUpdate", "unknown taint effect %q", t.Effect)
	}
	if t.Value == "" {
		return t.Key + ":" + t.Effect, nil
	}
	return t.Key + "=" + t.Value + ":" + t.Effect, nil
}

func to[T any](v T) *T { return &v }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
