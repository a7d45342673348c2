// Package akstest is a fake Azure Resource Manager endpoint for
// Microsoft.ContainerService on 127.0.0.1 (TLS by default, as ARM), so the
// real armcontainerservice clients run against it: bearer-token
// authentication, api-version, JSON (de)serialisation, paging by
// nextLink, ETag preconditions, ARM error bodies, and the ARM long-running
// operation protocol (201/202 with Azure-AsyncOperation and Location
// headers, an operation-status resource polled until Succeeded or
// Failed, then the final GET of the resource). It keeps managed clusters,
// agent pools and operations in memory, finishes an operation after a few
// polls, and fails calls on demand.
//
// The SDK's own armcontainerservice/v8/fake package replaces the HTTP
// transport with in-process handlers, so its pollers never run ARM's
// polling protocol; this server does.
package akstest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v8"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/cloudtest"
)

// Calls the server answers, as used by Inject and Calls.
const (
	GetManagedCluster    = "managedClusters.get"
	PutManagedCluster    = "managedClusters.createOrUpdate"
	ListAgentPools       = "agentPools.list"
	GetAgentPool         = "agentPools.get"
	PutAgentPool         = "agentPools.createOrUpdate"
	DeleteAgentPool      = "agentPools.delete"
	GetOperationStatus   = "operations.get"
	GetOperationResult   = "operationResults.get"
	apiVersionPrefix     = "20"
	containerServiceType = "Microsoft.ContainerService"
)

// Cluster seeds a managed cluster.
type Cluster struct {
	SubscriptionID, ResourceGroup, Name string
	Location                            string
	// Version is the Kubernetes version ("1.29.9"; "1.29" is resolved to
	// a patch).
	Version    string
	AgentPools []AgentPool
}

// AgentPool seeds an agent pool.
type AgentPool struct {
	Name     string
	Version  string
	Count    int32
	VMSize   string
	Mode     string // System | User (default User)
	Labels   map[string]string
	Taints   []string // "key=value:Effect"
	Zones    []string
	SubnetID string
	MaxPods  int32
	// Autoscaling when MaxCount > 0.
	MinCount, MaxCount int32
	OSDiskSizeGB       int32
	Tags               map[string]string
}

// NodeGroupEvent reports that a node group's Nodes changed (Server.OnNodeGroup).
type NodeGroupEvent = cloudtest.NodeGroupEvent

// faultAnswers are the answers to injected faults (Server.Inject).
var faultAnswers = cloudtest.Answers{
	cloudtest.Throttle: {Status: http.StatusTooManyRequests, Code: "TooManyRequests",
		Message: "The request is being throttled as the limit has been reached for operation type - Write_ObservationWindow_00:01:00."},
	cloudtest.ServerError: {Status: http.StatusServiceUnavailable, Code: "ServiceUnavailable", Message: "The service is temporarily unavailable."},
	cloudtest.Permanent:   {Status: http.StatusBadRequest, Code: "InvalidParameter", Message: "injected invalid parameter", ForAction: true},
}

// wire is how ARM refuses a request and answers an injected fault.
var wire = &cloudtest.Wire{
	Checks: []cloudtest.Check{
		cloudtest.Credentials("Bearer ",
			cloudtest.Answer{Status: http.StatusUnauthorized, Code: "AuthenticationFailed", Message: "Authentication failed. The 'Authorization' header is missing."}),
		func(r *http.Request, _ string) (cloudtest.Answer, bool) {
			return cloudtest.Answer{Status: http.StatusBadRequest, Code: "MissingApiVersionParameter",
				Message: "The api-version query parameter (?api-version=) is required for all requests."}, !strings.HasPrefix(r.URL.Query().Get("api-version"), apiVersionPrefix)
		},
	},
	Faults: faultAnswers,
	// ARM always sends a Retry-After with throttling: 1s unless set.
	Throttled: func(h http.Header, wait time.Duration) { cloudtest.RetryAfter(h, cmp.Or(wait, time.Second)) },
	Error:     armError,
}

// Server is the fake ARM endpoint.
type Server struct {
	// PageSize bounds list pages (default 1, so nextLink paging runs).
	PageSize int
	// Fake is the endpoint (URL: https://127.0.0.1:port, or http:// when
	// started with TLS off; Client; Close) and injects faults (Inject,
	// FailOperations): Throttle answers 429 TooManyRequests with
	// Retry-After (ARM sends one: SetRetryAfter's, default 1s);
	// ServerError answers 503 ServiceUnavailable; Permanent answers 400
	// InvalidParameter. It counts calls (Calls), reports node groups
	// (OnNodeGroup, NodeGroupEvents), and PollsToFinish is how many
	// observations (operation-status GETs or GETs of the target) finish an
	// operation (default 3).
	cloudtest.Fake

	mu       sync.Mutex
	clusters map[string]*cluster // by lower-cased resource id
	ops      map[string]*operation
	nextID   int
}

type cluster struct {
	sub, rg, location string
	mc                *armcontainerservice.ManagedCluster
	pools             map[string]*armcontainerservice.AgentPool
}

type operation struct {
	id, status string
	target     string // lower-cased resource id
	polls      int
	fail       bool
	started    time.Time
	ended      time.Time
	finish     func(failed bool)
}

// New starts a TLS server on 127.0.0.1 and closes it when the test ends.
func New(tb testing.TB) *Server { return cloudtest.CloseAtEnd(tb, NewServer(true)) }

// NewServer starts a server on 127.0.0.1, with TLS or plain http.
func NewServer(useTLS bool) *Server {
	s := &Server{clusters: map[string]*cluster{}, ops: map[string]*operation{}}
	s.Listen(http.HandlerFunc(s.serve), useTLS)
	return s
}

func clusterID(sub, rg, name string) string {
	return strings.ToLower("/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.ContainerService/managedClusters/" + name)
}

// AddCluster seeds (or replaces) a managed cluster.
func (s *Server) AddCluster(c Cluster) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := "/subscriptions/" + c.SubscriptionID + "/resourceGroups/" + c.ResourceGroup + "/providers/Microsoft.ContainerService/managedClusters/" + c.Name
	version := resolve(c.Version)
	st := &cluster{sub: c.SubscriptionID, rg: c.ResourceGroup, location: cmp.Or(c.Location, "westeurope"), pools: map[string]*armcontainerservice.AgentPool{}}
	st.mc = &armcontainerservice.ManagedCluster{
		ID: to(id), Name: to(c.Name), Type: to(containerServiceType + "/managedClusters"), Location: to(st.location),
		Properties: &armcontainerservice.ManagedClusterProperties{
			KubernetesVersion: to(c.Version), CurrentKubernetesVersion: to(version), ProvisioningState: to("Succeeded"),
			DNSPrefix: to(c.Name + "-dns"), EnableRBAC: to(true),
		},
	}
	s.bump(st.mc)
	for _, p := range c.AgentPools {
		ap := &armcontainerservice.AgentPool{
			ID: to(id + "/agentPools/" + p.Name), Name: to(p.Name), Type: to(containerServiceType + "/managedClusters/agentPools"),
			Properties: &armcontainerservice.ManagedClusterAgentPoolProfileProperties{
				Count: to(p.Count), VMSize: to(p.VMSize), Mode: to(armcontainerservice.AgentPoolMode(cmp.Or(p.Mode, "User"))),
				OrchestratorVersion: to(cmp.Or(p.Version, c.Version)), CurrentOrchestratorVersion: to(resolve(cmp.Or(p.Version, c.Version))),
				ProvisioningState: to("Succeeded"), OSType: to(armcontainerservice.OSTypeLinux), OSSKU: to(armcontainerservice.OSSKUUbuntu),
				Type: to(armcontainerservice.AgentPoolTypeVirtualMachineScaleSets), NodeImageVersion: to("AKSUbuntu-2204gen2containerd-202601.01.0"),
				PowerState: &armcontainerservice.PowerState{Code: to(armcontainerservice.CodeRunning)},
			},
		}
		pr := ap.Properties
		if len(p.Labels) > 0 {
			pr.NodeLabels = map[string]*string{}
			for k, v := range p.Labels {
				pr.NodeLabels[k] = to(v)
			}
		}
		for _, t := range p.Taints {
			pr.NodeTaints = append(pr.NodeTaints, to(t))
		}
		for _, z := range p.Zones {
			pr.AvailabilityZones = append(pr.AvailabilityZones, to(z))
		}
		if p.SubnetID != "" {
			pr.VnetSubnetID = to(p.SubnetID)
		}
		if p.MaxPods != 0 {
			pr.MaxPods = to(p.MaxPods)
		}
		if p.OSDiskSizeGB != 0 {
			pr.OSDiskSizeGB = to(p.OSDiskSizeGB)
		}
		if p.MaxCount > 0 {
			pr.EnableAutoScaling, pr.MinCount, pr.MaxCount = to(true), to(p.MinCount), to(p.MaxCount)
		}
		if len(p.Tags) > 0 {
			pr.Tags = map[string]*string{}
			for k, v := range p.Tags {
				pr.Tags[k] = to(v)
			}
		}
		s.bumpPool(ap)
		st.pools[strings.ToLower(p.Name)] = ap
		s.Notify(poolEvent(c.Name, ap, false))
	}
	s.clusters[clusterID(c.SubscriptionID, c.ResourceGroup, c.Name)] = st
}

// AgentPool returns a copy of an agent pool as the server holds it.
func (s *Server) AgentPool(sub, rg, clusterName, name string) (*armcontainerservice.AgentPool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clusters[clusterID(sub, rg, clusterName)]
	if c == nil || c.pools[strings.ToLower(name)] == nil {
		return nil, false
	}
	raw, _ := json.Marshal(c.pools[strings.ToLower(name)])
	out := &armcontainerservice.AgentPool{}
	_ = json.Unmarshal(raw, out)
	return out, true
}

func (s *Server) bump(mc *armcontainerservice.ManagedCluster) {
	s.nextID++
	mc.ETag = to(fmt.Sprintf("\"%08x-etag\"", s.nextID))
}

func (s *Server) bumpPool(ap *armcontainerservice.AgentPool) {
	s.nextID++
	ap.Properties.ETag = to(fmt.Sprintf("\"%08x-etag\"", s.nextID))
}

var (
	clusterPath = regexp.MustCompile(`(?i)^/subscriptions/([^/]+)/resourcegroups/([^/]+)/providers/microsoft\.containerservice/managedclusters/([^/]+)(/agentpools(?:/([^/]+))?)?$`)
	opPath      = regexp.MustCompile(`(?i)^/subscriptions/([^/]+)/providers/microsoft\.containerservice/locations/([^/]+)/(operations|operationresults)/([^/]+)$`)
)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	action, h := s.route(r)
	if h == nil {
		armError(w, http.StatusNotFound, "InvalidResourceType", "no route for "+r.Method+" "+r.URL.Path)
		return
	}
	s.Handle(w, r, action, wire, h)
}

func (s *Server) route(r *http.Request) (string, http.HandlerFunc) {
	if m := opPath.FindStringSubmatch(r.URL.Path); m != nil && r.Method == http.MethodGet {
		if strings.EqualFold(m[3], "operations") {
			return GetOperationStatus, func(w http.ResponseWriter, r *http.Request) { s.operationStatus(w, m[4]) }
		}
		return GetOperationResult, func(w http.ResponseWriter, r *http.Request) { s.operationResult(w, r, m[4]) }
	}
	m := clusterPath.FindStringSubmatch(r.URL.Path)
	if m == nil {
		return "", nil
	}
	id := clusterID(m[1], m[2], m[3])
	// in is h on the managed cluster id.
	in := func(h func(w http.ResponseWriter, r *http.Request, c *cluster)) http.HandlerFunc {
		return cloudtest.InCluster(func(w http.ResponseWriter, _ *http.Request) *cluster { return s.cluster(w, id) }, h)
	}
	switch {
	case m[4] == "" && r.Method == http.MethodGet:
		return GetManagedCluster, in(func(w http.ResponseWriter, _ *http.Request, c *cluster) { s.getCluster(w, c, id) })
	case m[4] == "" && r.Method == http.MethodPut:
		return PutManagedCluster, in(func(w http.ResponseWriter, r *http.Request, c *cluster) { s.putCluster(w, r, c, id) })
	case m[5] == "" && r.Method == http.MethodGet:
		return ListAgentPools, in(s.listPools)
	case m[5] != "" && r.Method == http.MethodGet:
		return GetAgentPool, in(func(w http.ResponseWriter, _ *http.Request, c *cluster) { s.getPool(w, c, id, m[5]) })
	case m[5] != "" && r.Method == http.MethodPut:
		return PutAgentPool, in(func(w http.ResponseWriter, r *http.Request, c *cluster) { s.putPool(w, r, c, id, m[5]) })
	case m[5] != "" && r.Method == http.MethodDelete:
		return DeleteAgentPool, in(func(w http.ResponseWriter, r *http.Request, c *cluster) { s.deletePool(w, r, c, id, m[5]) })
	}
	return "", nil
}

func (s *Server) cluster(w http.ResponseWriter, id string) *cluster {
	c := s.clusters[id]
	if c == nil {
		armError(w, http.StatusNotFound, "ResourceNotFound", fmt.Sprintf("The Resource '%s' was not found.", id[strings.LastIndex(id, "/")+1:]))
	}
	return c
}

// observe advances the running operation on a target: a GET of the
// resource counts as a poll, as time passing does in Azure.
func (s *Server) observe(target string) {
	for _, o := range s.ops {
		if o.target == target && o.status == "InProgress" {
			s.advance(o)
		}
	}
}

func (s *Server) advance(o *operation) {
	if o.status != "InProgress" {
		return
	}
	o.polls++
	if o.polls < s.Polls() {
		return
	}
	o.ended = time.Now().UTC()
	if o.fail {
		o.status = "Failed"
	} else {
		o.status = "Succeeded"
	}
	o.finish(o.fail)
}

func (s *Server) running(target string) *operation {
	for _, o := range s.ops {
		if o.target == target && o.status == "InProgress" {
			return o
		}
	}
	return nil
}

func (s *Server) newOperation(c *cluster, target string, finish func(failed bool)) *operation {
	s.nextID++
	o := &operation{id: fmt.Sprintf("%08x-0000-4000-8000-%012x", s.nextID, s.nextID), status: "InProgress", target: target, started: time.Now().UTC(), finish: finish}
	o.fail = s.OperationFails()
	s.ops[o.id] = o
	return o
}

func (s *Server) lroHeaders(w http.ResponseWriter, c *cluster, o *operation, location bool) {
	base := s.URL + "/subscriptions/" + c.sub + "/providers/Microsoft.ContainerService/locations/" + c.location
	w.Header().Set("Azure-AsyncOperation", base+"/operations/"+o.id+"?api-version=2025-10-01")
	if location {
		w.Header().Set("Location", base+"/operationresults/"+o.id+"?api-version=2025-10-01")
	}
}

func (s *Server) getCluster(w http.ResponseWriter, c *cluster, id string) {
	s.observe(id)
	writeJSON(w, http.StatusOK, c.mc)
}

func (s *Server) putCluster(w http.ResponseWriter, r *http.Request, c *cluster, id string) {
	var in armcontainerservice.ManagedCluster
	if !readJSON(w, r, &in) || !ifMatch(w, r, c.mc.ETag) {
		return
	}
	if in.Properties == nil || in.Properties.KubernetesVersion == nil {
		armError(w, http.StatusBadRequest, "InvalidParameter", "properties.kubernetesVersion is required")
		return
	}
	if s.running(id) != nil || busy(c.mc.Properties.ProvisioningState) {
		armError(w, http.StatusConflict, "OperationNotAllowed", "Operation is not allowed because there's an in progress upgrade managed cluster operation.")
		return
	}
	want := *in.Properties.KubernetesVersion
	target := resolve(want)
	current := *c.mc.Properties.CurrentKubernetesVersion
	if target == current {
		c.mc.Properties.KubernetesVersion = to(want)
		s.bump(c.mc)
		writeJSON(w, http.StatusOK, c.mc)
		return
	}
	cm, cn, _ := cloud.MajorMinor(current)
	tm, tn, ok := cloud.MajorMinor(target)
	if !ok || tm != cm || tn < cn || tn > cn+1 {
		armError(w, http.StatusBadRequest, "UpgradeNotAllowed", fmt.Sprintf("Upgrading from %s to %s is not allowed: upgrade one minor version at a time.", current, want))
		return
	}
	c.mc.Properties.KubernetesVersion = to(want)
	c.mc.Properties.ProvisioningState = to("Upgrading")
	s.bump(c.mc)
	o := s.newOperation(c, id, func(failed bool) {
		if failed {
			c.mc.Properties.ProvisioningState = to("Failed")
		} else {
			c.mc.Properties.CurrentKubernetesVersion = to(target)
			c.mc.Properties.ProvisioningState = to("Succeeded")
		}
		s.bump(c.mc)
	})
	s.lroHeaders(w, c, o, false)
	writeJSON(w, http.StatusOK, c.mc)
}

func (s *Server) listPools(w http.ResponseWriter, r *http.Request, c *cluster) {
	names, next, ok := cloudtest.Page(cloudtest.SortedKeys(c.pools, nil), r.URL.Query().Get("$skipToken"), "", s.PageSize)
	if !ok {
		armError(w, http.StatusBadRequest, "InvalidSkipToken", "invalid $skipToken")
		return
	}
	page := struct {
		Value    []*armcontainerservice.AgentPool `json:"value"`
		NextLink *string                          `json:"nextLink,omitempty"`
	}{Value: []*armcontainerservice.AgentPool{}}
	for _, n := range names {
		page.Value = append(page.Value, c.pools[n])
	}
	if next != "" {
		page.NextLink = to(s.URL + r.URL.Path + "?api-version=" + r.URL.Query().Get("api-version") + "&$skipToken=" + next)
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) getPool(w http.ResponseWriter, c *cluster, id, name string) {
	target := id + "/agentpools/" + strings.ToLower(name)
	s.observe(target)
	ap := c.pools[strings.ToLower(name)]
	if ap == nil {
		armError(w, http.StatusNotFound, "NotFound", fmt.Sprintf("Agent pool %s was not found.", name))
		return
	}
	writeJSON(w, http.StatusOK, ap)
}

var poolName = regexp.MustCompile(`^[a-z][a-z0-9]{0,11}$`)

func (s *Server) putPool(w http.ResponseWriter, r *http.Request, c *cluster, id, name string) {
	var in armcontainerservice.AgentPool
	if !readJSON(w, r, &in) {
		return
	}
	key := strings.ToLower(name)
	target := id + "/agentpools/" + key
	existing := c.pools[key]
	if r.Header.Get("If-None-Match") == "*" && existing != nil {
		armError(w, http.StatusPreconditionFailed, "PreconditionFailed", fmt.Sprintf("Agent pool %s already exists.", name))
		return
	}
	if existing != nil && !ifMatch(w, r, existing.Properties.ETag) {
		return
	}
	if existing == nil && r.Header.Get("If-Match") != "" {
		armError(w, http.StatusPreconditionFailed, "PreconditionFailed", fmt.Sprintf("Agent pool %s does not exist.", name))
		return
	}
	pr := in.Properties
	if pr == nil {
		armError(w, http.StatusBadRequest, "InvalidParameter", "properties are required")
		return
	}
	for _, t := range pr.NodeTaints {
		if !validTaint(deref(t)) {
			armError(w, http.StatusBadRequest, "InvalidParameter", fmt.Sprintf("Taint %q is invalid: expected key=value:Effect.", deref(t)))
			return
		}
	}
	if deref(pr.Count) < 0 || (deref(pr.EnableAutoScaling) && (pr.MinCount == nil || pr.MaxCount == nil || *pr.MinCount > *pr.MaxCount)) {
		armError(w, http.StatusBadRequest, "InvalidParameter", "count, minCount and maxCount are inconsistent")
		return
	}
	if s.running(target) != nil || s.running(id) != nil || (existing != nil && busy(existing.Properties.ProvisioningState)) {
		armError(w, http.StatusConflict, "OperationNotAllowed", "Operation is not allowed because there's an in progress operation on the agent pool.")
		return
	}
	if existing == nil {
		if !poolName.MatchString(name) {
			armError(w, http.StatusBadRequest, "InvalidParameter", fmt.Sprintf("The agent pool name %q is invalid: lowercase letters and digits, at most 12, starting with a letter.", name))
			return
		}
		if deref(pr.VMSize) == "" {
			armError(w, http.StatusBadRequest, "InvalidParameter", "properties.vmSize is required")
			return
		}
		version := cmp.Or(deref(pr.OrchestratorVersion), deref(c.mc.Properties.KubernetesVersion))
		ap := &armcontainerservice.AgentPool{ID: to(deref(c.mc.ID) + "/agentPools/" + name), Name: to(name), Type: to(containerServiceType + "/managedClusters/agentPools"), Properties: pr}
		pr.OrchestratorVersion, pr.CurrentOrchestratorVersion = to(version), nil
		pr.ProvisioningState, pr.NodeImageVersion = to("Creating"), to("AKSUbuntu-2204gen2containerd-202601.01.0")
		s.bumpPool(ap)
		c.pools[key] = ap
		o := s.newOperation(c, target, func(failed bool) {
			if failed {
				pr.ProvisioningState = to("Failed")
				return
			}
			pr.ProvisioningState, pr.CurrentOrchestratorVersion = to("Succeeded"), to(resolve(version))
			pr.PowerState = &armcontainerservice.PowerState{Code: to(armcontainerservice.CodeRunning)}
			s.bumpPool(ap)
			s.Notify(poolEvent(deref(c.mc.Name), ap, false))
		})
		s.lroHeaders(w, c, o, false)
		writeJSON(w, http.StatusCreated, ap)
		return
	}
	// Update: the version moves when the operation finishes; the other
	// writable properties change now.
	old := existing.Properties
	want := cmp.Or(deref(pr.OrchestratorVersion), deref(old.OrchestratorVersion))
	target2 := resolve(want)
	cm, cn, _ := cloud.MajorMinor(deref(old.CurrentOrchestratorVersion))
	tm, tn, ok := cloud.MajorMinor(target2)
	if !ok || tm != cm || tn < cn {
		armError(w, http.StatusBadRequest, "InvalidParameter", fmt.Sprintf("Orchestrator version %s is invalid for agent pool %s at %s.", want, name, deref(old.CurrentOrchestratorVersion)))
		return
	}
	pr.CurrentOrchestratorVersion, pr.NodeImageVersion, pr.PowerState = old.CurrentOrchestratorVersion, old.NodeImageVersion, old.PowerState
	pr.OrchestratorVersion = to(want)
	pr.ProvisioningState = to("Upgrading")
	existing.Properties = pr
	s.bumpPool(existing)
	o := s.newOperation(c, target, func(failed bool) {
		if failed {
			pr.ProvisioningState = to("Failed")
			return
		}
		pr.ProvisioningState, pr.CurrentOrchestratorVersion = to("Succeeded"), to(target2)
		s.bumpPool(existing)
		s.Notify(poolEvent(deref(c.mc.Name), existing, false))
	})
	s.lroHeaders(w, c, o, false)
	writeJSON(w, http.StatusOK, existing)
}

func (s *Server) deletePool(w http.ResponseWriter, r *http.Request, c *cluster, id, name string) {
	key := strings.ToLower(name)
	target := id + "/agentpools/" + key
	ap := c.pools[key]
	if ap == nil {
		w.WriteHeader(http.StatusNoContent) // ARM: deleting nothing succeeds
		return
	}
	if !ifMatch(w, r, ap.Properties.ETag) {
		return
	}
	if s.running(target) != nil {
		armError(w, http.StatusConflict, "OperationNotAllowed", "Operation is not allowed because there's an in progress operation on the agent pool.")
		return
	}
	ap.Properties.ProvisioningState = to("Deleting")
	o := s.newOperation(c, target, func(failed bool) {
		if failed {
			ap.Properties.ProvisioningState = to("Failed")
			return
		}
		delete(c.pools, key)
		s.Notify(poolEvent(deref(c.mc.Name), ap, true))
	})
	s.lroHeaders(w, c, o, true)
	w.Header().Set("Retry-After", "0")
	w.WriteHeader(http.StatusAccepted)
}

func (s *Server) operationStatus(w http.ResponseWriter, id string) {
	o := s.ops[id]
	if o == nil {
		armError(w, http.StatusNotFound, "NotFound", "operation "+id+" not found")
		return
	}
	s.advance(o)
	body := map[string]any{"id": "/providers/Microsoft.ContainerService/locations/operations/" + o.id, "name": o.id, "status": o.status,
		"startTime": o.started.Format(time.RFC3339Nano)}
	if !o.ended.IsZero() {
		body["endTime"] = o.ended.Format(time.RFC3339Nano)
	}
	if o.status == "Failed" {
		body["error"] = map[string]string{"code": "ReconcileVMSSAgentPoolFailed", "message": "Simulated failure of the operation on " + o.target[strings.LastIndex(o.target, "/")+1:] + "."}
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) operationResult(w http.ResponseWriter, r *http.Request, id string) {
	o := s.ops[id]
	if o == nil {
		armError(w, http.StatusNotFound, "NotFound", "operation "+id+" not found")
		return
	}
	s.advance(o)
	switch o.status {
	case "InProgress":
		w.Header().Set("Location", s.URL+r.URL.RequestURI())
		w.WriteHeader(http.StatusAccepted)
	case "Failed":
		armError(w, http.StatusInternalServerError, "ReconcileVMSSAgentPoolFailed", "Simulated failure.")
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func ifMatch(w http.ResponseWriter, r *http.Request, etag *string) bool {
	want := r.Header.Get("If-Match")
	if want == "" || want == "*" || (etag != nil && want == *etag) {
		return true
	}
	armError(w, http.StatusPreconditionFailed, "PreconditionFailed", "Operation failed as the provided If-Match header does not match the current ETag of the resource.")
	return false
}

func busy(state *string) bool {
	switch deref(state) {
	case "", "Succeeded", "Failed", "Canceled":
		return false
	}
	return true
}

var taintRE = regexp.MustCompile(`^[A-Za-z0-9./_-]+(=[A-Za-z0-9._-]*)?:(NoSchedule|PreferNoSchedule|NoExecute)$`)

func validTaint(t string) bool { return taintRE.MatchString(t) }

// resolve turns "1.30" into the patch the fake offers ("1.30.6").
func resolve(v string) string {
	v = strings.TrimPrefix(v, "v")
	if strings.Count(v, ".") == 1 {
		return v + ".6"
	}
	return v
}

func armError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("x-ms-error-code", code)
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	cloudtest.WriteJSON(w, status, "application/json; charset=utf-8", v)
}

func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	return cloudtest.ReadJSON(w, r, v, func(err error) {
		armError(w, http.StatusBadRequest, "InvalidRequestContent", "The request content was invalid and could not be deserialized: "+err.Error())
	})
}

func to[T any](v T) *T { return &v }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func poolEvent(clusterName string, ap *armcontainerservice.AgentPool, deleted bool) NodeGroupEvent {
	pr := ap.Properties
	e := NodeGroupEvent{Cluster: clusterName, Name: deref(ap.Name), LabelValue: deref(ap.Name), Deleted: deleted,
		Version: deref(pr.CurrentOrchestratorVersion), Size: deref(pr.Count)}
	if len(pr.NodeLabels) > 0 {
		e.Labels = map[string]string{}
		for k, v := range pr.NodeLabels {
			e.Labels[k] = deref(v)
		}
	}
	return e
}
