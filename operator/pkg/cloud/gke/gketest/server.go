// Package gketest is a fake Google Kubernetes Engine endpoint on 127.0.0.1
// that speaks the container/v1 REST wire format (resource paths, JSON
// bodies, google.rpc error bodies, long-running Operations), so the real
// google.golang.org/api/container/v1 client runs against it. It keeps
// clusters, node pools and operations in memory, finishes an operation on
// its third poll, resolves version aliases ("1.30" -> "1.30.4-gke.1200")
// like GKE, and fails calls on demand.
package gketest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	container "google.golang.org/api/container/v1"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/cloudtest"
)

// API calls the server answers, as used by Inject and Calls.
const (
	GetCluster     = "clusters.get"
	UpdateMaster   = "clusters.updateMaster"
	ListNodePools  = "nodePools.list"
	GetNodePool    = "nodePools.get"
	UpdateNodePool = "nodePools.update"
	CreateNodePool = "nodePools.create"
	DeleteNodePool = "nodePools.delete"
	GetOperation   = "operations.get"
	ListOperations = "operations.list"
)

// Cluster seeds a cluster.
type Cluster struct {
	Project, Location, Name string
	// Version is the master version ("1.29.8-gke.1031000"; an alias like
	// "1.29" is resolved).
	Version   string
	NodePools []NodePool
}

// NodePool seeds a node pool.
type NodePool struct {
	Name    string
	Version string
	// NodeCount is per zone (GKE's initialNodeCount).
	NodeCount      int64
	Locations      []string
	MachineType    string
	ImageType      string
	DiskSizeGB     int64
	ServiceAccount string
	Labels         map[string]string
	Taints         []Taint
	// Autoscaling per zone, when MaxNodes > 0.
	MinNodes, MaxNodes int64
}

// Taint is a GKE taint (effect NO_SCHEDULE, NO_EXECUTE, PREFER_NO_SCHEDULE).
type Taint struct{ Key, Value, Effect string }

// NodeGroupEvent reports that a node group's Nodes changed (Server.OnNodeGroup).
type NodeGroupEvent = cloudtest.NodeGroupEvent

// faultAnswers are the answers to injected faults (Server.Inject).
var faultAnswers = cloudtest.Answers{
	cloudtest.Throttle: {Status: http.StatusTooManyRequests, Code: "RESOURCE_EXHAUSTED",
		Message: "Quota exceeded for quota metric 'Requests' of service 'container.googleapis.com'."},
	cloudtest.ServerError: {Status: http.StatusServiceUnavailable, Code: "UNAVAILABLE", Message: "The service is currently unavailable."},
	cloudtest.Permanent:   {Status: http.StatusBadRequest, Code: "INVALID_ARGUMENT", Message: "injected invalid argument", ForAction: true},
}

// wire is how GKE refuses a request and answers an injected fault.
var wire = &cloudtest.Wire{
	Checks: []cloudtest.Check{cloudtest.Credentials("Bearer ",
		cloudtest.Answer{Status: http.StatusUnauthorized, Code: "UNAUTHENTICATED", Message: "Request is missing required authentication credential."})},
	Faults: faultAnswers,
	Error:  apiError,
}

// Server is the fake GKE endpoint.
type Server struct {
	// Fake is the endpoint (URL: http://127.0.0.1:port/, Close) and
	// injects faults (Inject, FailOperations): Throttle answers 429
	// RESOURCE_EXHAUSTED (with Retry-After when SetRetryAfter set one);
	// ServerError answers 503 UNAVAILABLE; Permanent answers 400
	// INVALID_ARGUMENT. It counts calls (Calls), reports node groups
	// (OnNodeGroup, NodeGroupEvents), and PollsToFinish is how many
	// operations.get calls finish an operation (default 3).
	cloudtest.Fake

	mu       sync.Mutex
	clusters map[string]*cluster // by resource name
	ops      map[string]*operation
	nextID   int
}

type cluster struct {
	project, location string
	c                 *container.Cluster
	pools             map[string]*container.NodePool
}

type operation struct {
	op     *container.Operation
	parent string // projects/p/locations/l
	polls  int
	fail   bool
	finish func(failed bool)
}

// New starts a server on 127.0.0.1 and closes it when the test ends.
func New(tb testing.TB) *Server { return cloudtest.CloseAtEnd(tb, NewServer()) }

// NewServer starts a server on 127.0.0.1.
func NewServer() *Server {
	s := &Server{clusters: map[string]*cluster{}, ops: map[string]*operation{}}
	s.Listen(http.HandlerFunc(s.serve), false)
	s.URL += "/"
	return s
}

// AddCluster seeds (or replaces) a cluster.
func (s *Server) AddCluster(c Cluster) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := "projects/" + c.Project + "/locations/" + c.Location + "/clusters/" + c.Name
	version := resolve(c.Version, "")
	st := &cluster{project: c.Project, location: c.Location, pools: map[string]*container.NodePool{}, c: &container.Cluster{
		Name: c.Name, Location: c.Location, Status: "RUNNING", CurrentMasterVersion: version, InitialClusterVersion: version,
		CurrentNodeVersion: version, SelfLink: selfLink(name),
	}}
	for _, np := range c.NodePools {
		pool := &container.NodePool{
			Name: np.Name, Version: resolve(cmp.Or(np.Version, c.Version), version), Status: "RUNNING", InitialNodeCount: np.NodeCount,
			Locations: np.Locations, SelfLink: selfLink(name + "/nodePools/" + np.Name),
			Config: &container.NodeConfig{MachineType: np.MachineType, ImageType: cmp.Or(np.ImageType, "COS_CONTAINERD"), DiskSizeGb: np.DiskSizeGB,
				DiskType: "pd-balanced", ServiceAccount: np.ServiceAccount, Labels: np.Labels},
			Management: &container.NodeManagement{AutoRepair: true},
		}
		for _, t := range np.Taints {
			pool.Config.Taints = append(pool.Config.Taints, &container.NodeTaint{Key: t.Key, Value: t.Value, Effect: t.Effect})
		}
		if np.MaxNodes > 0 {
			pool.Autoscaling = &container.NodePoolAutoscaling{Enabled: true, MinNodeCount: np.MinNodes, MaxNodeCount: np.MaxNodes, LocationPolicy: "BALANCED"}
		}
		st.pools[np.Name] = pool
		s.Notify(poolEvent(c.Name, pool, false))
	}
	s.clusters[name] = st
}

// NodePool returns a copy of a node pool as the server holds it.
func (s *Server) NodePool(project, location, clusterName, name string) (*container.NodePool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clusters["projects/"+project+"/locations/"+location+"/clusters/"+clusterName]
	if c == nil || c.pools[name] == nil {
		return nil, false
	}
	raw, _ := json.Marshal(c.pools[name])
	out := &container.NodePool{}
	_ = json.Unmarshal(raw, out)
	return out, true
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	path := strings.TrimPrefix(r.URL.Path, "/v1/")
	action, h := s.route(r.Method, path)
	if h == nil {
		apiError(w, http.StatusNotFound, "NOT_FOUND", "no such method: "+r.Method+" "+r.URL.Path)
		return
	}
	s.Handle(w, r, action, wire, h)
}

// route maps a method and resource path to an action and its handler.
func (s *Server) route(method, path string) (string, http.HandlerFunc) {
	parts := strings.Split(path, "/")
	if len(parts) < 4 || parts[0] != "projects" || parts[2] != "locations" {
		return "", nil
	}
	parent := strings.Join(parts[:4], "/")
	rest := parts[4:]
	switch {
	case len(rest) == 1 && rest[0] == "operations" && method == http.MethodGet:
		return ListOperations, func(w http.ResponseWriter, r *http.Request) { s.listOperations(w, parent) }
	case len(rest) == 2 && rest[0] == "operations" && method == http.MethodGet:
		return GetOperation, func(w http.ResponseWriter, r *http.Request) { s.getOperation(w, parent+"/operations/"+rest[1]) }
	case len(rest) >= 2 && rest[0] == "clusters":
	default:
		return "", nil
	}
	name, verb, _ := strings.Cut(rest[1], ":")
	clusterName := parent + "/clusters/" + name
	// in is h on the cluster clusterName.
	in := func(h func(w http.ResponseWriter, r *http.Request, c *cluster)) http.HandlerFunc {
		return cloudtest.InCluster(func(w http.ResponseWriter, _ *http.Request) *cluster { return s.cluster(w, clusterName) }, h)
	}
	switch {
	case len(rest) == 2 && verb == "" && method == http.MethodGet:
		return GetCluster, in(func(w http.ResponseWriter, _ *http.Request, c *cluster) { writeJSON(w, http.StatusOK, c.c) })
	case len(rest) == 2 && verb == "updateMaster" && method == http.MethodPost:
		return UpdateMaster, in(func(w http.ResponseWriter, r *http.Request, c *cluster) { s.updateMaster(w, r, c, clusterName) })
	case len(rest) == 3 && verb == "" && rest[2] == "nodePools" && method == http.MethodGet:
		return ListNodePools, in(func(w http.ResponseWriter, _ *http.Request, c *cluster) { s.listNodePools(w, c) })
	case len(rest) == 3 && verb == "" && rest[2] == "nodePools" && method == http.MethodPost:
		return CreateNodePool, in(func(w http.ResponseWriter, r *http.Request, c *cluster) { s.createNodePool(w, r, c, clusterName) })
	case len(rest) == 4 && verb == "" && rest[2] == "nodePools":
		pool := rest[3]
		switch method {
		case http.MethodGet:
			return GetNodePool, in(func(w http.ResponseWriter, _ *http.Request, c *cluster) { s.getNodePool(w, c, clusterName, pool) })
		case http.MethodPut:
			return UpdateNodePool, in(func(w http.ResponseWriter, r *http.Request, c *cluster) { s.updateNodePool(w, r, c, clusterName, pool) })
		case http.MethodDelete:
			return DeleteNodePool, in(func(w http.ResponseWriter, _ *http.Request, c *cluster) { s.deleteNodePool(w, c, clusterName, pool) })
		}
	}
	return "", nil
}

func (s *Server) cluster(w http.ResponseWriter, name string) *cluster {
	c := s.clusters[name]
	if c == nil {
		apiError(w, http.StatusNotFound, "NOT_FOUND", fmt.Sprintf("Not found: %s.", name))
	}
	return c
}

func (s *Server) pool(w http.ResponseWriter, c *cluster, clusterName, name string) *container.NodePool {
	np := c.pools[name]
	if np == nil {
		apiError(w, http.StatusNotFound, "NOT_FOUND", fmt.Sprintf("Not found: %s/nodePools/%s.", clusterName, name))
	}
	return np
}

// busy answers FAILED_PRECONDITION when an operation holds the target (or
// the whole cluster, for master upgrades).
func (s *Server) busy(w http.ResponseWriter, clusterName, target string) bool {
	for _, o := range s.ops {
		if o.op.Status == "DONE" {
			continue
		}
		link := strings.TrimPrefix(o.op.TargetLink, "https://container.googleapis.com/v1/")
		if link == target || link == clusterName || target == clusterName && strings.HasPrefix(link, clusterName+"/") {
			apiError(w, http.StatusBadRequest, "FAILED_PRECONDITION",
				fmt.Sprintf("Cluster is running incompatible operation %s. Please wait and try again once it is done.", o.op.Name))
			return true
		}
	}
	return false
}

func (s *Server) newOperation(parent, opType, target string, finish func(failed bool)) *container.Operation {
	s.nextID++
	name := fmt.Sprintf("operation-%d-%08x", 1767225600000+s.nextID, s.nextID*2654435761%(1<<32))
	op := &container.Operation{
		Name: name, OperationType: opType, Status: "RUNNING",
		Location: strings.Split(parent, "/")[3], Zone: strings.Split(parent, "/")[3],
		SelfLink: selfLink(parent + "/operations/" + name), TargetLink: selfLink(target),
		StartTime: time.Now().UTC().Format(time.RFC3339Nano),
	}
	o := &operation{op: op, parent: parent, finish: finish}
	o.fail = s.OperationFails()
	s.ops[parent+"/operations/"+name] = o
	return op
}

func (s *Server) updateMaster(w http.ResponseWriter, r *http.Request, c *cluster, clusterName string) {
	var in container.UpdateMasterRequest
	if !readJSON(w, r, &in) {
		return
	}
	if s.busy(w, clusterName, clusterName) {
		return
	}
	version := resolve(in.MasterVersion, c.c.CurrentMasterVersion)
	cm, cn, _ := cloud.MajorMinor(c.c.CurrentMasterVersion)
	tm, tn, ok := cloud.MajorMinor(version)
	if !ok || tm != cm || tn < cn || tn > cn+1 {
		apiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", fmt.Sprintf("Master version %q is unsupported: upgrade one minor version at a time from %s.", in.MasterVersion, c.c.CurrentMasterVersion))
		return
	}
	c.c.Status = "RECONCILING"
	op := s.newOperation(parentOf(clusterName), "UPGRADE_MASTER", clusterName, func(failed bool) {
		if !failed {
			c.c.CurrentMasterVersion = version
		}
		c.c.Status = "RUNNING"
	})
	writeJSON(w, http.StatusOK, op)
}

func (s *Server) listNodePools(w http.ResponseWriter, c *cluster) {
	out := &container.ListNodePoolsResponse{}
	for _, n := range cloudtest.SortedKeys(c.pools, nil) {
		out.NodePools = append(out.NodePools, c.pools[n])
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getNodePool(w http.ResponseWriter, c *cluster, clusterName, name string) {
	if np := s.pool(w, c, clusterName, name); np != nil {
		writeJSON(w, http.StatusOK, np)
	}
}

func (s *Server) updateNodePool(w http.ResponseWriter, r *http.Request, c *cluster, clusterName, name string) {
	np := s.pool(w, c, clusterName, name)
	if np == nil {
		return
	}
	var in container.UpdateNodePoolRequest
	if !readJSON(w, r, &in) {
		return
	}
	target := clusterName + "/nodePools/" + name
	if s.busy(w, clusterName, target) {
		return
	}
	if in.ImageType == "" {
		apiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Required field imageType is not set.")
		return
	}
	version := resolve(in.NodeVersion, c.c.CurrentMasterVersion)
	if _, _, ok := cloud.MajorMinor(version); !ok {
		apiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", fmt.Sprintf("Node version %q is invalid.", in.NodeVersion))
		return
	}
	np.Status = "RECONCILING"
	op := s.newOperation(parentOf(clusterName), "UPGRADE_NODES", target, func(failed bool) {
		if failed {
			np.Status = "RUNNING_WITH_ERROR"
			return
		}
		np.Version, np.Status = version, "RUNNING"
		np.Config.ImageType = in.ImageType
		s.Notify(poolEvent(c.c.Name, np, false))
	})
	writeJSON(w, http.StatusOK, op)
}

func (s *Server) createNodePool(w http.ResponseWriter, r *http.Request, c *cluster, clusterName string) {
	var in container.CreateNodePoolRequest
	if !readJSON(w, r, &in) {
		return
	}
	np := in.NodePool
	switch {
	case np == nil || np.Name == "":
		apiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Node pool name is required.")
		return
	case c.pools[np.Name] != nil:
		apiError(w, http.StatusConflict, "ALREADY_EXISTS", fmt.Sprintf("Already exists: %s/nodePools/%s.", clusterName, np.Name))
		return
	case np.InitialNodeCount < 0:
		apiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "initial_node_count must be non-negative.")
		return
	}
	if np.NetworkConfig != nil && np.NetworkConfig.CreatePodRange {
		apiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "create_pod_range is not supported here.")
		return
	}
	target := clusterName + "/nodePools/" + np.Name
	if s.busy(w, clusterName, target) {
		return
	}
	if np.Config == nil {
		np.Config = &container.NodeConfig{}
	}
	np.Config.MachineType = cmp.Or(np.Config.MachineType, "e2-medium")
	np.Config.ImageType = cmp.Or(np.Config.ImageType, "COS_CONTAINERD")
	for _, t := range np.Config.Taints {
		switch t.Effect {
		case "NO_SCHEDULE", "NO_EXECUTE", "PREFER_NO_SCHEDULE":
		default:
			apiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "invalid taint effect "+t.Effect)
			return
		}
	}
	np.Version = resolve(cmp.Or(np.Version, c.c.CurrentMasterVersion), c.c.CurrentMasterVersion)
	np.Status, np.SelfLink = "PROVISIONING", selfLink(target)
	c.pools[np.Name] = np
	op := s.newOperation(parentOf(clusterName), "CREATE_NODE_POOL", target, func(failed bool) {
		if failed {
			np.Status, np.StatusMessage = "ERROR", "simulated failure"
			return
		}
		np.Status = "RUNNING"
		s.Notify(poolEvent(c.c.Name, np, false))
	})
	writeJSON(w, http.StatusOK, op)
}

func (s *Server) deleteNodePool(w http.ResponseWriter, c *cluster, clusterName, name string) {
	np := s.pool(w, c, clusterName, name)
	if np == nil {
		return
	}
	target := clusterName + "/nodePools/" + name
	if s.busy(w, clusterName, target) {
		return
	}
	np.Status = "STOPPING"
	op := s.newOperation(parentOf(clusterName), "DELETE_NODE_POOL", target, func(failed bool) {
		if failed {
			np.Status = "ERROR"
			return
		}
		delete(c.pools, name)
		s.Notify(poolEvent(c.c.Name, np, true))
	})
	writeJSON(w, http.StatusOK, op)
}

func (s *Server) getOperation(w http.ResponseWriter, name string) {
	o := s.ops[name]
	if o == nil {
		apiError(w, http.StatusNotFound, "NOT_FOUND", fmt.Sprintf("Not found: %s.", name))
		return
	}
	if o.op.Status != "DONE" {
		o.polls++
		if o.polls >= s.Polls() {
			o.op.Status = "DONE"
			o.op.EndTime = time.Now().UTC().Format(time.RFC3339Nano)
			if o.fail {
				o.op.Error = &container.Status{Code: 13, Message: "Internal error: simulated failure of " + o.op.OperationType}
				o.op.StatusMessage = o.op.Error.Message
			}
			o.finish(o.fail)
		}
	}
	writeJSON(w, http.StatusOK, o.op)
}

func (s *Server) listOperations(w http.ResponseWriter, parent string) {
	out := &container.ListOperationsResponse{}
	for _, n := range cloudtest.SortedKeys(s.ops, func(o *operation) bool { return o.parent == parent }) {
		out.Operations = append(out.Operations, s.ops[n].op)
	}
	writeJSON(w, http.StatusOK, out)
}

// resolve turns a version alias into a full GKE version: "1.30" ->
// "1.30.4-gke.1200", "1.30.4" -> "1.30.4-gke.1200", "-" -> current.
func resolve(v, current string) string {
	v = strings.TrimPrefix(v, "v")
	switch {
	case v == "-" || v == "":
		return current
	case strings.Contains(v, "-gke."):
		return v
	case strings.Count(v, ".") == 1:
		return v + ".4-gke.1200"
	default:
		return v + "-gke.1200"
	}
}

func parentOf(clusterName string) string {
	return clusterName[:strings.Index(clusterName, "/clusters/")]
}

func selfLink(name string) string { return "https://container.googleapis.com/v1/" + name }

func apiError(w http.ResponseWriter, code int, status, msg string) {
	writeJSON(w, code, map[string]any{"error": map[string]any{
		"code": code, "message": msg, "status": status,
		"errors": []map[string]string{{"message": msg, "domain": "global", "reason": strings.ToLower(status)}},
	}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	cloudtest.WriteJSON(w, status, "application/json; charset=UTF-8", v)
}

func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	return cloudtest.ReadJSON(w, r, v, func(err error) {
		apiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid JSON payload received. "+err.Error())
	})
}

func poolEvent(clusterName string, np *container.NodePool, deleted bool) NodeGroupEvent {
	zones := int64(len(np.Locations))
	if zones == 0 {
		zones = 1
	}
	e := NodeGroupEvent{Cluster: clusterName, Name: np.Name, LabelValue: np.Name, Version: np.Version, Size: int32(np.InitialNodeCount * zones), Deleted: deleted}
	if np.Config != nil {
		e.Labels = np.Config.Labels
	}
	return e
}
