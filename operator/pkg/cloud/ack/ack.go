// Package ack implements cloud.Provider for Alibaba Cloud Container
// Service for Kubernetes (ACK) on github.com/alibabacloud-go/cs-20151215/v7.
//
// ACK addresses a cluster by its id (ClusterRef.ClusterID, "c..."), and
// node pools by id ("np..."); the provider speaks node-pool names, and
// NodeGroup.Extra[ExtraNodePoolID] carries the id. Every mutating call
// returns an ACK task; the operation id is its task_id, polled with
// DescribeTaskInfo. Versions are ACK's full versions ("1.31.1-aliyun.1").
// The control plane is upgraded with MasterOnly set (UpgradeCluster would
// otherwise upgrade the workers too).
//
// ACK has no request tokens. A Start call first looks at the cluster's
// recent tasks (DescribeClusterTasks, then DescribeTaskInfo for the
// candidates): a running task of the same kind on the same target is the
// one an earlier (crashed) call started, and its id is returned instead of
// starting another. When the target already is where the call wants it,
// the last successful such task is returned.
package ack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	cs "github.com/alibabacloud-go/cs-20151215/v7/client"
	openapiutil "github.com/alibabacloud-go/darabonba-openapi/v2/utils"
	"github.com/alibabacloud-go/tea/dara"
	"github.com/aliyun/credentials-go/credentials"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// NodeGroupLabel is the label ACK puts on every Node of a node pool. Its
// value is the node pool's id, not its name: use NodeSelector.
const NodeGroupLabel = "alibabacloud.com/nodepool-id"

// NodePoolNameLabel is a node label the provider puts on the pools it
// creates (ACK syncs node-pool labels to the pool's Nodes), whose value is
// the pool's name: unlike NodeGroupLabel's id, it is known before the pool
// exists, so a VMCluster nodeSelector can name the new pool of a
// blue-green upgrade.
const NodePoolNameLabel = "ops.observability.tidbcloud.com/nodepool"

// Keys of cloud.NodeGroup.Extra. ListNodeGroups fills them;
// StartCreateNodeGroup reads them when it clones a node pool.
const (
	// ExtraNodePoolID is the node pool's id.
	ExtraNodePoolID = "nodepoolID"
	// ExtraSource is the id of the pool the settings were read from; when
	// it still exists, its whole configuration (scaling group, kubernetes
	// config, management, node config) is copied, then the explicit keys
	// below and the NodeGroup's own fields are applied.
	ExtraSource             = "source"
	ExtraVSwitchIDs         = "vswitchIDs" // comma-separated
	ExtraSystemDiskCategory = "systemDiskCategory"
	ExtraSystemDiskSize     = "systemDiskSize"
	ExtraImageType          = "imageType"
	ExtraRuntime            = "runtime"
	ExtraRuntimeVersion     = "runtimeVersion"
)

// API is the part of the cs-20151215 client the provider uses.
// *cs.Client implements it; tests use the real client against
// acktest.Server.
type API interface {
	DescribeClusterDetailWithContext(ctx context.Context, clusterID *string, headers map[string]*string, rt *dara.RuntimeOptions) (*cs.DescribeClusterDetailResponse, error)
	UpgradeClusterWithContext(ctx context.Context, clusterID *string, req *cs.UpgradeClusterRequest, headers map[string]*string, rt *dara.RuntimeOptions) (*cs.UpgradeClusterResponse, error)
	DescribeClusterNodePoolsWithContext(ctx context.Context, clusterID *string, req *cs.DescribeClusterNodePoolsRequest, headers map[string]*string, rt *dara.RuntimeOptions) (*cs.DescribeClusterNodePoolsResponse, error)
	UpgradeClusterNodepoolWithContext(ctx context.Context, clusterID, nodepoolID *string, req *cs.UpgradeClusterNodepoolRequest, headers map[string]*string, rt *dara.RuntimeOptions) (*cs.UpgradeClusterNodepoolResponse, error)
	CreateClusterNodePoolWithContext(ctx context.Context, clusterID *string, req *cs.CreateClusterNodePoolRequest, headers map[string]*string, rt *dara.RuntimeOptions) (*cs.CreateClusterNodePoolResponse, error)
	DeleteClusterNodepoolWithContext(ctx context.Context, clusterID, nodepoolID *string, req *cs.DeleteClusterNodepoolRequest, headers map[string]*string, rt *dara.RuntimeOptions) (*cs.DeleteClusterNodepoolResponse, error)
	ListClusterAddonInstancesWithContext(ctx context.Context, clusterID *string, headers map[string]*string, rt *dara.RuntimeOptions) (*cs.ListClusterAddonInstancesResponse, error)
	ListAddonsWithContext(ctx context.Context, req *cs.ListAddonsRequest, headers map[string]*string, rt *dara.RuntimeOptions) (*cs.ListAddonsResponse, error)
	UpgradeClusterAddonsWithContext(ctx context.Context, clusterID *string, req *cs.UpgradeClusterAddonsRequest, headers map[string]*string, rt *dara.RuntimeOptions) (*cs.UpgradeClusterAddonsResponse, error)
	DescribeTaskInfoWithContext(ctx context.Context, taskID *string, headers map[string]*string, rt *dara.RuntimeOptions) (*cs.DescribeTaskInfoResponse, error)
	DescribeClusterTasksWithContext(ctx context.Context, clusterID *string, req *cs.DescribeClusterTasksRequest, headers map[string]*string, rt *dara.RuntimeOptions) (*cs.DescribeClusterTasksResponse, error)
	DescribeKubernetesVersionMetadataWithContext(ctx context.Context, req *cs.DescribeKubernetesVersionMetadataRequest, headers map[string]*string, rt *dara.RuntimeOptions) (*cs.DescribeKubernetesVersionMetadataResponse, error)
}

var _ API = (*cs.Client)(nil)

// Options configure the provider.
type Options struct {
	// Region is the default region (the endpoint is regional); a
	// ClusterRef's Region overrides it.
	Region string
	// Endpoint overrides the endpoint: "host[:port]" or a URL whose scheme
	// picks the protocol (tests: http://127.0.0.1:port).
	Endpoint string
	// Credential overrides the default chain of credentials-go
	// (environment, RRSA OIDC token, config file, ECS RAM role).
	Credential credentials.Credential
	// HTTPClient overrides the SDK's HTTP client.
	HTTPClient *http.Client
	// PollInterval is the RetryAfter hint for running tasks (default 30s).
	PollInterval time.Duration
	// TaskLookback is how many recent cluster tasks a Start call checks
	// for one it already started (default 50).
	TaskLookback int
	// NewAPI replaces the SDK client altogether (per region).
	NewAPI func(region string) (API, error)
}

// Provider is the ACK cloud.Provider.
type Provider struct {
	newAPI       func(region string) (API, error)
	region       string
	pollInterval time.Duration
	lookback     int

	mu   sync.Mutex
	apis map[string]API
}

var (
	_ cloud.Provider          = (*Provider)(nil)
	_ cloud.NodeGroupSelector = (*Provider)(nil)
	_ cloud.VersionLister     = (*Provider)(nil)
)

// New builds the provider; SDK clients are built per region on first use.
func New(o Options) (*Provider, error) {
	p := &Provider{newAPI: o.NewAPI, region: o.Region, pollInterval: o.PollInterval, lookback: o.TaskLookback, apis: map[string]API{}}
	if p.pollInterval <= 0 {
		p.pollInterval = 30 * time.Second
	}
	if p.lookback <= 0 {
		p.lookback = 50
	}
	if p.newAPI != nil {
		return p, nil
	}
	cred := o.Credential
	if cred == nil {
		var err error
		// The SDK fails every call without a credential: use the default
		// chain explicitly (RRSA included).
		if cred, err = credentials.NewCredential(nil); err != nil {
			return nil, fmt.Errorf("building the default Alibaba Cloud credential: %s", cloud.Sanitize(err.Error()))
		}
	}
	endpoint, protocol := o.Endpoint, "HTTPS"
	if u, err := url.Parse(o.Endpoint); err == nil && u.Scheme != "" && u.Host != "" {
		endpoint, protocol = u.Host, strings.ToUpper(u.Scheme)
	}
	p.newAPI = func(region string) (API, error) {
		cfg := &openapiutil.Config{Credential: cred, Protocol: dara.String(protocol)}
		if region != "" {
			cfg.RegionId = dara.String(region)
		}
		if endpoint != "" {
			cfg.Endpoint = dara.String(endpoint)
		}
		if o.HTTPClient != nil {
			cfg.HttpClient = httpClient{o.HTTPClient}
		}
		c, err := cs.NewClient(cfg)
		if err != nil {
			return nil, err
		}
		// Keep the SDK's typed errors (status, code, Retry-After).
		c.DisableSDKError = dara.Bool(true)
		c.Client.DisableSDKError = dara.Bool(true)
		return c, nil
	}
	return p, nil
}

// httpClient adapts *http.Client to the SDK's HttpClient.
type httpClient struct{ c *http.Client }

func (h httpClient) Call(req *http.Request, _ *http.Transport) (*http.Response, error) {
	return h.c.Do(req)
}

func (p *Provider) Name() string           { return cloud.ACK }
func (p *Provider) NodeGroupLabel() string { return NodeGroupLabel }
func (p *Provider) SupportsAddons() bool   { return true }

func (p *Provider) api(op string, c cloud.ClusterRef) (API, error) {
	if c.ClusterID == "" {
		return nil, cloud.Errorf(cloud.Permanent, cloud.ACK, op, "an ACK cluster needs its cluster id (c...), none is configured for %q", c.Name)
	}
	region := c.Region
	if region == "" {
		region = p.region
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if a := p.apis[region]; a != nil {
		return a, nil
	}
	a, err := p.newAPI(region)
	if err != nil {
		return nil, cloud.Errorf(cloud.Permanent, cloud.ACK, op, "building the ACK client for region %q: %s", region, cloud.Sanitize(err.Error()))
	}
	p.apis[region] = a
	return a, nil
}

func rt() *dara.RuntimeOptions { return &dara.RuntimeOptions{Autoretry: dara.Bool(false)} }

// NodeSelector is the label selector of a node pool's Nodes: ACK labels
// them with the pool's id.
func (p *Provider) NodeSelector(ctx context.Context, c cloud.ClusterRef, group string) (map[string]string, error) {
	np, err := p.pool(ctx, c, group)
	if err != nil {
		return nil, err
	}
	return map[string]string{NodeGroupLabel: poolID(np)}, nil
}

func (p *Provider) DescribeCluster(ctx context.Context, c cloud.ClusterRef) (*cloud.Cluster, error) {
	d, err := p.detail(ctx, c)
	if err != nil {
		return nil, err
	}
	return &cloud.Cluster{Name: dara.StringValue(d.Name), Version: dara.StringValue(d.CurrentVersion), Status: dara.StringValue(d.State)}, nil
}

func (p *Provider) detail(ctx context.Context, c cloud.ClusterRef) (*cs.DescribeClusterDetailResponseBody, error) {
	a, err := p.api("DescribeClusterDetail", c)
	if err != nil {
		return nil, err
	}
	out, err := a.DescribeClusterDetailWithContext(ctx, dara.String(c.ClusterID), nil, rt())
	if err != nil {
		return nil, classify("DescribeClusterDetail", err)
	}
	if out == nil || out.Body == nil {
		return nil, cloud.Errorf(cloud.Retryable, cloud.ACK, "DescribeClusterDetail", "empty response for cluster %q", c.ClusterID)
	}
	return out.Body, nil
}

// AvailableVersions lists the versions the cluster can be at after an
// upgrade: its current version (DescribeClusterDetail), then the versions
// ACK offers to upgrade it to (DescribeKubernetesVersionMetadata for the
// cluster's type, profile, region and current version, with
// QueryUpgradableVersion), in ACK's order. All are full versions
// (1.31.1-aliyun.1).
func (p *Provider) AvailableVersions(ctx context.Context, c cloud.ClusterRef) ([]string, error) {
	const op = "DescribeKubernetesVersionMetadata"
	d, err := p.detail(ctx, c)
	if err != nil {
		return nil, err
	}
	current := dara.StringValue(d.CurrentVersion)
	if current == "" {
		return nil, cloud.Errorf(cloud.Retryable, cloud.ACK, "DescribeClusterDetail", "ACK reported no current version for cluster %s", c.ClusterID)
	}
	a, err := p.api(op, c)
	if err != nil {
		return nil, err
	}
	req := &cs.DescribeKubernetesVersionMetadataRequest{
		ClusterType:            d.ClusterType,
		KubernetesVersion:      d.CurrentVersion,
		QueryUpgradableVersion: dara.Bool(true),
	}
	if dara.StringValue(d.Profile) != "" {
		req.Profile = d.Profile
	}
	for _, r := range []string{dara.StringValue(d.RegionId), c.Region, p.region} {
		if r != "" {
			req.Region = dara.String(r)
			break
		}
	}
	out, err := a.DescribeKubernetesVersionMetadataWithContext(ctx, req, nil, rt())
	if err != nil {
		return nil, classify(op, err)
	}
	versions := []string{current}
	seen := map[string]bool{current: true}
	if out != nil {
		for _, m := range out.Body {
			if m == nil || dara.StringValue(m.Version) != current {
				continue
			}
			for _, v := range m.UpgradableVersions {
				if s := dara.StringValue(v); s != "" && !seen[s] {
					seen[s] = true
					versions = append(versions, s)
				}
			}
		}
	}
	return versions, nil
}

func (p *Provider) StartControlPlaneUpgrade(ctx context.Context, c cloud.ClusterRef, version, _ string) (string, error) {
	const op = "UpgradeCluster"
	if err := fullVersion(op, version); err != nil {
		return "", err
	}
	d, err := p.detail(ctx, c)
	if err != nil {
		return "", err
	}
	id, err := p.findTask(ctx, c, isClusterUpgrade, c.ClusterID, "", versionMatches(dara.StringValue(d.CurrentVersion), version))
	if err != nil || id != "" {
		return id, err
	}
	a, err := p.api(op, c)
	if err != nil {
		return "", err
	}
	out, err := a.UpgradeClusterWithContext(ctx, dara.String(c.ClusterID), &cs.UpgradeClusterRequest{
		Version: d.CurrentVersion, NextVersion: dara.String(version), MasterOnly: dara.Bool(true),
	}, nil, rt())
	if err != nil {
		return "", classify(op, err)
	}
	if out == nil || out.Body == nil {
		return taskID(op, nil)
	}
	return taskID(op, out.Body.TaskId)
}

func (p *Provider) pools(ctx context.Context, c cloud.ClusterRef, name string) ([]*cs.DescribeClusterNodePoolsResponseBodyNodepools, error) {
	a, err := p.api("DescribeClusterNodePools", c)
	if err != nil {
		return nil, err
	}
	req := &cs.DescribeClusterNodePoolsRequest{}
	if name != "" {
		req.NodepoolName = dara.String(name)
	}
	out, err := a.DescribeClusterNodePoolsWithContext(ctx, dara.String(c.ClusterID), req, nil, rt())
	if err != nil {
		return nil, classify("DescribeClusterNodePools", err)
	}
	if out == nil || out.Body == nil {
		return nil, nil
	}
	return out.Body.Nodepools, nil
}

// pool finds a node pool by name (or id).
func (p *Provider) pool(ctx context.Context, c cloud.ClusterRef, group string) (*cs.DescribeClusterNodePoolsResponseBodyNodepools, error) {
	all, err := p.pools(ctx, c, "")
	if err != nil {
		return nil, err
	}
	var byID *cs.DescribeClusterNodePoolsResponseBodyNodepools
	for _, np := range all {
		if poolName(np) == group {
			return np, nil
		}
		if poolID(np) == group {
			byID = np
		}
	}
	if byID != nil {
		return byID, nil
	}
	return nil, cloud.Errorf(cloud.NotFound, cloud.ACK, "DescribeClusterNodePools", "node pool %q not found in cluster %s", group, c.ClusterID)
}

func (p *Provider) ListNodeGroups(ctx context.Context, c cloud.ClusterRef) ([]cloud.NodeGroup, error) {
	all, err := p.pools(ctx, c, "")
	if err != nil {
		return nil, err
	}
	groups := make([]cloud.NodeGroup, 0, len(all))
	for _, np := range all {
		if np != nil {
			groups = append(groups, fromPool(np))
		}
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].Name < groups[j].Name })
	return groups, nil
}

func (p *Provider) StartNodeGroupUpgrade(ctx context.Context, c cloud.ClusterRef, group, version, _ string) (string, error) {
	const op = "UpgradeClusterNodepool"
	if err := fullVersion(op, version); err != nil {
		return "", err
	}
	np, err := p.pool(ctx, c, group)
	if err != nil {
		return "", err
	}
	id, err := p.findTask(ctx, c, isPoolUpgrade, poolID(np), "", versionMatches(kubeletVersion(np), version))
	if err != nil || id != "" {
		return id, err
	}
	a, err := p.api(op, c)
	if err != nil {
		return "", err
	}
	out, err := a.UpgradeClusterNodepoolWithContext(ctx, dara.String(c.ClusterID), dara.String(poolID(np)),
		&cs.UpgradeClusterNodepoolRequest{KubernetesVersion: dara.String(version)}, nil, rt())
	if err != nil {
		return "", classify(op, err)
	}
	if out == nil || out.Body == nil {
		return taskID(op, nil)
	}
	return taskID(op, out.Body.TaskId)
}

func (p *Provider) StartCreateNodeGroup(ctx context.Context, c cloud.ClusterRef, g cloud.NodeGroup, _ string) (string, error) {
	const op = "CreateClusterNodePool"
	if g.Version != "" {
		if err := fullVersion(op, g.Version); err != nil {
			return "", err
		}
	}
	existing, err := p.pools(ctx, c, g.Name)
	if err != nil {
		return "", err
	}
	for _, np := range existing {
		if poolName(np) != g.Name {
			continue
		}
		id, err := p.findTask(ctx, c, isPoolCreate, poolID(np), "", true)
		if err != nil || id != "" {
			return id, err
		}
		return "", cloud.Errorf(cloud.Permanent, cloud.ACK, op, "node pool %q already exists (%s)", g.Name, poolID(np))
	}
	req := &cs.CreateClusterNodePoolRequest{}
	if src := g.Extra[ExtraSource]; src != "" {
		old, err := p.pool(ctx, c, src)
		switch {
		case err == nil:
			if req, err = clonePool(old); err != nil {
				return "", err
			}
		case !cloud.IsNotFound(err):
			return "", err
		}
	}
	if err := applyGroup(req, g); err != nil {
		return "", err
	}
	a, err := p.api(op, c)
	if err != nil {
		return "", err
	}
	out, err := a.CreateClusterNodePoolWithContext(ctx, dara.String(c.ClusterID), req, nil, rt())
	if err != nil {
		return "", classify(op, err)
	}
	if out == nil || out.Body == nil {
		return taskID(op, nil)
	}
	return taskID(op, out.Body.TaskId)
}

func (p *Provider) StartDeleteNodeGroup(ctx context.Context, c cloud.ClusterRef, name, _ string) (string, error) {
	const op = "DeleteClusterNodepool"
	np, err := p.pool(ctx, c, name)
	if err != nil {
		return "", err
	}
	id, err := p.findTask(ctx, c, isPoolDelete, poolID(np), "", false)
	if err != nil || id != "" {
		return id, err
	}
	a, err := p.api(op, c)
	if err != nil {
		return "", err
	}
	out, err := a.DeleteClusterNodepoolWithContext(ctx, dara.String(c.ClusterID), dara.String(poolID(np)), &cs.DeleteClusterNodepoolRequest{}, nil, rt())
	if err != nil {
		return "", classify(op, err)
	}
	if out == nil || out.Body == nil {
		return taskID(op, nil)
	}
	return taskID(op, out.Body.TaskId)
}

func (p *Provider) installedAddons(ctx context.Context, c cloud.ClusterRef) ([]*cs.ListClusterAddonInstancesResponseBodyAddons, error) {
	a, err := p.api("ListClusterAddonInstances", c)
	if err != nil {
		return nil, err
	}
	out, err := a.ListClusterAddonInstancesWithContext(ctx, dara.String(c.ClusterID), nil, rt())
	if err != nil {
		return nil, classify("ListClusterAddonInstances", err)
	}
	if out == nil || out.Body == nil {
		return nil, nil
	}
	return out.Body.Addons, nil
}

func (p *Provider) ListAddons(ctx context.Context, c cloud.ClusterRef) ([]cloud.Addon, error) {
	installed, err := p.installedAddons(ctx, c)
	if err != nil {
		return nil, err
	}
	a, err := p.api("ListAddons", c)
	if err != nil {
		return nil, err
	}
	catalog, err := a.ListAddonsWithContext(ctx, &cs.ListAddonsRequest{ClusterId: dara.String(c.ClusterID)}, nil, rt())
	if err != nil {
		return nil, classify("ListAddons", err)
	}
	offered := map[string]string{}
	if catalog != nil && catalog.Body != nil {
		for _, x := range catalog.Body.Addons {
			if x != nil {
				offered[dara.StringValue(x.Name)] = dara.StringValue(x.Version)
			}
		}
	}
	addons := make([]cloud.Addon, 0, len(installed))
	for _, x := range installed {
		if x == nil {
			continue
		}
		ad := cloud.Addon{Name: dara.StringValue(x.Name), Version: dara.StringValue(x.Version), Status: dara.StringValue(x.State)}
		ad.AvailableVersions = []string{ad.Version}
		if v := offered[ad.Name]; v != "" && v != ad.Version {
			ad.AvailableVersions = append(ad.AvailableVersions, v)
		}
		addons = append(addons, ad)
	}
	sort.Slice(addons, func(i, j int) bool { return addons[i].Name < addons[j].Name })
	return addons, nil
}

func (p *Provider) StartAddonUpdate(ctx context.Context, c cloud.ClusterRef, u cloud.AddonUpdate, _ string) (string, error) {
	const op = "UpgradeClusterAddons"
	installed, err := p.installedAddons(ctx, c)
	if err != nil {
		return "", err
	}
	var current *cs.ListClusterAddonInstancesResponseBodyAddons
	for _, x := range installed {
		if x != nil && dara.StringValue(x.Name) == u.Name {
			current = x
		}
	}
	if current == nil {
		return "", cloud.Errorf(cloud.NotFound, cloud.ACK, op, "addon %q is not installed in cluster %s", u.Name, c.ClusterID)
	}
	id, err := p.findTask(ctx, c, isAddonUpgrade, c.ClusterID, u.Name, dara.StringValue(current.Version) == u.Version)
	if err != nil || id != "" {
		return id, err
	}
	a, err := p.api(op, c)
	if err != nil {
		return "", err
	}
	out, err := a.UpgradeClusterAddonsWithContext(ctx, dara.String(c.ClusterID), &cs.UpgradeClusterAddonsRequest{Body: []*cs.UpgradeClusterAddonsRequestBody{{
		ComponentName: dara.String(u.Name), Version: current.Version, NextVersion: dara.String(u.Version),
	}}}, nil, rt())
	if err != nil {
		return "", classify(op, err)
	}
	if out == nil || out.Body == nil {
		return taskID(op, nil)
	}
	return taskID(op, out.Body.TaskId)
}

func (p *Provider) PollOperation(ctx context.Context, c cloud.ClusterRef, opID string) (*cloud.OperationStatus, error) {
	if opID == "" || strings.ContainsAny(opID, "/?# ") {
		return nil, cloud.Errorf(cloud.Permanent, cloud.ACK, "DescribeTaskInfo", "malformed task id %q", opID)
	}
	info, err := p.task(ctx, c, opID)
	if err != nil {
		return nil, err
	}
	switch state := strings.ToLower(dara.StringValue(info.State)); state {
	case "success", "succeeded", "successful":
		return &cloud.OperationStatus{State: cloud.OperationSucceeded}, nil
	case "failed", "fail", "canceled", "cancelled":
		msg := fmt.Sprintf("task %s (%s) is %s", opID, dara.StringValue(info.TaskType), state)
		if e := info.Error; e != nil && (dara.StringValue(e.Code) != "" || dara.StringValue(e.Message) != "") {
			msg += ": " + strings.TrimPrefix(dara.StringValue(e.Code)+": "+dara.StringValue(e.Message), ": ")
		}
		return &cloud.OperationStatus{State: cloud.OperationFailed, Message: cloud.Sanitize(msg)}, nil
	default:
		// running, pending, paused (a task paused with PauseTask waits
		// for ResumeTask).
		st := &cloud.OperationStatus{State: cloud.OperationRunning, RetryAfter: p.pollInterval}
		if state == "paused" {
			st.Message = "task " + opID + " is paused"
		}
		return st, nil
	}
}

func (p *Provider) task(ctx context.Context, c cloud.ClusterRef, id string) (*cs.DescribeTaskInfoResponseBody, error) {
	a, err := p.api("DescribeTaskInfo", c)
	if err != nil {
		return nil, err
	}
	out, err := a.DescribeTaskInfoWithContext(ctx, dara.String(id), nil, rt())
	if err != nil {
		return nil, classify("DescribeTaskInfo", err)
	}
	if out == nil || out.Body == nil {
		return nil, cloud.Errorf(cloud.Retryable, cloud.ACK, "DescribeTaskInfo", "empty response for task %q", id)
	}
	return out.Body, nil
}

// A taskMatcher recognises a task (by its type and target) as one of the
// provider's kinds of operation.
type taskMatcher func(taskType, targetType string) bool

func isClusterUpgrade(tt, target string) bool {
	return strings.Contains(tt, "upgrade") && !strings.Contains(tt, "nodepool") && !strings.Contains(tt, "addon") && target != "nodepool"
}
func isPoolUpgrade(tt, _ string) bool { return strings.Contains(tt, "upgrade") }
func isPoolCreate(tt, _ string) bool  { return strings.Contains(tt, "create") }
func isPoolDelete(tt, _ string) bool {
	return strings.Contains(tt, "delete") || strings.Contains(tt, "remove")
}
func isAddonUpgrade(tt, _ string) bool {
	return strings.Contains(tt, "addon") || strings.Contains(tt, "component")
}

// findTask returns the id of a running task of a kind on a target (and,
// when done is true, of the last successful one): the operation an
// earlier call started. detail, if set, must appear in the task's
// parameters (an addon name).
func (p *Provider) findTask(ctx context.Context, c cloud.ClusterRef, match taskMatcher, target, detail string, done bool) (string, error) {
	a, err := p.api("DescribeClusterTasks", c)
	if err != nil {
		return "", err
	}
	out, err := a.DescribeClusterTasksWithContext(ctx, dara.String(c.ClusterID),
		&cs.DescribeClusterTasksRequest{PageNumber: dara.Int32(1), PageSize: dara.Int32(int32(p.lookback))}, nil, rt())
	if err != nil {
		return "", classify("DescribeClusterTasks", err)
	}
	if out == nil || out.Body == nil {
		return "", nil
	}
	type candidate struct{ id, created string }
	var running, succeeded []candidate
	for _, t := range out.Body.Tasks {
		if t == nil || !match(strings.ToLower(dara.StringValue(t.TaskType)), "") {
			continue
		}
		cand := candidate{dara.StringValue(t.TaskId), dara.StringValue(t.Created)}
		switch strings.ToLower(dara.StringValue(t.State)) {
		case "running", "pending", "paused":
			running = append(running, cand)
		case "success", "succeeded", "successful":
			if done {
				succeeded = append(succeeded, cand)
			}
		}
	}
	newestFirst := func(cs []candidate) {
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].created > cs[j].created })
	}
	newestFirst(running)
	newestFirst(succeeded)
	for _, list := range [][]candidate{running, succeeded} {
		for _, cand := range list {
			info, err := p.task(ctx, c, cand.id)
			if cloud.IsNotFound(err) {
				continue
			}
			if err != nil {
				return "", err
			}
			ttype := ""
			if info.Target != nil {
				if dara.StringValue(info.Target.Id) != target {
					continue
				}
				ttype = strings.ToLower(dara.StringValue(info.Target.Type))
			}
			if !match(strings.ToLower(dara.StringValue(info.TaskType)), ttype) {
				continue
			}
			if detail != "" {
				raw, _ := json.Marshal(info.Parameters)
				if !strings.Contains(string(raw), detail) {
					continue
				}
			}
			return cand.id, nil
		}
	}
	return "", nil
}

func taskID(op string, id *string) (string, error) {
	if dara.StringValue(id) == "" {
		return "", cloud.Errorf(cloud.Retryable, cloud.ACK, op, "ACK returned no task id")
	}
	return dara.StringValue(id), nil
}

// fullVersion checks for ACK's full version form (1.31.1-aliyun.1).
func fullVersion(op, v string) error {
	major, rest, ok := strings.Cut(v, ".")
	minor, rest, ok2 := strings.Cut(rest, ".")
	patch, suffix, _ := strings.Cut(rest, "-")
	for _, n := range []string{major, minor, patch} {
		if _, err := strconv.Atoi(n); err != nil || !ok || !ok2 {
			return cloud.Errorf(cloud.Permanent, cloud.ACK, op, "ACK needs a full version such as 1.31.1-aliyun.1, got %q", v)
		}
	}
	if suffix == "" {
		return cloud.Errorf(cloud.Permanent, cloud.ACK, op, "ACK needs a full version such as 1.31.1-aliyun.1, got %q", v)
	}
	return nil
}

// versionMatches reports whether an ACK version satisfies a requested one.
func versionMatches(actual, requested string) bool {
	a, r := strings.TrimPrefix(actual, "v"), strings.TrimPrefix(requested, "v")
	return a != "" && r != "" && (a == r || strings.HasPrefix(a, r+".") || strings.HasPrefix(a, r+"-"))
}

func poolName(np *cs.DescribeClusterNodePoolsResponseBodyNodepools) string {
	if np == nil || np.NodepoolInfo == nil {
		return ""
	}
	return dara.StringValue(np.NodepoolInfo.Name)
}

func poolID(np *cs.DescribeClusterNodePoolsResponseBodyNodepools) string {
	if np == nil || np.NodepoolInfo == nil {
		return ""
	}
	return dara.StringValue(np.NodepoolInfo.NodepoolId)
}

// kubeletVersion is the pool's Kubernetes version: its kubelet component.
func kubeletVersion(np *cs.DescribeClusterNodePoolsResponseBodyNodepools) string {
	for _, nc := range np.NodeComponents {
		if nc != nil && dara.StringValue(nc.Name) == "kubelet" {
			return dara.StringValue(nc.Version)
		}
	}
	return ""
}

func fromPool(np *cs.DescribeClusterNodePoolsResponseBodyNodepools) cloud.NodeGroup {
	g := cloud.NodeGroup{Name: poolName(np), Version: kubeletVersion(np), Extra: map[string]string{}}
	set := func(k, v string) {
		if v != "" {
			g.Extra[k] = v
		}
	}
	set(ExtraNodePoolID, poolID(np))
	set(ExtraSource, poolID(np))
	if np.Status != nil {
		g.Status = dara.StringValue(np.Status.State)
	}
	if sg := np.ScalingGroup; sg != nil {
		g.DesiredSize = int32(dara.Int64Value(sg.DesiredSize))
		if sg.DesiredSize == nil && np.Status != nil {
			g.DesiredSize = int32(dara.Int64Value(np.Status.TotalNodes))
		}
		for _, it := range sg.InstanceTypes {
			g.InstanceTypes = append(g.InstanceTypes, dara.StringValue(it))
		}
		var vsw []string
		for _, v := range sg.VswitchIds {
			vsw = append(vsw, dara.StringValue(v))
		}
		set(ExtraVSwitchIDs, strings.Join(vsw, ","))
		set(ExtraSystemDiskCategory, dara.StringValue(sg.SystemDiskCategory))
		if sg.SystemDiskSize != nil {
			set(ExtraSystemDiskSize, strconv.FormatInt(*sg.SystemDiskSize, 10))
		}
		set(ExtraImageType, dara.StringValue(sg.ImageType))
	}
	g.MinSize, g.MaxSize = g.DesiredSize, g.DesiredSize
	if as := np.AutoScaling; as != nil && dara.BoolValue(as.Enable) {
		g.MinSize, g.MaxSize = int32(dara.Int64Value(as.MinInstances)), int32(dara.Int64Value(as.MaxInstances))
	}
	if kc := np.KubernetesConfig; kc != nil {
		for _, l := range kc.Labels {
			if l != nil {
				if g.Labels == nil {
					g.Labels = map[string]string{}
				}
				g.Labels[dara.StringValue(l.Key)] = dara.StringValue(l.Value)
			}
		}
		for _, t := range kc.Taints {
			if t != nil {
				g.Taints = append(g.Taints, cloud.Taint{Key: dara.StringValue(t.Key), Value: dara.StringValue(t.Value), Effect: dara.StringValue(t.Effect)})
			}
		}
		set(ExtraRuntime, dara.StringValue(kc.Runtime))
		set(ExtraRuntimeVersion, dara.StringValue(kc.RuntimeVersion))
	}
	return g
}

// clonePool copies an existing pool's configuration into a create
// request: the describe and create shapes share their JSON members, and
// what only describe has (ids, status) is dropped on the way.
func clonePool(old *cs.DescribeClusterNodePoolsResponseBodyNodepools) (*cs.CreateClusterNodePoolRequest, error) {
	raw, err := json.Marshal(old)
	if err != nil {
		return nil, cloud.Errorf(cloud.Permanent, cloud.ACK, "CreateClusterNodePool", "copying node pool %q: %v", poolID(old), err)
	}
	req := &cs.CreateClusterNodePoolRequest{}
	if err := json.Unmarshal(raw, req); err != nil {
		return nil, cloud.Errorf(cloud.Permanent, cloud.ACK, "CreateClusterNodePool", "copying node pool %q: %v", poolID(old), err)
	}
	req.NodepoolInfo = nil
	if req.ScalingGroup != nil {
		// A login password is never returned and must not be guessed;
		// keep the key pair if the source has one.
		req.ScalingGroup.LoginPassword = nil
	}
	return req, nil
}

// applyGroup applies the NodeGroup's fields and explicit Extra keys.
func applyGroup(req *cs.CreateClusterNodePoolRequest, g cloud.NodeGroup) error {
	const op = "CreateClusterNodePool"
	req.NodepoolInfo = &cs.CreateClusterNodePoolRequestNodepoolInfo{Name: dara.String(g.Name), Type: dara.String("ess")}
	if req.ScalingGroup == nil {
		req.ScalingGroup = &cs.CreateClusterNodePoolRequestScalingGroup{}
	}
	sg := req.ScalingGroup
	x := g.Extra
	if v := x[ExtraVSwitchIDs]; v != "" {
		sg.VswitchIds = nil
		for _, id := range strings.Split(v, ",") {
			if id = strings.TrimSpace(id); id != "" {
				sg.VswitchIds = append(sg.VswitchIds, dara.String(id))
			}
		}
	}
	if v := x[ExtraSystemDiskCategory]; v != "" {
		sg.SystemDiskCategory = dara.String(v)
	}
	if v := x[ExtraSystemDiskSize]; v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return cloud.Errorf(cloud.Permanent, cloud.ACK, op, "invalid %s %q", ExtraSystemDiskSize, v)
		}
		sg.SystemDiskSize = dara.Int64(n)
	}
	if v := x[ExtraImageType]; v != "" {
		sg.ImageType = dara.String(v)
	}
	if len(g.InstanceTypes) > 0 {
		sg.InstanceTypes = nil
		for _, it := range g.InstanceTypes {
			sg.InstanceTypes = append(sg.InstanceTypes, dara.String(it))
		}
	}
	sg.DesiredSize = dara.Int64(int64(g.DesiredSize))
	if req.AutoScaling != nil && dara.BoolValue(req.AutoScaling.Enable) {
		req.AutoScaling.MinInstances, req.AutoScaling.MaxInstances = dara.Int64(int64(g.MinSize)), dara.Int64(int64(g.MaxSize))
		sg.DesiredSize = nil // the autoscaler owns the size
	}
	if req.KubernetesConfig == nil {
		req.KubernetesConfig = &cs.CreateClusterNodePoolRequestKubernetesConfig{}
	}
	kc := req.KubernetesConfig
	if v := x[ExtraRuntime]; v != "" {
		kc.Runtime = dara.String(v)
	}
	if v := x[ExtraRuntimeVersion]; v != "" {
		kc.RuntimeVersion = dara.String(v)
	}
	kc.Labels = nil
	labels := map[string]string{}
	for k, v := range g.Labels {
		labels[k] = v
	}
	labels[NodePoolNameLabel] = g.Name
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kc.Labels = append(kc.Labels, &cs.Tag{Key: dara.String(k), Value: dara.String(labels[k])})
	}
	kc.Taints = nil
	for _, t := range g.Taints {
		switch t.Effect {
		case "NoSchedule", "NoExecute", "PreferNoSchedule":
		default:
			return cloud.Errorf(cloud.Permanent, cloud.ACK, op, "unknown taint effect %q", t.Effect)
		}
		kc.Taints = append(kc.Taints, &cs.Taint{Key: dara.String(t.Key), Value: dara.String(t.Value), Effect: dara.String(t.Effect)})
	}
	if g.Version != "" {
		var kept []*cs.CreateClusterNodePoolRequestNodeComponents
		for _, nc := range req.NodeComponents {
			if nc != nil && dara.StringValue(nc.Name) != "kubelet" {
				kept = append(kept, nc)
			}
		}
		req.NodeComponents = append(kept, &cs.CreateClusterNodePoolRequestNodeComponents{Name: dara.String("kubelet"), Version: dara.String(g.Version)})
	}
	if len(sg.VswitchIds) == 0 || len(sg.InstanceTypes) == 0 {
		return cloud.Errorf(cloud.Permanent, cloud.ACK, op, "node pool %q needs vSwitches and instance types: clone it from an existing pool (Extra %q) or set Extra %q",
			g.Name, ExtraSource, ExtraVSwitchIDs)
	}
	return nil
}
