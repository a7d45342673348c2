// Package gke implements cloud.Provider for Google Kubernetes Engine on
// google.golang.org/api/container/v1.
//
// A cluster is "projects/<ClusterRef.Project>/locations/<ClusterRef.Region>/clusters/<Name>"
// (Region may be a region or a zone). Long-running calls return a GKE
// Operation; the operation id is Operation.Name, polled with
// projects.locations.operations.get.
//
// GKE has no request tokens. A Start call first lists the location's
// operations: an operation of the same type on the same target that is
// still running is the one a previous (crashed) call started, and its
// name is returned instead of starting a second one. When the target
// already is where the call wants it (version reached, pool created) the
// last successful operation of that type on the target is returned.
// Addons are not supported: GKE's add-ons are cluster features, not
// versioned components.
package gke

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	container "google.golang.org/api/container/v1"
	"google.golang.org/api/option"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// NodeGroupLabel is the label GKE puts on the Nodes of a node pool.
const NodeGroupLabel = "cloud.google.com/gke-nodepool"

// Keys of cloud.NodeGroup.Extra that StartCreateNodeGroup reads when it
// clones a node pool; ListNodeGroups fills them.
const (
	// ExtraSource names the pool the settings were read from; when it
	// still exists, its whole node config, autoscaling, management,
	// upgrade settings, placement and locations are copied, then the
	// explicit keys below and the NodeGroup's own fields are applied.
	ExtraSource         = "source"
	ExtraImageType      = "imageType"
	ExtraDiskSizeGB     = "diskSizeGb"
	ExtraDiskType       = "diskType"
	ExtraServiceAccount = "serviceAccount"
	ExtraLocations      = "locations" // comma-separated zones
	ExtraSpot           = "spot"      // "true"
)

// GKE operation types the provider starts.
const (
	opUpgradeMaster  = "UPGRADE_MASTER"
	opUpgradeNodes   = "UPGRADE_NODES"
	opCreateNodePool = "CREATE_NODE_POOL"
	opDeleteNodePool = "DELETE_NODE_POOL"
)

// API is the part of the GKE API the provider uses. NewAPI adapts the
// generated client; tests use it against gketest.Server.
type API interface {
	GetCluster(ctx context.Context, name string) (*container.Cluster, error)
	UpdateMaster(ctx context.Context, name string, req *container.UpdateMasterRequest) (*container.Operation, error)
	ListNodePools(ctx context.Context, parent string) ([]*container.NodePool, error)
	GetNodePool(ctx context.Context, name string) (*container.NodePool, error)
	UpdateNodePool(ctx context.Context, name string, req *container.UpdateNodePoolRequest) (*container.Operation, error)
	CreateNodePool(ctx context.Context, parent string, req *container.CreateNodePoolRequest) (*container.Operation, error)
	DeleteNodePool(ctx context.Context, name string) (*container.Operation, error)
	GetOperation(ctx context.Context, name string) (*container.Operation, error)
	ListOperations(ctx context.Context, parent string) ([]*container.Operation, error)
}

// NewAPI adapts the generated client to API.
func NewAPI(s *container.Service) API { return &sdkAPI{s: s} }

type sdkAPI struct{ s *container.Service }

func (a *sdkAPI) GetCluster(ctx context.Context, name string) (*container.Cluster, error) {
	return a.s.Projects.Locations.Clusters.Get(name).Context(ctx).Do()
}

func (a *sdkAPI) UpdateMaster(ctx context.Context, name string, req *container.UpdateMasterRequest) (*container.Operation, error) {
	return a.s.Projects.Locations.Clusters.UpdateMaster(name, req).Context(ctx).Do()
}

func (a *sdkAPI) ListNodePools(ctx context.Context, parent string) ([]*container.NodePool, error) {
	out, err := a.s.Projects.Locations.Clusters.NodePools.List(parent).Context(ctx).Do()
	if err != nil {
		return nil, err
	}
	return out.NodePools, nil
}

func (a *sdkAPI) GetNodePool(ctx context.Context, name string) (*container.NodePool, error) {
	return a.s.Projects.Locations.Clusters.NodePools.Get(name).Context(ctx).Do()
}

func (a *sdkAPI) UpdateNodePool(ctx context.Context, name string, req *container.UpdateNodePoolRequest) (*container.Operation, error) {
	return a.s.Projects.Locations.Clusters.NodePools.Update(name, req).Context(ctx).Do()
}

func (a *sdkAPI) CreateNodePool(ctx context.Context, parent string, req *container.CreateNodePoolRequest) (*container.Operation, error) {
	return a.s.Projects.Locations.Clusters.NodePools.Create(parent, req).Context(ctx).Do()
}

func (a *sdkAPI) DeleteNodePool(ctx context.Context, name string) (*container.Operation, error) {
	return a.s.Projects.Locations.Clusters.NodePools.Delete(name).Context(ctx).Do()
}

func (a *sdkAPI) GetOperation(ctx context.Context, name string) (*container.Operation, error) {
	return a.s.Projects.Locations.Operations.Get(name).Context(ctx).Do()
}

func (a *sdkAPI) ListOperations(ctx context.Context, parent string) ([]*container.Operation, error) {
	out, err := a.s.Projects.Locations.Operations.List(parent).Context(ctx).Do()
	if err != nil {
		return nil, err
	}
	return out.Operations, nil
}

// Options configure the provider.
type Options struct {
	// Endpoint overrides the API endpoint (tests, private endpoints).
	Endpoint string
	// CredentialsFile is a credentials JSON file (a service-account key
	// or an external-account / workload identity federation config, e.g.
	// from a mounted Secret). Empty: Application Default Credentials (GKE
	// Workload Identity, GOOGLE_APPLICATION_CREDENTIALS, ...).
	CredentialsFile string
	// HTTPClient, if set, is used as is: it must add credentials itself.
	HTTPClient *http.Client
	// ClientOptions are passed to the generated client last (tests:
	// option.WithoutAuthentication, option.WithTokenSource).
	ClientOptions []option.ClientOption
	// PollInterval is the RetryAfter hint for running operations
	// (default 30s).
	PollInterval time.Duration
	// API replaces the generated client altogether.
	API API
}

// Provider is the GKE cloud.Provider.
type Provider struct {
	api          API
	pollInterval time.Duration
}

var _ cloud.Provider = (*Provider)(nil)

// New builds the provider and its API client.
func New(ctx context.Context, o Options) (*Provider, error) {
	p := &Provider{api: o.API, pollInterval: o.PollInterval}
	if p.pollInterval <= 0 {
		p.pollInterval = 30 * time.Second
	}
	if p.api != nil {
		return p, nil
	}
	var opts []option.ClientOption
	if o.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(o.Endpoint))
	}
	if o.CredentialsFile != "" {
		typ, err := credentialsType(o.CredentialsFile)
		if err != nil {
			return nil, err
		}
		opts = append(opts, option.WithAuthCredentialsFile(typ, o.CredentialsFile))
	}
	if o.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(o.HTTPClient))
	}
	opts = append(opts, o.ClientOptions...)
	svc, err := container.NewService(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("building the GKE client: %s", cloud.Sanitize(err.Error()))
	}
	p.api = NewAPI(svc)
	return p, nil
}

// credentialsType reads the "type" of a credentials file.
func credentialsType(path string) (option.CredentialsType, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading GCP credentials file: %w", err)
	}
	var f struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return "", fmt.Errorf("GCP credentials file %s is not JSON", path)
	}
	switch option.CredentialsType(f.Type) {
	case option.ServiceAccount, option.AuthorizedUser, option.ExternalAccount, option.ImpersonatedServiceAccount:
		return option.CredentialsType(f.Type), nil
	}
	return "", fmt.Errorf("GCP credentials file %s has unsupported type %q", path, f.Type)
}

func (p *Provider) Name() string           { return cloud.GKE }
func (p *Provider) NodeGroupLabel() string { return NodeGroupLabel }
func (p *Provider) SupportsAddons() bool   { return false }

// NodeSelector is the label selector of a node pool's Nodes.
func (p *Provider) NodeSelector(_ context.Context, _ cloud.ClusterRef, group string) (map[string]string, error) {
	return map[string]string{NodeGroupLabel: group}, nil
}

func locationName(c cloud.ClusterRef) string {
	return "projects/" + c.Project + "/locations/" + c.Region
}
func clusterName(c cloud.ClusterRef) string { return locationName(c) + "/clusters/" + c.Name }
func poolName(c cloud.ClusterRef, pool string) string {
	return clusterName(c) + "/nodePools/" + pool
}

func checkRef(op string, c cloud.ClusterRef) error {
	if c.Project == "" || c.Region == "" || c.Name == "" {
		return cloud.Errorf(cloud.Permanent, cloud.GKE, op, "a GKE cluster needs a project, a location (region or zone) and a name; got project %q location %q name %q", c.Project, c.Region, c.Name)
	}
	return nil
}

func (p *Provider) DescribeCluster(ctx context.Context, c cloud.ClusterRef) (*cloud.Cluster, error) {
	if err := checkRef("GetCluster", c); err != nil {
		return nil, err
	}
	cl, err := p.api.GetCluster(ctx, clusterName(c))
	if err != nil {
		return nil, classify("GetCluster", err)
	}
	return &cloud.Cluster{Name: cl.Name, Version: cl.CurrentMasterVersion, Status: cl.Status}, nil
}

func (p *Provider) StartControlPlaneUpgrade(ctx context.Context, c cloud.ClusterRef, version, _ string) (string, error) {
	if err := checkRef("UpdateMaster", c); err != nil {
		return "", err
	}
	running, done, err := p.findOperation(ctx, c, opUpgradeMaster, "clusters/"+c.Name)
	if err != nil || running != nil {
		return opName(running), err
	}
	if done != nil {
		cl, err := p.api.GetCluster(ctx, clusterName(c))
		if err != nil {
			return "", classify("GetCluster", err)
		}
		if versionMatches(cl.CurrentMasterVersion, version) {
			return done.Name, nil
		}
	}
	op, err := p.api.UpdateMaster(ctx, clusterName(c), &container.UpdateMasterRequest{MasterVersion: version})
	if err != nil {
		return "", classify("UpdateMaster", err)
	}
	return operationID(op)
}

func (p *Provider) ListNodeGroups(ctx context.Context, c cloud.ClusterRef) ([]cloud.NodeGroup, error) {
	if err := checkRef("ListNodePools", c); err != nil {
		return nil, err
	}
	pools, err := p.api.ListNodePools(ctx, clusterName(c))
	if err != nil {
		return nil, classify("ListNodePools", err)
	}
	groups := make([]cloud.NodeGroup, 0, len(pools))
	for _, np := range pools {
		groups = append(groups, fromPool(np))
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].Name < groups[j].Name })
	return groups, nil
}

func (p *Provider) StartNodeGroupUpgrade(ctx context.Context, c cloud.ClusterRef, group, version, _ string) (string, error) {
	if err := checkRef("UpdateNodePool", c); err != nil {
		return "", err
	}
	running, done, err := p.findOperation(ctx, c, opUpgradeNodes, "clusters/"+c.Name+"/nodePools/"+group)
	if err != nil || running != nil {
		return opName(running), err
	}
	np, err := p.api.GetNodePool(ctx, poolName(c, group))
	if err != nil {
		return "", classify("GetNodePool", err)
	}
	if done != nil && versionMatches(np.Version, version) {
		return done.Name, nil
	}
	req := &container.UpdateNodePoolRequest{NodeVersion: version}
	if np.Config != nil {
		// The API wants the image type with every update; keep the pool's.
		req.ImageType = np.Config.ImageType
	}
	op, err := p.api.UpdateNodePool(ctx, poolName(c, group), req)
	if err != nil {
		return "", classify("UpdateNodePool", err)
	}
	return operationID(op)
}

func (p *Provider) StartCreateNodeGroup(ctx context.Context, c cloud.ClusterRef, g cloud.NodeGroup, _ string) (string, error) {
	if err := checkRef("CreateNodePool", c); err != nil {
		return "", err
	}
	running, done, err := p.findOperation(ctx, c, opCreateNodePool, "clusters/"+c.Name+"/nodePools/"+g.Name)
	if err != nil || running != nil {
		return opName(running), err
	}
	if _, err := p.api.GetNodePool(ctx, poolName(c, g.Name)); err == nil {
		if done != nil {
			return done.Name, nil
		}
		return "", cloud.Errorf(cloud.Permanent, cloud.GKE, "CreateNodePool", "node pool %q already exists", g.Name)
	} else if cerr := classify("GetNodePool", err); !cloud.IsNotFound(cerr) {
		return "", cerr
	}
	pool := &container.NodePool{Name: g.Name}
	if src := g.Extra[ExtraSource]; src != "" && src != g.Name {
		old, err := p.api.GetNodePool(ctx, poolName(c, src))
		switch cerr := classify("GetNodePool", err); {
		case err == nil:
			if err := copyPool(pool, old); err != nil {
				return "", err
			}
		case !cloud.IsNotFound(cerr):
			return "", cerr
		}
	}
	if err := applyGroup(pool, g); err != nil {
		return "", err
	}
	op, err := p.api.CreateNodePool(ctx, clusterName(c), &container.CreateNodePoolRequest{NodePool: pool})
	if err != nil {
		return "", classify("CreateNodePool", err)
	}
	return operationID(op)
}

func (p *Provider) StartDeleteNodeGroup(ctx context.Context, c cloud.ClusterRef, name, _ string) (string, error) {
	if err := checkRef("DeleteNodePool", c); err != nil {
		return "", err
	}
	running, _, err := p.findOperation(ctx, c, opDeleteNodePool, "clusters/"+c.Name+"/nodePools/"+name)
	if err != nil || running != nil {
		return opName(running), err
	}
	op, err := p.api.DeleteNodePool(ctx, poolName(c, name))
	if err != nil {
		return "", classify("DeleteNodePool", err)
	}
	return operationID(op)
}

func (p *Provider) ListAddons(context.Context, cloud.ClusterRef) ([]cloud.Addon, error) {
	return nil, cloud.Errorf(cloud.Unsupported, cloud.GKE, "ListAddons", "GKE has no versioned cluster addons: its add-ons are cluster features managed with the cluster version")
}

func (p *Provider) StartAddonUpdate(context.Context, cloud.ClusterRef, cloud.AddonUpdate, string) (string, error) {
	return "", cloud.Errorf(cloud.Unsupported, cloud.GKE, "StartAddonUpdate", "GKE has no versioned cluster addons: its add-ons are cluster features managed with the cluster version")
}

func (p *Provider) PollOperation(ctx context.Context, c cloud.ClusterRef, opID string) (*cloud.OperationStatus, error) {
	if err := checkRef("GetOperation", c); err != nil {
		return nil, err
	}
	if opID == "" || strings.ContainsAny(opID, " ?#") {
		return nil, cloud.Errorf(cloud.Permanent, cloud.GKE, "GetOperation", "malformed operation id %q", opID)
	}
	name := opID
	if !strings.HasPrefix(name, "projects/") {
		if strings.Contains(name, "/") {
			return nil, cloud.Errorf(cloud.Permanent, cloud.GKE, "GetOperation", "malformed operation id %q", opID)
		}
		name = locationName(c) + "/operations/" + opID
	}
	op, err := p.api.GetOperation(ctx, name)
	if err != nil {
		return nil, classify("GetOperation", err)
	}
	return p.status(op), nil
}

func (p *Provider) status(op *container.Operation) *cloud.OperationStatus {
	if op.Status != "DONE" {
		return &cloud.OperationStatus{State: cloud.OperationRunning, RetryAfter: p.pollInterval}
	}
	if op.Error != nil && (op.Error.Code != 0 || op.Error.Message != "") {
		return &cloud.OperationStatus{State: cloud.OperationFailed, Message: cloud.Sanitize(fmt.Sprintf("%s %s failed: %s", op.OperationType, op.Name, op.Error.Message))}
	}
	return &cloud.OperationStatus{State: cloud.OperationSucceeded}
}

// findOperation returns the running operation of a type on a target (the
// target link ends with target), and the last successful one.
func (p *Provider) findOperation(ctx context.Context, c cloud.ClusterRef, opType, target string) (running, done *container.Operation, err error) {
	ops, err := p.api.ListOperations(ctx, locationName(c))
	if err != nil {
		return nil, nil, classify("ListOperations", err)
	}
	for _, op := range ops {
		if op.OperationType != opType || !targets(op.TargetLink, target) {
			continue
		}
		if op.Status != "DONE" {
			if running == nil || op.StartTime > running.StartTime {
				running = op
			}
			continue
		}
		if op.Error != nil && (op.Error.Code != 0 || op.Error.Message != "") {
			continue
		}
		if done == nil || op.EndTime > done.EndTime {
			done = op
		}
	}
	return running, done, nil
}

// targets reports whether a target link (a full URL, with the project id
// or number, and "locations" or "zones") names target ("clusters/c" or
// "clusters/c/nodePools/p").
func targets(link, target string) bool {
	return link == target || strings.HasSuffix(link, "/"+target)
}

func opName(op *container.Operation) string {
	if op == nil {
		return ""
	}
	return op.Name
}

func operationID(op *container.Operation) (string, error) {
	if op == nil || op.Name == "" {
		return "", cloud.Errorf(cloud.Retryable, cloud.GKE, "", "GKE returned no operation")
	}
	return op.Name, nil
}

// versionMatches reports whether a GKE version ("1.30.5-gke.1014001")
// satisfies a requested one ("1.30", "1.30.5", or exact).
func versionMatches(actual, requested string) bool {
	a, r := strings.TrimPrefix(actual, "v"), strings.TrimPrefix(requested, "v")
	return a != "" && r != "" && (a == r || strings.HasPrefix(a, r+".") || strings.HasPrefix(a, r+"-"))
}

func zones(np *container.NodePool) int64 {
	if n := int64(len(np.Locations)); n > 0 {
		return n
	}
	return 1
}

func fromPool(np *container.NodePool) cloud.NodeGroup {
	z := zones(np)
	g := cloud.NodeGroup{
		Name: np.Name, Version: np.Version, Status: np.Status,
		DesiredSize: int32(np.InitialNodeCount * z),
		Extra:       map[string]string{ExtraSource: np.Name},
	}
	g.MinSize, g.MaxSize = g.DesiredSize, g.DesiredSize
	if a := np.Autoscaling; a != nil && a.Enabled {
		if a.TotalMaxNodeCount > 0 {
			g.MinSize, g.MaxSize = int32(a.TotalMinNodeCount), int32(a.TotalMaxNodeCount)
		} else {
			g.MinSize, g.MaxSize = int32(a.MinNodeCount*z), int32(a.MaxNodeCount*z)
		}
	}
	set := func(k, v string) {
		if v != "" {
			g.Extra[k] = v
		}
	}
	if cfg := np.Config; cfg != nil {
		if cfg.MachineType != "" {
			g.InstanceTypes = []string{cfg.MachineType}
		}
		g.Labels = maps.Clone(cfg.Labels)
		for _, t := range cfg.Taints {
			g.Taints = append(g.Taints, cloud.Taint{Key: t.Key, Value: t.Value, Effect: effectToK8s(t.Effect)})
		}
		set(ExtraImageType, cfg.ImageType)
		if cfg.DiskSizeGb > 0 {
			set(ExtraDiskSizeGB, strconv.FormatInt(cfg.DiskSizeGb, 10))
		}
		set(ExtraDiskType, cfg.DiskType)
		set(ExtraServiceAccount, cfg.ServiceAccount)
		if cfg.Spot {
			set(ExtraSpot, "true")
		}
	}
	set(ExtraLocations, strings.Join(np.Locations, ","))
	return g
}

// copyPool copies the settings of an existing pool that a clone keeps.
func copyPool(pool, old *container.NodePool) error {
	clone := func(in, out any) error {
		raw, err := json.Marshal(in)
		if err != nil {
			return err
		}
		return json.Unmarshal(raw, out)
	}
	if old.Config != nil {
		pool.Config = &container.NodeConfig{}
		if err := clone(old.Config, pool.Config); err != nil {
			return cloud.Errorf(cloud.Permanent, cloud.GKE, "CreateNodePool", "copying the node config of %q: %v", old.Name, err)
		}
	}
	pool.Locations = append([]string(nil), old.Locations...)
	pool.Autoscaling = old.Autoscaling
	pool.Management = old.Management
	pool.UpgradeSettings = old.UpgradeSettings
	pool.MaxPodsConstraint = old.MaxPodsConstraint
	pool.PlacementPolicy = old.PlacementPolicy
	if nc := old.NetworkConfig; nc != nil {
		// Reuse the pod range; never ask GKE to create the same range again.
		pool.NetworkConfig = &container.NodeNetworkConfig{PodRange: nc.PodRange, EnablePrivateNodes: nc.EnablePrivateNodes}
	}
	return nil
}

// applyGroup applies the NodeGroup's fields and explicit Extra keys.
func applyGroup(pool *container.NodePool, g cloud.NodeGroup) error {
	if pool.Config == nil {
		pool.Config = &container.NodeConfig{}
	}
	cfg := pool.Config
	x := g.Extra
	if v := x[ExtraImageType]; v != "" {
		cfg.ImageType = v
	}
	if v := x[ExtraDiskSizeGB]; v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return cloud.Errorf(cloud.Permanent, cloud.GKE, "CreateNodePool", "invalid %s %q", ExtraDiskSizeGB, v)
		}
		cfg.DiskSizeGb = n
	}
	if v := x[ExtraDiskType]; v != "" {
		cfg.DiskType = v
	}
	if v := x[ExtraServiceAccount]; v != "" {
		cfg.ServiceAccount = v
	}
	if x[ExtraSpot] == "true" {
		cfg.Spot = true
	}
	if v := x[ExtraLocations]; v != "" {
		pool.Locations = splitList(v)
	}
	switch len(g.InstanceTypes) {
	case 0:
	case 1:
		cfg.MachineType = g.InstanceTypes[0]
	default:
		return cloud.Errorf(cloud.Permanent, cloud.GKE, "CreateNodePool", "a GKE node pool has one machine type, got %v", g.InstanceTypes)
	}
	cfg.Labels = maps.Clone(g.Labels)
	cfg.Taints = nil
	for _, t := range g.Taints {
		eff, err := effectFromK8s(t.Effect)
		if err != nil {
			return err
		}
		cfg.Taints = append(cfg.Taints, &container.NodeTaint{Key: t.Key, Value: t.Value, Effect: eff})
	}
	pool.Version = g.Version
	z := zones(pool)
	pool.InitialNodeCount = ceilDiv(int64(g.DesiredSize), z)
	if a := pool.Autoscaling; a != nil && a.Enabled {
		if a.TotalMaxNodeCount > 0 {
			a.TotalMinNodeCount, a.TotalMaxNodeCount = int64(g.MinSize), int64(g.MaxSize)
		} else {
			a.MinNodeCount, a.MaxNodeCount = int64(g.MinSize)/z, ceilDiv(int64(g.MaxSize), z)
		}
	}
	return nil
}

func ceilDiv(a, b int64) int64 {
	if b <= 0 {
		return a
	}
	return (a + b - 1) / b
}

func effectToK8s(e string) string {
	switch e {
	case "NO_SCHEDULE":
		return "NoSchedule"
	case "NO_EXECUTE":
		return "NoExecute"
	case "PREFER_NO_SCHEDULE":
		return "PreferNoSchedule"
	}
	return e
}

func effectFromK8s(e string) (string, error) {
	switch e {
	case "NoSchedule", "NO_SCHEDULE":
		return "NO_SCHEDULE", nil
	case "NoExecute", "NO_EXECUTE":
		return "NO_EXECUTE", nil
	case "PreferNoSchedule", "PREFER_NO_SCHEDULE":
		return "PREFER_NO_SCHEDULE", nil
	}
	return "", cloud.Errorf(cloud.Permanent, cloud.GKE, "CreateNodePool", "unknown taint effect %q", e)
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}
