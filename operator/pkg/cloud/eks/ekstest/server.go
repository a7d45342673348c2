// Package ekstest is a fake Amazon EKS endpoint on 127.0.0.1 that speaks
// the EKS REST-JSON wire protocol (paths, JSON bodies, X-Amzn-ErrorType
// errors, SigV4 Authorization header), so the real aws-sdk-go-v2 EKS client
// runs against it. It keeps clusters, node groups, addons and updates in
// memory, finishes long operations after a few polls, honours
// ClientRequestToken like EKS, and fails calls on demand.
//
// It is test code shared by the eks provider's tests and by operator-level
// tests that run a ClusterUpgradeOperation against EKS.
package ekstest

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud/cloudtest"
)

// EKS API operations the server answers, as used by Inject and Calls.
const (
	DescribeCluster        = "DescribeCluster"
	UpdateClusterVersion   = "UpdateClusterVersion"
	DescribeUpdate         = "DescribeUpdate"
	ListNodegroups         = "ListNodegroups"
	DescribeNodegroup      = "DescribeNodegroup"
	UpdateNodegroupVersion = "UpdateNodegroupVersion"
	CreateNodegroup        = "CreateNodegroup"
	DeleteNodegroup        = "DeleteNodegroup"
	ListAddons             = "ListAddons"
	DescribeAddon          = "DescribeAddon"
	DescribeAddonVersions  = "DescribeAddonVersions"
	UpdateAddon            = "UpdateAddon"
)

// Cluster seeds a cluster.
type Cluster struct {
	Name string
	// Region is where the cluster lives: requests signed for another
	// region do not see it. Empty: every region.
	Region     string
	Version    string
	NodeGroups []NodeGroup
	Addons     []Addon
}

// NodeGroup seeds a managed node group.
type NodeGroup struct {
	Name                 string
	Version              string
	DesiredSize          int32
	MinSize              int32
	MaxSize              int32
	InstanceTypes        []string
	Labels               map[string]string
	Taints               []Taint
	Subnets              []string
	NodeRole             string
	AMIType              string
	CapacityType         string
	DiskSize             int32
	LaunchTemplateID     string
	LaunchTemplateName   string
	LaunchTemplateVer    string
	Tags                 map[string]string
	RemoteAccessSSHKey   string
	UpdateMaxUnavailable int32
}

// Taint is an EKS taint (effect NO_SCHEDULE, NO_EXECUTE, PREFER_NO_SCHEDULE).
type Taint struct{ Key, Value, Effect string }

// Addon seeds an addon: its installed version and the versions it offers.
type Addon struct {
	Name     string
	Version  string
	Versions []string
	// Compatible lists, per Kubernetes minor (1.30), the versions
	// DescribeAddonVersions reports for it; a minor not listed gets
	// Versions.
	Compatible map[string][]string
}

// NodeGroupEvent reports that a node group's Nodes changed (Server.OnNodeGroup).
type NodeGroupEvent = cloudtest.NodeGroupEvent

// faultAnswers are the answers to injected faults (Server.Inject).
var faultAnswers = cloudtest.Answers{
	cloudtest.Throttle:    {Status: http.StatusTooManyRequests, Code: "ThrottlingException", Message: "Rate exceeded"},
	cloudtest.ServerError: {Status: http.StatusInternalServerError, Code: "ServerException", Message: "An internal error occurred"},
	cloudtest.Permanent:   {Status: http.StatusBadRequest, Code: "InvalidParameterException", Message: "injected invalid parameter", ForAction: true},
}

// wire is how EKS refuses a request and answers an injected fault.
var wire = &cloudtest.Wire{
	Checks: []cloudtest.Check{cloudtest.Credentials("AWS4-HMAC-SHA256 Credential=",
		cloudtest.Answer{Status: http.StatusForbidden, Code: "MissingAuthenticationTokenException", Message: "Missing Authentication Token"})},
	Faults: faultAnswers,
	Error:  apiError,
}

// Server is the fake EKS endpoint.
type Server struct {
	// PageSize bounds list pages (default 1, so pagination always runs).
	PageSize int
	// Fake is the endpoint (URL, Close) and injects faults (Inject,
	// FailOperations): Throttle answers 429 ThrottlingException (with
	// Retry-After when SetRetryAfter set one; EKS itself sends none);
	// ServerError answers 500 ServerException; Permanent answers 400
	// InvalidParameterException. It counts calls (Calls), reports node
	// groups (OnNodeGroup, NodeGroupEvents), and PollsToFinish is how many
	// reads of a running operation finish it (default 3).
	cloudtest.Fake

	mu       sync.Mutex
	clusters map[string]*cluster
	nextID   int
	now      func() time.Time
}

type cluster struct {
	name, region, version, status string
	groups                        map[string]*nodegroup
	addons                        map[string]*addon
	updates                       map[string]*update
	tokens                        map[string]string // action|target|token -> update id or group name
}

type nodegroup struct {
	wire      wireNodegroup
	token     string
	countdown int // reads left until CREATING/DELETING ends
	fail      bool
}

type addon struct {
	name, version, status string
	versions              []string
	compatible            map[string][]string
}

type update struct {
	wire               wireUpdate
	target, targetKind string // "", "nodegroup", "addon"
	version            string
	polls              int
	fail               bool
}

// New starts a server on 127.0.0.1 and closes it when the test ends.
func New(tb testing.TB) *Server { return cloudtest.CloseAtEnd(tb, NewServer()) }

// NewServer starts a server on 127.0.0.1.
func NewServer() *Server {
	s := &Server{
		clusters: map[string]*cluster{},
		now:      time.Now,
	}
	mux := http.NewServeMux()
	// route serves a request of the cluster {name}.
	route := func(pattern, action string, h func(http.ResponseWriter, *http.Request, *cluster)) {
		mux.HandleFunc(pattern, s.wrap(action, cloudtest.InCluster(s.cluster, h)))
	}
	route("GET /clusters/{name}", DescribeCluster, s.describeCluster)
	route("POST /clusters/{name}/updates", UpdateClusterVersion, s.updateClusterVersion)
	route("GET /clusters/{name}/updates/{id}", DescribeUpdate, s.describeUpdate)
	route("GET /clusters/{name}/node-groups", ListNodegroups, s.listNodegroups)
	route("POST /clusters/{name}/node-groups", CreateNodegroup, s.createNodegroup)
	route("GET /clusters/{name}/node-groups/{ng}", DescribeNodegroup, s.describeNodegroup)
	route("DELETE /clusters/{name}/node-groups/{ng}", DeleteNodegroup, s.deleteNodegroup)
	route("POST /clusters/{name}/node-groups/{ng}/update-version", UpdateNodegroupVersion, s.updateNodegroupVersion)
	route("GET /clusters/{name}/addons", ListAddons, s.listAddons)
	route("GET /clusters/{name}/addons/{addon}", DescribeAddon, s.describeAddon)
	route("POST /clusters/{name}/addons/{addon}/update", UpdateAddon, s.updateAddon)
	mux.HandleFunc("GET /addons/supported-versions", s.wrap(DescribeAddonVersions, s.describeAddonVersions))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		apiError(w, http.StatusNotFound, "UnknownOperationException", "no such operation: "+r.Method+" "+r.URL.Path)
	})
	s.Listen(mux, false)
	return s
}

// AddCluster seeds (or replaces) a cluster.
func (s *Server) AddCluster(c Cluster) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &cluster{name: c.Name, region: c.Region, version: c.Version, status: "ACTIVE",
		groups: map[string]*nodegroup{}, addons: map[string]*addon{}, updates: map[string]*update{}, tokens: map[string]string{}}
	for _, g := range c.NodeGroups {
		st.groups[g.Name] = &nodegroup{wire: s.seedGroup(c, g)}
		s.Notify(groupEvent(st.groups[g.Name].wire, false))
	}
	for _, a := range c.Addons {
		st.addons[a.Name] = &addon{name: a.Name, version: a.Version, status: "ACTIVE", versions: append([]string(nil), a.Versions...), compatible: a.Compatible}
	}
	s.clusters[c.Name] = st
}

func (s *Server) seedGroup(c Cluster, g NodeGroup) wireNodegroup {
	v := g.Version
	if v == "" {
		v = c.Version
	}
	w := wireNodegroup{
		NodegroupName: g.Name, ClusterName: c.Name, Version: v, ReleaseVersion: v + ".20260101",
		NodegroupArn: "arn:aws:eks:" + c.Region + ":000000000000:nodegroup/" + c.Name + "/" + g.Name,
		Status:       "ACTIVE", CapacityType: cmp.Or(g.CapacityType, "ON_DEMAND"), AmiType: cmp.Or(g.AMIType, "AL2023_x86_64_STANDARD"),
		ScalingConfig: &wireScaling{MinSize: ptr(g.MinSize), MaxSize: ptr(g.MaxSize), DesiredSize: ptr(g.DesiredSize)},
		InstanceTypes: g.InstanceTypes, Subnets: g.Subnets, NodeRole: g.NodeRole, Labels: g.Labels, Tags: g.Tags,
		CreatedAt: epoch(s.now()),
	}
	for _, t := range g.Taints {
		w.Taints = append(w.Taints, wireTaint(t))
	}
	if g.DiskSize != 0 {
		w.DiskSize = ptr(g.DiskSize)
	}
	if g.LaunchTemplateID != "" || g.LaunchTemplateName != "" {
		w.LaunchTemplate = &wireLaunchTemplate{ID: g.LaunchTemplateID, Name: g.LaunchTemplateName, Version: g.LaunchTemplateVer}
	}
	if g.RemoteAccessSSHKey != "" {
		w.RemoteAccess = &wireRemoteAccess{EC2SSHKey: g.RemoteAccessSSHKey}
	}
	if g.UpdateMaxUnavailable != 0 {
		w.UpdateConfig = &wireUpdateConfig{MaxUnavailable: ptr(g.UpdateMaxUnavailable)}
	}
	return w
}

// NodeGroup returns a node group's state as the server holds it.
func (s *Server) NodeGroup(clusterName, name string) (NodeGroup, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clusters[clusterName]
	if c == nil || c.groups[name] == nil {
		return NodeGroup{}, false
	}
	w := c.groups[name].wire
	g := NodeGroup{Name: w.NodegroupName, Version: w.Version, InstanceTypes: w.InstanceTypes, Labels: w.Labels,
		Subnets: w.Subnets, NodeRole: w.NodeRole, AMIType: w.AmiType, CapacityType: w.CapacityType, Tags: w.Tags}
	if sc := w.ScalingConfig; sc != nil {
		g.DesiredSize, g.MinSize, g.MaxSize = deref(sc.DesiredSize), deref(sc.MinSize), deref(sc.MaxSize)
	}
	for _, t := range w.Taints {
		g.Taints = append(g.Taints, Taint(t))
	}
	if w.DiskSize != nil {
		g.DiskSize = *w.DiskSize
	}
	if lt := w.LaunchTemplate; lt != nil {
		g.LaunchTemplateID, g.LaunchTemplateName, g.LaunchTemplateVer = lt.ID, lt.Name, lt.Version
	}
	if w.RemoteAccess != nil {
		g.RemoteAccessSSHKey = w.RemoteAccess.EC2SSHKey
	}
	if w.UpdateConfig != nil {
		g.UpdateMaxUnavailable = deref(w.UpdateConfig.MaxUnavailable)
	}
	return g, true
}

// wrap serves a request of action under the lock (Fake.Handle: the SigV4
// Authorization header is checked, an injected fault answered).
func (s *Server) wrap(action string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.Handle(w, r, action, wire, h)
	}
}

// signedRegion reads the region of the SigV4 credential scope.
func signedRegion(r *http.Request) string {
	auth := r.Header.Get("Authorization")
	i := strings.Index(auth, "Credential=")
	if i < 0 {
		return ""
	}
	scope := strings.SplitN(auth[i+len("Credential="):], ",", 2)[0]
	parts := strings.Split(scope, "/")
	if len(parts) < 3 {
		return ""
	}
	return parts[2]
}

func (s *Server) cluster(w http.ResponseWriter, r *http.Request) *cluster {
	name := r.PathValue("name")
	c := s.clusters[name]
	if c == nil || (c.region != "" && c.region != signedRegion(r)) {
		apiError(w, http.StatusNotFound, "ResourceNotFoundException", fmt.Sprintf("No cluster found for name: %s.", name))
		return nil
	}
	return c
}

func (s *Server) describeCluster(w http.ResponseWriter, r *http.Request, c *cluster) {
	writeJSON(w, http.StatusOK, map[string]any{"cluster": map[string]any{
		"name": c.name, "arn": "arn:aws:eks:" + c.region + ":000000000000:cluster/" + c.name,
		"version": c.version, "status": c.status, "platformVersion": "eks.1", "createdAt": epoch(s.now()),
	}})
}

func (s *Server) newUpdate(c *cluster, typ, targetKind, target, version string, params []wireParam) *update {
	s.nextID++
	u := &update{
		wire: wireUpdate{ID: fmt.Sprintf("%08d-0000-4000-8000-%012d", s.nextID, s.nextID), Status: "InProgress", Type: typ,
			Params: params, CreatedAt: epoch(s.now()), Errors: []wireErrorDetail{}},
		target: target, targetKind: targetKind, version: version,
	}
	u.fail = s.OperationFails()
	c.updates[u.wire.ID] = u
	return u
}

// replayed answers a request repeating a known ClientRequestToken (key:
// action|target|token) with the update it started, as EKS does, and
// reports whether it did.
func replayed(w http.ResponseWriter, c *cluster, key, token string) bool {
	id, ok := c.tokens[key]
	if token == "" || !ok {
		return false
	}
	writeJSON(w, http.StatusOK, map[string]any{"update": c.updates[id].wire})
	return true
}

// started answers update u, remembering its ClientRequestToken (key:
// action|target|token) for replayed.
func started(w http.ResponseWriter, c *cluster, key, token string, u *update) {
	if token != "" {
		c.tokens[key] = u.wire.ID
	}
	writeJSON(w, http.StatusOK, map[string]any{"update": u.wire})
}

func (s *Server) updateClusterVersion(w http.ResponseWriter, r *http.Request, c *cluster) {
	var in struct {
		Version            string `json:"version"`
		ClientRequestToken string `json:"clientRequestToken"`
	}
	if !readJSON(w, r, &in) {
		return
	}
	key := UpdateClusterVersion + "|" + c.name + "|" + in.ClientRequestToken
	if replayed(w, c, key, in.ClientRequestToken) {
		return
	}
	if inProgress(c, "", "") != nil {
		apiError(w, http.StatusConflict, "ResourceInUseException", "Cluster already has an update in progress")
		return
	}
	if !cloudtest.NextMinor(c.version, in.Version) {
		apiError(w, http.StatusBadRequest, "InvalidParameterException",
			fmt.Sprintf("Unsupported Kubernetes minor version update from %s to %s", c.version, in.Version))
		return
	}
	u := s.newUpdate(c, "VersionUpdate", "", "", in.Version, []wireParam{{Type: "Version", Value: in.Version}, {Type: "PlatformVersion", Value: "eks.1"}})
	c.status = "UPDATING"
	started(w, c, key, in.ClientRequestToken, u)
}

func inProgress(c *cluster, kind, target string) *update {
	for _, u := range c.updates {
		if u.wire.Status == "InProgress" && u.targetKind == kind && u.target == target {
			return u
		}
	}
	return nil
}

func (s *Server) describeUpdate(w http.ResponseWriter, r *http.Request, c *cluster) {
	id := r.PathValue("id")
	u := c.updates[id]
	q := r.URL.Query()
	want := ""
	kind := ""
	if v := q.Get("nodegroupName"); v != "" {
		want, kind = v, "nodegroup"
	} else if v := q.Get("addonName"); v != "" {
		want, kind = v, "addon"
	}
	if u == nil || u.targetKind != kind || u.target != want {
		apiError(w, http.StatusNotFound, "ResourceNotFoundException", fmt.Sprintf("No update found for ID: %s", id))
		return
	}
	if u.wire.Status == "InProgress" {
		u.polls++
		if u.polls >= s.Polls() {
			s.finishUpdate(c, u)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"update": u.wire})
}

func (s *Server) finishUpdate(c *cluster, u *update) {
	if u.fail {
		u.wire.Status = "Failed"
		u.wire.Errors = []wireErrorDetail{{ErrorCode: "NodeCreationFailure", ErrorMessage: "simulated failure", ResourceIDs: []string{c.name}}}
	} else {
		u.wire.Status = "Successful"
	}
	switch u.targetKind {
	case "":
		if !u.fail {
			c.version = u.version
		}
		c.status = "ACTIVE"
	case "nodegroup":
		if g := c.groups[u.target]; g != nil {
			if !u.fail {
				g.wire.Version = u.version
				g.wire.ReleaseVersion = u.version + ".20260101"
				s.Notify(groupEvent(g.wire, false))
			}
			g.wire.Status = "ACTIVE"
		}
	case "addon":
		if a := c.addons[u.target]; a != nil {
			if !u.fail {
				a.version = u.version
			}
			a.status = "ACTIVE"
		}
	}
}

func (s *Server) listNodegroups(w http.ResponseWriter, r *http.Request, c *cluster) {
	s.listNames(w, r, "nodegroups", cloudtest.SortedKeys(c.groups, nil))
}

// listNames answers a page of names as member, with EKS's nextToken.
func (s *Server) listNames(w http.ResponseWriter, r *http.Request, member string, names []string) {
	page, next, ok := s.page(w, r, names)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{member: page, "nextToken": next})
}

// page cuts the page of all that EKS's maxResults and nextToken ("page-"
// and an offset) ask for (cloudtest.Page).
func (s *Server) page(w http.ResponseWriter, r *http.Request, all []string) ([]string, *string, bool) {
	size := max(s.PageSize, 1)
	if v := r.URL.Query().Get("maxResults"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n > 0 && n < size {
			size = n
		}
	}
	page, next, ok := cloudtest.Page(all, r.URL.Query().Get("nextToken"), "page-", size)
	if !ok {
		apiError(w, http.StatusBadRequest, "InvalidParameterException", "The nextToken is invalid")
		return nil, nil, false
	}
	if next == "" {
		return page, nil, true
	}
	return page, &next, true
}

func (s *Server) group(w http.ResponseWriter, r *http.Request, c *cluster) *nodegroup {
	name := r.PathValue("ng")
	g := c.groups[name]
	if g == nil {
		apiError(w, http.StatusNotFound, "ResourceNotFoundException", fmt.Sprintf("No node group found for name: %s.", name))
	}
	return g
}

func (s *Server) addon(w http.ResponseWriter, r *http.Request, c *cluster) *addon {
	a := c.addons[r.PathValue("addon")]
	if a == nil {
		apiError(w, http.StatusNotFound, "ResourceNotFoundException", fmt.Sprintf("No addon: %s found in cluster: %s", r.PathValue("addon"), c.name))
	}
	return a
}

func (s *Server) describeNodegroup(w http.ResponseWriter, r *http.Request, c *cluster) {
	g := s.group(w, r, c)
	if g == nil {
		return
	}
	switch g.wire.Status {
	case "CREATING":
		if g.countdown--; g.countdown <= 0 {
			if g.fail {
				g.wire.Status = "CREATE_FAILED"
				g.wire.Health = &wireHealth{Issues: []wireIssue{{Code: "NodeCreationFailure", Message: "simulated failure"}}}
			} else {
				g.wire.Status = "ACTIVE"
				s.Notify(groupEvent(g.wire, false))
			}
		}
	case "DELETING":
		if g.countdown--; g.countdown <= 0 {
			if g.fail {
				g.wire.Status = "DELETE_FAILED"
				g.wire.Health = &wireHealth{Issues: []wireIssue{{Code: "InternalFailure", Message: "simulated failure"}}}
			} else {
				delete(c.groups, g.wire.NodegroupName)
				s.Notify(groupEvent(g.wire, true))
				apiError(w, http.StatusNotFound, "ResourceNotFoundException", fmt.Sprintf("No node group found for name: %s.", g.wire.NodegroupName))
				return
			}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"nodegroup": g.wire})
}

func (s *Server) createNodegroup(w http.ResponseWriter, r *http.Request, c *cluster) {
	var in wireCreateNodegroup
	if !readJSON(w, r, &in) {
		return
	}
	if g := c.groups[in.NodegroupName]; g != nil {
		if in.ClientRequestToken != "" && g.token == in.ClientRequestToken {
			writeJSON(w, http.StatusOK, map[string]any{"nodegroup": g.wire})
			return
		}
		apiError(w, http.StatusConflict, "ResourceInUseException", fmt.Sprintf("NodeGroup already exists with name %s and cluster name %s", in.NodegroupName, c.name))
		return
	}
	switch {
	case in.NodegroupName == "":
		apiError(w, http.StatusBadRequest, "InvalidParameterException", "nodegroupName is required")
		return
	case in.NodeRole == "" || len(in.Subnets) == 0:
		apiError(w, http.StatusBadRequest, "InvalidParameterException", "nodeRole and subnets are required")
		return
	case in.LaunchTemplate != nil && in.DiskSize != nil:
		apiError(w, http.StatusBadRequest, "InvalidParameterException", "Disk size must be specified within the launch template.")
		return
	case in.LaunchTemplate != nil && in.RemoteAccess != nil:
		apiError(w, http.StatusBadRequest, "InvalidParameterException", "Remote access configuration cannot be specified with a launch template.")
		return
	case in.LaunchTemplate != nil && in.LaunchTemplate.ID != "" && in.LaunchTemplate.Name != "":
		apiError(w, http.StatusBadRequest, "InvalidParameterException", "Either launch template ID or launch template name must be specified, not both.")
		return
	case in.ScalingConfig == nil || in.ScalingConfig.DesiredSize == nil || deref(in.ScalingConfig.MaxSize) < 1 ||
		deref(in.ScalingConfig.DesiredSize) > deref(in.ScalingConfig.MaxSize) || deref(in.ScalingConfig.MinSize) > deref(in.ScalingConfig.DesiredSize):
		apiError(w, http.StatusBadRequest, "InvalidParameterException", "invalid scalingConfig")
		return
	}
	for _, t := range in.Taints {
		switch t.Effect {
		case "NO_SCHEDULE", "NO_EXECUTE", "PREFER_NO_SCHEDULE":
		default:
			apiError(w, http.StatusBadRequest, "InvalidParameterException", "invalid taint effect "+t.Effect)
			return
		}
	}
	version := in.Version
	if version == "" {
		version = c.version
	}
	g := &nodegroup{token: in.ClientRequestToken, countdown: s.Polls(), wire: wireNodegroup{
		NodegroupName: in.NodegroupName, ClusterName: c.name, Version: version, ReleaseVersion: version + ".20260101",
		NodegroupArn: "arn:aws:eks:" + c.region + ":000000000000:nodegroup/" + c.name + "/" + in.NodegroupName,
		Status:       "CREATING", CapacityType: cmp.Or(in.CapacityType, "ON_DEMAND"), AmiType: cmp.Or(in.AmiType, "AL2023_x86_64_STANDARD"),
		ScalingConfig: in.ScalingConfig, InstanceTypes: in.InstanceTypes, Subnets: in.Subnets, NodeRole: in.NodeRole,
		Labels: in.Labels, Taints: in.Taints, Tags: in.Tags, DiskSize: in.DiskSize, LaunchTemplate: in.LaunchTemplate,
		RemoteAccess: in.RemoteAccess, UpdateConfig: in.UpdateConfig, CreatedAt: epoch(s.now()),
	}}
	g.fail = s.OperationFails()
	c.groups[in.NodegroupName] = g
	writeJSON(w, http.StatusOK, map[string]any{"nodegroup": g.wire})
}

func (s *Server) deleteNodegroup(w http.ResponseWriter, r *http.Request, c *cluster) {
	g := s.group(w, r, c)
	if g == nil {
		return
	}
	if g.wire.Status == "DELETING" || g.wire.Status == "CREATING" || g.wire.Status == "UPDATING" {
		apiError(w, http.StatusConflict, "ResourceInUseException", fmt.Sprintf("Nodegroup %s is currently %s", g.wire.NodegroupName, g.wire.Status))
		return
	}
	g.wire.Status = "DELETING"
	g.countdown = s.Polls()
	g.fail = false
	g.fail = s.OperationFails()
	writeJSON(w, http.StatusOK, map[string]any{"nodegroup": g.wire})
}

func (s *Server) updateNodegroupVersion(w http.ResponseWriter, r *http.Request, c *cluster) {
	g := s.group(w, r, c)
	if g == nil {
		return
	}
	var in struct {
		Version            string `json:"version"`
		ReleaseVersion     string `json:"releaseVersion"`
		ClientRequestToken string `json:"clientRequestToken"`
	}
	if !readJSON(w, r, &in) {
		return
	}
	name := g.wire.NodegroupName
	key := UpdateNodegroupVersion + "|" + name + "|" + in.ClientRequestToken
	if replayed(w, c, key, in.ClientRequestToken) {
		return
	}
	if g.wire.Status != "ACTIVE" {
		apiError(w, http.StatusConflict, "ResourceInUseException", fmt.Sprintf("Nodegroup %s is currently %s", name, g.wire.Status))
		return
	}
	version := in.Version
	if version == "" {
		version = c.version
	}
	u := s.newUpdate(c, "VersionUpdate", "nodegroup", name, version, []wireParam{{Type: "Version", Value: version}, {Type: "ReleaseVersion", Value: version + ".20260101"}})
	g.wire.Status = "UPDATING"
	started(w, c, key, in.ClientRequestToken, u)
}

func (s *Server) listAddons(w http.ResponseWriter, r *http.Request, c *cluster) {
	s.listNames(w, r, "addons", cloudtest.SortedKeys(c.addons, nil))
}

func (s *Server) describeAddon(w http.ResponseWriter, r *http.Request, c *cluster) {
	a := s.addon(w, r, c)
	if a == nil {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"addon": map[string]any{
		"addonName": a.name, "clusterName": c.name, "status": a.status, "addonVersion": a.version,
		"addonArn": "arn:aws:eks:" + c.region + ":000000000000:addon/" + c.name + "/" + a.name, "createdAt": epoch(s.now()),
	}})
}

func (s *Server) updateAddon(w http.ResponseWriter, r *http.Request, c *cluster) {
	a := s.addon(w, r, c)
	if a == nil {
		return
	}
	var in struct {
		AddonVersion       string `json:"addonVersion"`
		ResolveConflicts   string `json:"resolveConflicts"`
		ClientRequestToken string `json:"clientRequestToken"`
	}
	if !readJSON(w, r, &in) {
		return
	}
	key := UpdateAddon + "|" + a.name + "|" + in.ClientRequestToken
	if replayed(w, c, key, in.ClientRequestToken) {
		return
	}
	switch in.ResolveConflicts {
	case "", "NONE", "OVERWRITE", "PRESERVE":
	default:
		apiError(w, http.StatusBadRequest, "InvalidParameterException", "invalid resolveConflicts "+in.ResolveConflicts)
		return
	}
	if !slices.Contains(a.versions, in.AddonVersion) {
		apiError(w, http.StatusBadRequest, "InvalidParameterException", fmt.Sprintf("Addon version %s is not supported for %s", in.AddonVersion, a.name))
		return
	}
	if inProgress(c, "addon", a.name) != nil {
		apiError(w, http.StatusConflict, "ResourceInUseException", "Addon already has an update in progress")
		return
	}
	params := []wireParam{{Type: "AddonVersion", Value: in.AddonVersion}}
	if in.ResolveConflicts != "" {
		params = append(params, wireParam{Type: "ResolveConflicts", Value: in.ResolveConflicts})
	}
	u := s.newUpdate(c, "AddonUpdate", "addon", a.name, in.AddonVersion, params)
	a.status = "UPDATING"
	started(w, c, key, in.ClientRequestToken, u)
}

func (s *Server) describeAddonVersions(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("addonName")
	k8s := r.URL.Query().Get("kubernetesVersion")
	// Every cluster's addons are offered for every Kubernetes version here,
	// unless a seeded Addon.Compatible lists the versions of that one.
	seen := map[string][]string{}
	for _, c := range s.clusters {
		for _, a := range c.addons {
			if name == "" || a.name == name {
				seen[a.name] = a.versions
				if v, ok := a.compatible[k8s]; ok && k8s != "" {
					seen[a.name] = v
				}
			}
		}
	}
	page, next, ok := s.page(w, r, cloudtest.SortedKeys(seen, nil))
	if !ok {
		return
	}
	infos := []map[string]any{}
	for _, n := range page {
		var versions []map[string]any
		for i, v := range seen[n] {
			versions = append(versions, map[string]any{
				"addonVersion": v, "architecture": []string{"amd64", "arm64"},
				"compatibilities": []map[string]any{{"clusterVersion": cmp.Or(k8s, "1.30"), "platformVersions": []string{"*"}, "defaultVersion": i == 0}},
			})
		}
		infos = append(infos, map[string]any{"addonName": n, "type": "networking", "addonVersions": versions})
	}
	writeJSON(w, http.StatusOK, map[string]any{"addons": infos, "nextToken": next})
}

// Wire types: the EKS REST-JSON shapes (camelCase members).

type wireScaling struct {
	MinSize     *int32 `json:"minSize,omitempty"`
	MaxSize     *int32 `json:"maxSize,omitempty"`
	DesiredSize *int32 `json:"desiredSize,omitempty"`
}

type wireTaint struct {
	Key    string `json:"key,omitempty"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect,omitempty"`
}

type wireLaunchTemplate struct {
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
	ID      string `json:"id,omitempty"`
}

type wireRemoteAccess struct {
	EC2SSHKey            string   `json:"ec2SshKey,omitempty"`
	SourceSecurityGroups []string `json:"sourceSecurityGroups,omitempty"`
}

type wireUpdateConfig struct {
	MaxUnavailable           *int32 `json:"maxUnavailable,omitempty"`
	MaxUnavailablePercentage *int32 `json:"maxUnavailablePercentage,omitempty"`
}

type wireIssue struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type wireHealth struct {
	Issues []wireIssue `json:"issues"`
}

type wireNodegroup struct {
	NodegroupName  string              `json:"nodegroupName"`
	NodegroupArn   string              `json:"nodegroupArn"`
	ClusterName    string              `json:"clusterName"`
	Version        string              `json:"version,omitempty"`
	ReleaseVersion string              `json:"releaseVersion,omitempty"`
	CreatedAt      float64             `json:"createdAt,omitempty"`
	Status         string              `json:"status"`
	CapacityType   string              `json:"capacityType,omitempty"`
	ScalingConfig  *wireScaling        `json:"scalingConfig,omitempty"`
	InstanceTypes  []string            `json:"instanceTypes,omitempty"`
	Subnets        []string            `json:"subnets,omitempty"`
	RemoteAccess   *wireRemoteAccess   `json:"remoteAccess,omitempty"`
	AmiType        string              `json:"amiType,omitempty"`
	NodeRole       string              `json:"nodeRole,omitempty"`
	Labels         map[string]string   `json:"labels,omitempty"`
	Taints         []wireTaint         `json:"taints,omitempty"`
	DiskSize       *int32              `json:"diskSize,omitempty"`
	Health         *wireHealth         `json:"health,omitempty"`
	UpdateConfig   *wireUpdateConfig   `json:"updateConfig,omitempty"`
	LaunchTemplate *wireLaunchTemplate `json:"launchTemplate,omitempty"`
	Tags           map[string]string   `json:"tags,omitempty"`
}

type wireCreateNodegroup struct {
	NodegroupName      string              `json:"nodegroupName"`
	ScalingConfig      *wireScaling        `json:"scalingConfig"`
	DiskSize           *int32              `json:"diskSize"`
	Subnets            []string            `json:"subnets"`
	InstanceTypes      []string            `json:"instanceTypes"`
	AmiType            string              `json:"amiType"`
	RemoteAccess       *wireRemoteAccess   `json:"remoteAccess"`
	NodeRole           string              `json:"nodeRole"`
	Labels             map[string]string   `json:"labels"`
	Taints             []wireTaint         `json:"taints"`
	Tags               map[string]string   `json:"tags"`
	ClientRequestToken string              `json:"clientRequestToken"`
	LaunchTemplate     *wireLaunchTemplate `json:"launchTemplate"`
	UpdateConfig       *wireUpdateConfig   `json:"updateConfig"`
	CapacityType       string              `json:"capacityType"`
	Version            string              `json:"version"`
	ReleaseVersion     string              `json:"releaseVersion"`
}

type wireParam struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

type wireErrorDetail struct {
	ErrorCode    string   `json:"errorCode,omitempty"`
	ErrorMessage string   `json:"errorMessage,omitempty"`
	ResourceIDs  []string `json:"resourceIds,omitempty"`
}

type wireUpdate struct {
	ID        string            `json:"id"`
	Status    string            `json:"status"`
	Type      string            `json:"type"`
	Params    []wireParam       `json:"params"`
	CreatedAt float64           `json:"createdAt"`
	Errors    []wireErrorDetail `json:"errors"`
}

func apiError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("X-Amzn-ErrorType", code)
	w.Header().Set("X-Amzn-RequestId", "00000000-0000-0000-0000-000000000000")
	writeJSON(w, status, map[string]string{"message": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	cloudtest.WriteJSON(w, status, "application/json", v)
}

func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	return cloudtest.ReadJSON(w, r, v, func(err error) {
		apiError(w, http.StatusBadRequest, "InvalidRequestException", "malformed request body: "+err.Error())
	})
}

func epoch(t time.Time) float64 { return float64(t.Unix()) }

func ptr(v int32) *int32 { return &v }

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

func groupEvent(w wireNodegroup, deleted bool) NodeGroupEvent {
	e := NodeGroupEvent{Cluster: w.ClusterName, Name: w.NodegroupName, LabelValue: w.NodegroupName, Version: w.Version, Labels: w.Labels, Deleted: deleted}
	if w.ScalingConfig != nil {
		e.Size = deref(w.ScalingConfig.DesiredSize)
	}
	return e
}
