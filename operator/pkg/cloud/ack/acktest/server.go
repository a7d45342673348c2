// Package acktest is a fake Alibaba Cloud Container Service (ACK,
// cs-20151215) endpoint on 127.0.0.1 that speaks the ROA wire format
// (resource paths, x-acs-action / x-acs-version headers, ACS3-HMAC-SHA256
// Authorization, snake_case JSON bodies, {"code", "message", "requestId"}
// errors, x-ratelimit throttling headers), so the real cs-20151215 client
// runs against it. It keeps clusters, node pools, addons and tasks in
// memory, finishes a task after a few polls, and fails calls on demand.
// Like ACK, UpgradeCluster upgrades the node pools too unless master_only
// is set. DescribeKubernetesVersionMetadata answers from a configurable
// list of versions (SetVersions; DefaultVersions otherwise).
package acktest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cs "github.com/alibabacloud-go/cs-20151215/v7/client"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud/cloudtest"
)

// ACK API actions the server answers (the x-acs-action header), as used
// by Inject and Calls.
const (
	DescribeClusterDetail     = "DescribeClusterDetail"
	UpgradeCluster            = "UpgradeCluster"
	DescribeClusterNodePools  = "DescribeClusterNodePools"
	UpgradeClusterNodepool    = "UpgradeClusterNodepool"
	CreateClusterNodePool     = "CreateClusterNodePool"
	DeleteClusterNodepool     = "DeleteClusterNodepool"
	ListClusterAddonInstances = "ListClusterAddonInstances"
	ListAddons                = "ListAddons"
	UpgradeClusterAddons      = "UpgradeClusterAddons"
	DescribeTaskInfo          = "DescribeTaskInfo"
	DescribeClusterTasks      = "DescribeClusterTasks"

	DescribeKubernetesVersionMetadata = "DescribeKubernetesVersionMetadata"
)

// DefaultVersions are the Kubernetes versions a new server offers.
var DefaultVersions = []string{"1.28.9-aliyun.1", "1.29.3-aliyun.1", "1.30.1-aliyun.1", "1.31.1-aliyun.1", "1.32.1-aliyun.1"}

// Task types the server reports.
const (
	TaskClusterUpgrade  = "cluster_upgrade"
	TaskNodePoolUpgrade = "nodepool_upgrade"
	TaskNodePoolCreate  = "nodepool_create"
	TaskNodePoolDelete  = "nodepool_delete"
	TaskAddonUpgrade    = "cluster_addon_upgrade"
)

// Cluster seeds a cluster.
type Cluster struct {
	ID, Name, Region string
	Version          string // full, e.g. 1.29.3-aliyun.1
	NodePools        []NodePool
	Addons           []Addon
}

// NodePool seeds a node pool.
type NodePool struct {
	ID, Name      string
	Version       string
	DesiredSize   int64
	InstanceTypes []string
	VSwitchIDs    []string
	Labels        map[string]string
	Taints        []Taint
	// Autoscaling when MaxSize > 0.
	MinSize, MaxSize   int64
	SystemDiskCategory string
	SystemDiskSize     int64
	ImageType          string
	KeyPair            string
	SecurityGroupIDs   []string
}

// Taint is a node-pool taint.
type Taint struct{ Key, Value, Effect string }

// Addon seeds an installed addon and the version the catalog offers.
type Addon struct{ Name, Version, Latest string }

// NodeGroupEvent reports that a node group's Nodes changed (Server.OnNodeGroup).
type NodeGroupEvent = cloudtest.NodeGroupEvent

// faultAnswers are the answers to injected faults (Server.Inject).
var faultAnswers = cloudtest.Answers{
	cloudtest.Throttle:    {Status: http.StatusTooManyRequests, Code: "Throttling.User", Message: "Request was denied due to user flow control."},
	cloudtest.ServerError: {Status: http.StatusServiceUnavailable, Code: "ServiceUnavailable", Message: "The request has failed due to a temporary failure of the server."},
	cloudtest.Permanent:   {Status: http.StatusBadRequest, Code: "InvalidParameter", Message: "injected invalid parameter", ForAction: true},
}

// wire is how ACK refuses a request and answers an injected fault.
var wire = &cloudtest.Wire{
	Checks: []cloudtest.Check{
		func(r *http.Request, action string) (cloudtest.Answer, bool) {
			got := r.Header.Get("x-acs-action")
			return cloudtest.Answer{Status: http.StatusBadRequest, Code: "InvalidAction",
				Message: fmt.Sprintf("x-acs-action %q / x-acs-version %q do not match %s", got, r.Header.Get("x-acs-version"), action),
			}, got != action || r.Header.Get("x-acs-version") != "2015-12-15"
		},
		cloudtest.Credentials("ACS3-HMAC-SHA256 Credential=",
			cloudtest.Answer{Status: http.StatusUnauthorized, Code: "InvalidAccessKeyId.NotFound", Message: "Specified access key is not found or invalid."}),
	},
	Faults: faultAnswers,
	// ACK advertises the wait as the TimeLeft (ms) of x-ratelimit-user-api.
	Throttled: func(h http.Header, wait time.Duration) {
		if wait > 0 {
			h.Set("x-ratelimit-user-api", fmt.Sprintf("Limit:10,Remain:0,TimeLeft:%d,Reset:%d", wait.Milliseconds(), time.Now().Unix()+1))
		}
	},
	Error: apiError,
}

// Server is the fake ACK endpoint.
type Server struct {
	// Fake is the endpoint (URL: http://127.0.0.1:port, Close) and injects
	// faults (Inject, FailOperations): Throttle answers 429
	// Throttling.User, with an x-ratelimit-user-api TimeLeft when
	// SetRetryAfter set one; ServerError answers 503 ServiceUnavailable;
	// Permanent answers 400 InvalidParameter. It counts calls (Calls),
	// reports node groups (OnNodeGroup, NodeGroupEvents), and PollsToFinish
	// is how many DescribeTaskInfo calls finish a task (default 3).
	cloudtest.Fake

	mu       sync.Mutex
	clusters map[string]*cluster
	tasks    map[string]*task
	nextID   int
	versions []string
}

type cluster struct {
	id, name, region, version, state string
	pools                            map[string]*cs.DescribeClusterNodePoolsResponseBodyNodepools // by id
	addons                           map[string]*addon
}

type addon struct{ name, version, latest, state string }

type task struct {
	info   *cs.DescribeTaskInfoResponseBody
	polls  int
	fail   bool
	finish func(failed bool)
}

// New starts a server on 127.0.0.1 and closes it when the test ends.
func New(tb testing.TB) *Server { return cloudtest.CloseAtEnd(tb, NewServer()) }

// NewServer starts a server on 127.0.0.1.
func NewServer() *Server {
	s := &Server{clusters: map[string]*cluster{}, tasks: map[string]*task{},
		versions: append([]string(nil), DefaultVersions...)}
	s.Listen(http.HandlerFunc(s.serve), false)
	return s
}

// AddCluster seeds (or replaces) a cluster.
func (s *Server) AddCluster(c Cluster) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &cluster{id: c.ID, name: c.Name, region: c.Region, version: c.Version, state: "running",
		pools: map[string]*cs.DescribeClusterNodePoolsResponseBodyNodepools{}, addons: map[string]*addon{}}
	for _, p := range c.NodePools {
		np := &cs.DescribeClusterNodePoolsResponseBodyNodepools{
			NodepoolInfo: &cs.DescribeClusterNodePoolsResponseBodyNodepoolsNodepoolInfo{Name: str(p.Name), NodepoolId: str(p.ID), Type: str("ess"), RegionId: str(c.Region)},
			Status:       &cs.DescribeClusterNodePoolsResponseBodyNodepoolsStatus{State: str("active"), TotalNodes: i64(p.DesiredSize), ServingNodes: i64(p.DesiredSize)},
			ScalingGroup: &cs.DescribeClusterNodePoolsResponseBodyNodepoolsScalingGroup{
				DesiredSize: i64(p.DesiredSize), InstanceTypes: strs(p.InstanceTypes), VswitchIds: strs(p.VSwitchIDs),
				SystemDiskCategory: str(cmp.Or(p.SystemDiskCategory, "cloud_essd")), SystemDiskSize: i64(orInt(p.SystemDiskSize, 120)),
				ImageType: str(cmp.Or(p.ImageType, "AliyunLinux3")), SecurityGroupIds: strs(p.SecurityGroupIDs),
				ScalingGroupId: str("asg-" + p.ID),
			},
			KubernetesConfig: &cs.DescribeClusterNodePoolsResponseBodyNodepoolsKubernetesConfig{Runtime: str("containerd"), RuntimeVersion: str("1.6.28")},
			NodeComponents:   []*cs.DescribeClusterNodePoolsResponseBodyNodepoolsNodeComponents{{Name: str("kubelet"), Version: str(cmp.Or(p.Version, c.Version))}},
		}
		if p.KeyPair != "" {
			np.ScalingGroup.KeyPair = str(p.KeyPair)
		}
		keys := make([]string, 0, len(p.Labels))
		for k := range p.Labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			np.KubernetesConfig.Labels = append(np.KubernetesConfig.Labels, &cs.Tag{Key: str(k), Value: str(p.Labels[k])})
		}
		for _, t := range p.Taints {
			np.KubernetesConfig.Taints = append(np.KubernetesConfig.Taints, &cs.Taint{Key: str(t.Key), Value: str(t.Value), Effect: str(t.Effect)})
		}
		if p.MaxSize > 0 {
			np.AutoScaling = &cs.DescribeClusterNodePoolsResponseBodyNodepoolsAutoScaling{Enable: boolp(true), MinInstances: i64(p.MinSize), MaxInstances: i64(p.MaxSize), Type: str("cpu")}
		}
		st.pools[p.ID] = np
		s.Notify(poolEvent(c.ID, np, false))
	}
	for _, a := range c.Addons {
		st.addons[a.Name] = &addon{name: a.Name, version: a.Version, latest: a.Latest, state: "active"}
	}
	s.clusters[c.ID] = st
}

// SetVersions replaces the Kubernetes versions the server offers (full
// ACK versions, 1.31.1-aliyun.1). DescribeKubernetesVersionMetadata lists
// them; for one of them (KubernetesVersion) with QueryUpgradableVersion,
// its upgradable_versions are the listed versions of the next minor, the
// only upgrades UpgradeCluster accepts. A version not listed has no
// metadata (an empty answer).
func (s *Server) SetVersions(versions ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.versions = append([]string(nil), versions...)
}

// NodePool returns a copy of a node pool (by name) as the server holds it.
func (s *Server) NodePool(clusterID, name string) (*cs.DescribeClusterNodePoolsResponseBodyNodepools, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clusters[clusterID]
	if c == nil {
		return nil, false
	}
	for _, np := range c.pools {
		if *np.NodepoolInfo.Name == name {
			raw, _ := json.Marshal(np)
			out := &cs.DescribeClusterNodePoolsResponseBodyNodepools{}
			_ = json.Unmarshal(raw, out)
			return out, true
		}
	}
	return nil, false
}

type route struct {
	method, action string
	path           *regexp.Regexp
	h              func(s *Server, w http.ResponseWriter, r *http.Request, m []string)
}

// inCluster is h on the cluster whose id the request carries (id); when
// there is none, it answers ErrorClusterNotFound.
func inCluster(id func(*http.Request, []string) string,
	h func(*Server, http.ResponseWriter, *http.Request, *cluster, []string)) func(*Server, http.ResponseWriter, *http.Request, []string) {
	return func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		if c := s.cluster(w, id(r, m)); c != nil {
			h(s, w, r, c, m)
		}
	}
}

// inPath is the cluster id of a /clusters/{id}/... path.
func inPath(_ *http.Request, m []string) string { return m[1] }

var routes = []route{
	{http.MethodGet, DescribeClusterDetail, regexp.MustCompile(`^/clusters/([^/]+)$`), inCluster(inPath, (*Server).describeCluster)},
	{http.MethodPost, UpgradeCluster, regexp.MustCompile(`^/api/v2/clusters/([^/]+)/upgrade$`), inCluster(inPath, (*Server).upgradeCluster)},
	{http.MethodGet, DescribeClusterNodePools, regexp.MustCompile(`^/clusters/([^/]+)/nodepools$`), inCluster(inPath, (*Server).describePools)},
	{http.MethodPost, CreateClusterNodePool, regexp.MustCompile(`^/clusters/([^/]+)/nodepools$`), inCluster(inPath, (*Server).createPool)},
	{http.MethodPost, UpgradeClusterNodepool, regexp.MustCompile(`^/clusters/([^/]+)/nodepools/([^/]+)/upgrade$`), inCluster(inPath, (*Server).upgradePool)},
	{http.MethodDelete, DeleteClusterNodepool, regexp.MustCompile(`^/clusters/([^/]+)/nodepools/([^/]+)$`), inCluster(inPath, (*Server).deletePool)},
	{http.MethodGet, ListClusterAddonInstances, regexp.MustCompile(`^/clusters/([^/]+)/addon_instances$`), inCluster(inPath, (*Server).listAddonInstances)},
	{http.MethodGet, ListAddons, regexp.MustCompile(`^/addons$`), inCluster(func(r *http.Request, _ []string) string { return r.URL.Query().Get("cluster_id") }, (*Server).listAddons)},
	{http.MethodPost, UpgradeClusterAddons, regexp.MustCompile(`^/clusters/([^/]+)/components/upgrade$`), inCluster(inPath, (*Server).upgradeAddons)},
	{http.MethodGet, DescribeTaskInfo, regexp.MustCompile(`^/tasks/([^/]+)$`), (*Server).describeTask},
	{http.MethodGet, DescribeClusterTasks, regexp.MustCompile(`^/clusters/([^/]+)/tasks$`), inCluster(inPath, (*Server).describeClusterTasks)},
	{http.MethodGet, DescribeKubernetesVersionMetadata, regexp.MustCompile(`^/api/v1/metadata/versions$`), (*Server).describeVersions},
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rt := range routes {
		m := rt.path.FindStringSubmatch(r.URL.Path)
		if m == nil || r.Method != rt.method {
			continue
		}
		s.Handle(w, r, rt.action, wire, func(w http.ResponseWriter, r *http.Request) { rt.h(s, w, r, m) })
		return
	}
	apiError(w, http.StatusNotFound, "InvalidAction.NotFound", "Specified api is not found: "+r.Method+" "+r.URL.Path)
}

func (s *Server) cluster(w http.ResponseWriter, id string) *cluster {
	c := s.clusters[id]
	if c == nil {
		apiError(w, http.StatusNotFound, "ErrorClusterNotFound", fmt.Sprintf("cluster %s not found", id))
	}
	return c
}

func (s *Server) describeCluster(w http.ResponseWriter, _ *http.Request, c *cluster, _ []string) {
	writeJSON(w, http.StatusOK, &cs.DescribeClusterDetailResponseBody{
		ClusterId: str(c.id), Name: str(c.name), RegionId: str(c.region), CurrentVersion: str(c.version), InitVersion: str(c.version),
		State: str(c.state), ClusterType: str("ManagedKubernetes"), Profile: str("Default"), ClusterSpec: str("ack.pro.small"),
	})
}

// busy answers a conflict when a task holds the target.
func (s *Server) busy(w http.ResponseWriter, c *cluster, target string) bool {
	for _, t := range s.tasks {
		if *t.info.ClusterId == c.id && *t.info.State == "running" && (*t.info.Target.Id == target || *t.info.Target.Id == c.id || target == c.id) {
			apiError(w, http.StatusConflict, "ErrorTaskConflict", fmt.Sprintf("task %s is running on the cluster, try again when it finishes", *t.info.TaskId))
			return true
		}
	}
	return false
}

func (s *Server) newTask(c *cluster, taskType, targetType, targetID string, params map[string]any, finish func(failed bool)) string {
	s.nextID++
	id := fmt.Sprintf("T-%08x%016x", s.nextID, uint64(s.nextID)*0x9e3779b97f4a7c15)
	now := time.Now().UTC().Add(time.Duration(s.nextID) * time.Millisecond).Format(time.RFC3339Nano)
	t := &task{finish: finish, info: &cs.DescribeTaskInfoResponseBody{
		TaskId: str(id), ClusterId: str(c.id), TaskType: str(taskType), State: str("running"), Created: str(now), Updated: str(now),
		Target: &cs.DescribeTaskInfoResponseBodyTarget{Type: str(targetType), Id: str(targetID)}, Parameters: params,
		CurrentStage: str("Starting"),
	}}
	t.fail = s.OperationFails()
	s.tasks[id] = t
	return id
}

func (s *Server) upgradeCluster(w http.ResponseWriter, r *http.Request, c *cluster, _ []string) {
	var in struct {
		Version     string `json:"version"`
		NextVersion string `json:"next_version"`
		MasterOnly  bool   `json:"master_only"`
	}
	if !readJSON(w, r, &in) || s.busy(w, c, c.id) {
		return
	}
	if in.Version != "" && in.Version != c.version {
		apiError(w, http.StatusBadRequest, "ErrorVersionMismatch", fmt.Sprintf("the cluster is at %s, not %s", c.version, in.Version))
		return
	}
	if !fullVersion.MatchString(in.NextVersion) || !cloudtest.NextMinor(c.version, in.NextVersion) {
		apiError(w, http.StatusBadRequest, "ErrorUpgradeVersion", fmt.Sprintf("cannot upgrade from %s to %q", c.version, in.NextVersion))
		return
	}
	c.state = "upgrading"
	id := s.newTask(c, TaskClusterUpgrade, "cluster", c.id, map[string]any{"next_version": in.NextVersion, "master_only": in.MasterOnly}, func(failed bool) {
		c.state = "running"
		if failed {
			return
		}
		c.version = in.NextVersion
		if !in.MasterOnly {
			for _, np := range c.pools {
				setKubelet(np, in.NextVersion)
				s.Notify(poolEvent(c.id, np, false))
			}
		}
	})
	writeJSON(w, http.StatusAccepted, map[string]string{"cluster_id": c.id, "task_id": id, "request_id": requestID()})
}

func (s *Server) describePools(w http.ResponseWriter, r *http.Request, c *cluster, _ []string) {
	name := r.URL.Query().Get("NodepoolName")
	out := &cs.DescribeClusterNodePoolsResponseBody{Nodepools: []*cs.DescribeClusterNodePoolsResponseBodyNodepools{}}
	for _, id := range cloudtest.SortedKeys(c.pools, func(np *cs.DescribeClusterNodePoolsResponseBodyNodepools) bool {
		return name == "" || *np.NodepoolInfo.Name == name
	}) {
		out.Nodepools = append(out.Nodepools, c.pools[id])
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) pool(w http.ResponseWriter, c *cluster, id string) *cs.DescribeClusterNodePoolsResponseBodyNodepools {
	np := c.pools[id]
	if np == nil {
		apiError(w, http.StatusNotFound, "ErrorNodePoolNotFound", fmt.Sprintf("node pool %s not found in cluster %s", id, c.id))
	}
	return np
}

func (s *Server) upgradePool(w http.ResponseWriter, r *http.Request, c *cluster, m []string) {
	np := s.pool(w, c, m[2])
	if np == nil {
		return
	}
	var in cs.UpgradeClusterNodepoolRequest
	if !readJSON(w, r, &in) || s.busy(w, c, m[2]) {
		return
	}
	v := strVal(in.KubernetesVersion)
	if !fullVersion.MatchString(v) {
		apiError(w, http.StatusBadRequest, "ErrorUpgradeVersion", fmt.Sprintf("kubernetes_version %q is not a full ACK version", v))
		return
	}
	np.Status.State = str("updating")
	id := s.newTask(c, TaskNodePoolUpgrade, "nodepool", m[2], map[string]any{"kubernetes_version": v}, func(failed bool) {
		np.Status.State = str("active")
		if !failed {
			setKubelet(np, v)
			s.Notify(poolEvent(c.id, np, false))
		}
	})
	writeJSON(w, http.StatusOK, map[string]string{"task_id": id, "RequestId": requestID()})
}

func (s *Server) createPool(w http.ResponseWriter, r *http.Request, c *cluster, _ []string) {
	var in cs.CreateClusterNodePoolRequest
	if !readJSON(w, r, &in) {
		return
	}
	switch {
	case in.NodepoolInfo == nil || strVal(in.NodepoolInfo.Name) == "":
		apiError(w, http.StatusBadRequest, "ErrorParameter", "nodepool_info.name is required")
		return
	case in.ScalingGroup == nil || len(in.ScalingGroup.VswitchIds) == 0 || len(in.ScalingGroup.InstanceTypes) == 0:
		apiError(w, http.StatusBadRequest, "ErrorParameter", "scaling_group.vswitch_ids and scaling_group.instance_types are required")
		return
	}
	if in.KubernetesConfig != nil {
		for _, t := range in.KubernetesConfig.Taints {
			switch strVal(t.Effect) {
			case "NoSchedule", "NoExecute", "PreferNoSchedule":
			default:
				apiError(w, http.StatusBadRequest, "ErrorParameter", "invalid taint effect "+strVal(t.Effect))
				return
			}
		}
	}
	// The create and describe shapes share their JSON members.
	raw, _ := json.Marshal(&in)
	np := &cs.DescribeClusterNodePoolsResponseBodyNodepools{}
	_ = json.Unmarshal(raw, np)
	s.nextID++
	id := fmt.Sprintf("np%030x", s.nextID)
	np.NodepoolInfo = &cs.DescribeClusterNodePoolsResponseBodyNodepoolsNodepoolInfo{Name: in.NodepoolInfo.Name, NodepoolId: str(id), Type: str("ess"), RegionId: str(c.region)}
	size := int64Val(np.ScalingGroup.DesiredSize)
	if np.AutoScaling != nil && boolVal(np.AutoScaling.Enable) {
		size = int64Val(np.AutoScaling.MinInstances)
	}
	np.Status = &cs.DescribeClusterNodePoolsResponseBodyNodepoolsStatus{State: str("initial"), TotalNodes: i64(size)}
	np.ScalingGroup.ScalingGroupId = str("asg-" + id)
	version := c.version
	for _, nc := range np.NodeComponents {
		if strVal(nc.Name) == "kubelet" && strVal(nc.Version) != "" {
			version = strVal(nc.Version)
		}
	}
	setKubelet(np, version)
	c.pools[id] = np
	tid := s.newTask(c, TaskNodePoolCreate, "nodepool", id, map[string]any{"name": strVal(in.NodepoolInfo.Name)}, func(failed bool) {
		if failed {
			np.Status.State = str("failed")
			return
		}
		np.Status.State, np.Status.ServingNodes = str("active"), i64(size)
		s.Notify(poolEvent(c.id, np, false))
	})
	writeJSON(w, http.StatusOK, map[string]string{"nodepool_id": id, "task_id": tid, "request_id": requestID()})
}

func (s *Server) deletePool(w http.ResponseWriter, _ *http.Request, c *cluster, m []string) {
	np := s.pool(w, c, m[2])
	if np == nil || s.busy(w, c, m[2]) {
		return
	}
	np.Status.State = str("deleting")
	id := s.newTask(c, TaskNodePoolDelete, "nodepool", m[2], nil, func(failed bool) {
		if failed {
			np.Status.State = str("active")
			return
		}
		delete(c.pools, m[2])
		s.Notify(poolEvent(c.id, np, true))
	})
	writeJSON(w, http.StatusOK, map[string]string{"task_id": id, "request_id": requestID()})
}

func (s *Server) listAddonInstances(w http.ResponseWriter, _ *http.Request, c *cluster, _ []string) {
	out := &cs.ListClusterAddonInstancesResponseBody{Addons: []*cs.ListClusterAddonInstancesResponseBodyAddons{}}
	for _, a := range sortedAddons(c) {
		out.Addons = append(out.Addons, &cs.ListClusterAddonInstancesResponseBodyAddons{Name: str(a.name), Version: str(a.version), State: str(a.state)})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) listAddons(w http.ResponseWriter, _ *http.Request, c *cluster, _ []string) {
	out := &cs.ListAddonsResponseBody{Addons: []*cs.ListAddonsResponseBodyAddons{}}
	for _, a := range sortedAddons(c) {
		out.Addons = append(out.Addons, &cs.ListAddonsResponseBodyAddons{Name: str(a.name), Version: str(cmp.Or(a.latest, a.version)), Category: str("core"), Managed: boolp(false)})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) upgradeAddons(w http.ResponseWriter, r *http.Request, c *cluster, _ []string) {
	var in []*cs.UpgradeClusterAddonsRequestBody
	if !readJSON(w, r, &in) || s.busy(w, c, c.id) {
		return
	}
	if len(in) == 0 {
		apiError(w, http.StatusBadRequest, "ErrorParameter", "no addons to upgrade")
		return
	}
	var names []string
	var targets []*addon
	for _, u := range in {
		a := c.addons[strVal(u.ComponentName)]
		switch {
		case a == nil:
			apiError(w, http.StatusNotFound, "ErrorAddonNotFound", fmt.Sprintf("addon %s is not installed", strVal(u.ComponentName)))
			return
		case strVal(u.NextVersion) != a.latest:
			apiError(w, http.StatusBadRequest, "ErrorAddonVersion", fmt.Sprintf("addon %s cannot be upgraded to %s (offered: %s)", a.name, strVal(u.NextVersion), a.latest))
			return
		case strVal(u.Version) != "" && strVal(u.Version) != a.version:
			apiError(w, http.StatusBadRequest, "ErrorAddonVersion", fmt.Sprintf("addon %s is at %s, not %s", a.name, a.version, strVal(u.Version)))
			return
		}
		names = append(names, a.name)
		targets = append(targets, a)
	}
	for _, a := range targets {
		a.state = "upgrading"
	}
	id := s.newTask(c, TaskAddonUpgrade, "cluster", c.id, map[string]any{"addons": names}, func(failed bool) {
		for _, a := range targets {
			a.state = "active"
			if !failed {
				a.version = a.latest
			}
		}
	})
	writeJSON(w, http.StatusOK, map[string]string{"cluster_id": c.id, "task_id": id, "request_id": requestID()})
}

func (s *Server) describeTask(w http.ResponseWriter, _ *http.Request, m []string) {
	t := s.tasks[m[1]]
	if t == nil {
		apiError(w, http.StatusNotFound, "ErrorTaskNotFound", fmt.Sprintf("task %s not found", m[1]))
		return
	}
	if *t.info.State == "running" {
		t.polls++
		t.info.Updated = str(time.Now().UTC().Format(time.RFC3339Nano))
		if t.polls >= s.Polls() {
			if t.fail {
				t.info.State = str("failed")
				t.info.Error = &cs.DescribeTaskInfoResponseBodyError{Code: str("ErrorTaskFailed"), Message: str("simulated failure of " + *t.info.TaskType)}
			} else {
				t.info.State = str("success")
			}
			t.info.CurrentStage = str("Finished")
			t.finish(t.fail)
		}
	}
	writeJSON(w, http.StatusOK, t.info)
}

func (s *Server) describeClusterTasks(w http.ResponseWriter, r *http.Request, c *cluster, _ []string) {
	size, _ := strconv.Atoi(r.URL.Query().Get("page_size"))
	if size <= 0 {
		size = 10
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page_number"))
	if page <= 0 {
		page = 1
	}
	var all []*task
	for _, t := range s.tasks {
		if *t.info.ClusterId == c.id {
			all = append(all, t)
		}
	}
	sort.Slice(all, func(i, j int) bool { return *all[i].info.Created > *all[j].info.Created })
	out := &cs.DescribeClusterTasksResponseBody{Tasks: []*cs.DescribeClusterTasksResponseBodyTasks{}, RequestId: str(requestID()),
		PageInfo: &cs.DescribeClusterTasksResponseBodyPageInfo{PageNumber: i64(int64(page)), PageSize: i64(int64(size)), TotalCount: i64(int64(len(all)))}}
	for i := (page - 1) * size; i < len(all) && i < page*size; i++ {
		t := all[i].info
		x := &cs.DescribeClusterTasksResponseBodyTasks{TaskId: t.TaskId, TaskType: t.TaskType, State: t.State, Created: t.Created, Updated: t.Updated}
		if t.Error != nil {
			x.Error = &cs.DescribeClusterTasksResponseBodyTasksError{Code: t.Error.Code, Message: t.Error.Message}
		}
		out.Tasks = append(out.Tasks, x)
	}
	writeJSON(w, http.StatusOK, out)
}

// describeVersions answers DescribeKubernetesVersionMetadata: a JSON
// array of version metadata. ClusterType is required. With
// KubernetesVersion, only that version (if offered), and its
// upgradable_versions when QueryUpgradableVersion is true; otherwise every
// offered version (Mode supported or creatable: all are creatable here).
func (s *Server) describeVersions(w http.ResponseWriter, r *http.Request, _ []string) {
	q := r.URL.Query()
	switch ct := q.Get("ClusterType"); ct {
	case "Kubernetes", "ManagedKubernetes", "ExternalKubernetes":
	case "":
		apiError(w, http.StatusBadRequest, "ErrorParameter", "ClusterType is required")
		return
	default:
		apiError(w, http.StatusBadRequest, "ErrorParameter", fmt.Sprintf("invalid ClusterType %q", ct))
		return
	}
	if m := q.Get("Mode"); m != "" && m != "supported" && m != "creatable" {
		apiError(w, http.StatusBadRequest, "ErrorParameter", fmt.Sprintf("invalid Mode %q", m))
		return
	}
	want, upgradable := q.Get("KubernetesVersion"), q.Get("QueryUpgradableVersion") == "true"
	out := []*cs.DescribeKubernetesVersionMetadataResponseBody{}
	for _, v := range s.versions {
		if want != "" && v != want {
			continue
		}
		m := &cs.DescribeKubernetesVersionMetadataResponseBody{
			Version: str(v), Creatable: boolp(true),
			ReleaseDate: str("2024-05-01T00:00:00Z"), ExpirationDate: str("2026-05-01T00:00:00Z"),
			MetaData:     map[string]any{"KubernetesVersion": v, "SubClass": "default"},
			Capabilities: map[string]any{"AnyAZ": true},
			Runtimes:     []*cs.Runtime{{Name: str("containerd"), Version: str("1.6.28")}},
			Images: []*cs.DescribeKubernetesVersionMetadataResponseBodyImages{{
				ImageId: str("aliyun_3_x64_20G_alibase_20240528.vhd"), ImageName: str("Alibaba Cloud Linux  3.2104"), Platform: str("AliyunLinux"),
				OsVersion: str("3.2104"), ImageType: str("AliyunLinux3"), OsType: str("Linux"), ImageCategory: str("system"), Architecture: str("x86_64"),
			}},
		}
		if want != "" && upgradable {
			m.UpgradableVersions = []*string{}
			for _, next := range s.versions {
				if cloudtest.NextMinor(v, next) {
					m.UpgradableVersions = append(m.UpgradableVersions, str(next))
				}
			}
		}
		out = append(out, m)
	}
	writeJSON(w, http.StatusOK, out)
}

func setKubelet(np *cs.DescribeClusterNodePoolsResponseBodyNodepools, v string) {
	for _, nc := range np.NodeComponents {
		if strVal(nc.Name) == "kubelet" {
			nc.Version = str(v)
			return
		}
	}
	np.NodeComponents = append(np.NodeComponents, &cs.DescribeClusterNodePoolsResponseBodyNodepoolsNodeComponents{Name: str("kubelet"), Version: str(v)})
}

func sortedAddons(c *cluster) []*addon {
	out := []*addon{}
	for _, name := range cloudtest.SortedKeys(c.addons, nil) {
		out = append(out, c.addons[name])
	}
	return out
}

var fullVersion = regexp.MustCompile(`^\d+\.\d+\.\d+-aliyun\.\d+$`)

var reqID atomic.Int64

func requestID() string {
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", reqID.Add(1))
}

func apiError(w http.ResponseWriter, status int, code, msg string) {
	id := requestID()
	w.Header().Set("x-acs-request-id", id)
	writeJSON(w, status, map[string]string{"code": code, "message": msg, "requestId": id})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	cloudtest.WriteJSON(w, status, "application/json;charset=utf-8", v)
}

func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	return cloudtest.ReadJSON(w, r, v, func(err error) {
		apiError(w, http.StatusBadRequest, "ErrorParameter", "malformed request body: "+err.Error())
	})
}

func str(s string) *string { return &s }
func i64(v int64) *int64   { return &v }
func boolp(v bool) *bool   { return &v }

func strs(in []string) []*string {
	var out []*string
	for _, s := range in {
		out = append(out, str(s))
	}
	return out
}

func strVal(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func int64Val(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func boolVal(p *bool) bool { return p != nil && *p }

func orInt(v, def int64) int64 {
	if v == 0 {
		return def
	}
	return v
}

func poolEvent(clusterID string, np *cs.DescribeClusterNodePoolsResponseBodyNodepools, deleted bool) NodeGroupEvent {
	e := NodeGroupEvent{Cluster: clusterID, Name: strVal(np.NodepoolInfo.Name), LabelValue: strVal(np.NodepoolInfo.NodepoolId), Deleted: deleted}
	for _, nc := range np.NodeComponents {
		if strVal(nc.Name) == "kubelet" {
			e.Version = strVal(nc.Version)
		}
	}
	if np.Status != nil {
		e.Size = int32(int64Val(np.Status.TotalNodes))
	}
	if np.ScalingGroup != nil && np.ScalingGroup.DesiredSize != nil {
		e.Size = int32(*np.ScalingGroup.DesiredSize)
	}
	if np.KubernetesConfig != nil {
		for _, l := range np.KubernetesConfig.Labels {
			if e.Labels == nil {
				e.Labels = map[string]string{}
			}
			e.Labels[strVal(l.Key)] = strVal(l.Value)
		}
	}
	return e
}
