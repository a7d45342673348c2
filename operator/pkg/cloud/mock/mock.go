// Package mock is a simulated managed-Kubernetes cloud for the local stack
// and the tests. Its clusters, versions, node groups, addons and operations
// persist as JSON in ConfigMaps of the Kubernetes cluster it runs against,
// and its node groups are real Node objects carrying NodeGroupLabel, so a
// blue-green move really moves pods. Operations take a configurable
// simulated time and take effect when a poll finds them due. Faults can be
// injected per call kind, and every call is logged.
package mock

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// NodeGroupLabel is the Node label naming the simulated node group.
const NodeGroupLabel = "mock.ops.observability.tidbcloud.com/nodegroup"

// DefaultNamespace holds the simulated clouds' ConfigMaps.
const DefaultNamespace = "ops-mock-cloud"

const stateKey = "state.json"

// Provider is the simulated cloud.
type Provider struct {
	// Client reads and writes the state ConfigMaps and the Nodes.
	Client client.Client
	// Namespace of the state ConfigMaps (DefaultNamespace if empty).
	Namespace string
	// OperationDuration is how long every operation takes.
	OperationDuration time.Duration
	// Now is the clock (time.Now if nil).
	Now func() time.Time
	// Faults and Log are optional.
	Faults *Faults
	Log    *CallLog
}

var _ cloud.Provider = (*Provider)(nil)

func (p *Provider) Name() string           { return cloud.Mock }
func (p *Provider) NodeGroupLabel() string { return NodeGroupLabel }
func (p *Provider) SupportsAddons() bool   { return true }

func (p *Provider) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Provider) namespace() string {
	if p.Namespace != "" {
		return p.Namespace
	}
	return DefaultNamespace
}

// configMapName is the ConfigMap of one cluster.
func configMapName(c cloud.ClusterRef) string {
	return strings.ToLower(fmt.Sprintf("cluster-%s-%s", c.Region, c.Name))
}

// begin logs a call and applies an injected fault.
func (p *Provider) begin(ctx context.Context, op string, c cloud.ClusterRef, target, token string) (*Call, error) {
	call := &Call{Op: op, Cluster: c.Name, Target: target, Token: token, Time: p.now()}
	if ft := p.Faults.next(op); ft != nil {
		if ft.Kind == Hang {
			<-ctx.Done()
			call.Failed = true
			p.Log.add(*call)
			return nil, &cloud.Error{Kind: cloud.Retryable, Provider: cloud.Mock, Op: op, Message: "request timed out", Timeout: true}
		}
		if ft.Kind == FailOperation {
			call.failOperation = true
			return call, nil
		}
		call.Failed = true
		p.Log.add(*call)
		return nil, ft.err(op)
	}
	return call, nil
}

func (p *Provider) end(call *Call, err error) {
	if err != nil {
		call.Failed = true
	}
	p.Log.add(*call)
}

// Seed creates (or replaces) a simulated cluster and the Nodes of its node
// groups. It is how the local stack and the tests make a cloud.
func (p *Provider) Seed(ctx context.Context, c cloud.ClusterRef, st ClusterState) error {
	st.Name, st.Region = c.Name, c.Region
	if st.Status == "" {
		st.Status = "ACTIVE"
	}
	if st.NodeGroups == nil {
		st.NodeGroups = map[string]*NodeGroupState{}
	}
	if st.Addons == nil {
		st.Addons = map[string]*AddonState{}
	}
	for _, ng := range st.NodeGroups {
		if ng.Version == "" {
			ng.Version = st.Version
		}
		if ng.Status == "" {
			ng.Status = "ACTIVE"
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.namespace()}}
	if err := p.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	raw, err := json.Marshal(&st)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: configMapName(c), Namespace: p.namespace()}}
	if err := p.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
		if !apierrors.IsNotFound(err) {
			return err
		}
		cm.Data = map[string]string{stateKey: string(raw)}
		if err := p.Client.Create(ctx, cm); err != nil {
			return err
		}
	} else {
		cm.Data = map[string]string{stateKey: string(raw)}
		if err := p.Client.Update(ctx, cm); err != nil {
			return err
		}
	}
	for name, ng := range st.NodeGroups {
		if err := p.ensureNodes(ctx, st.Name, name, ng); err != nil {
			return err
		}
	}
	return nil
}

// State returns the stored state of a cluster.
func (p *Provider) State(ctx context.Context, c cloud.ClusterRef) (*ClusterState, error) {
	st, _, err := p.load(ctx, c)
	return st, err
}

func (p *Provider) load(ctx context.Context, c cloud.ClusterRef) (*ClusterState, *corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: p.namespace(), Name: configMapName(c)}
	if err := p.Client.Get(ctx, key, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, &cloud.Error{Kind: cloud.NotFound, Provider: cloud.Mock, Message: fmt.Sprintf("cluster %q not found in region %q", c.Name, c.Region), StatusCode: 404}
		}
		return nil, nil, &cloud.Error{Kind: cloud.Retryable, Provider: cloud.Mock, Message: fmt.Sprintf("reading simulated cloud state: %v", err)}
	}
	st := &ClusterState{}
	if err := json.Unmarshal([]byte(cm.Data[stateKey]), st); err != nil {
		return nil, nil, &cloud.Error{Kind: cloud.Permanent, Provider: cloud.Mock, Message: fmt.Sprintf("corrupt simulated cloud state: %v", err)}
	}
	if st.Operations == nil {
		st.Operations = map[string]*Operation{}
	}
	if st.Tokens == nil {
		st.Tokens = map[string]string{}
	}
	return st, cm, nil
}

// mutate loads, changes and stores a cluster's state, retrying on conflict.
func (p *Provider) mutate(ctx context.Context, c cloud.ClusterRef, fn func(*ClusterState) error) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		st, cm, err := p.load(ctx, c)
		if err != nil {
			return err
		}
		if err := fn(st); err != nil {
			return err
		}
		raw, err := json.Marshal(st)
		if err != nil {
			return err
		}
		cm.Data[stateKey] = string(raw)
		return p.Client.Update(ctx, cm)
	})
}

func (p *Provider) DescribeCluster(ctx context.Context, c cloud.ClusterRef) (*cloud.Cluster, error) {
	call, err := p.begin(ctx, OpDescribeCluster, c, c.Name, "")
	if err != nil {
		return nil, err
	}
	st, _, err := p.load(ctx, c)
	p.end(call, err)
	if err != nil {
		return nil, err
	}
	return &cloud.Cluster{Name: st.Name, Version: st.Version, Status: st.Status}, nil
}

func (p *Provider) ListNodeGroups(ctx context.Context, c cloud.ClusterRef) ([]cloud.NodeGroup, error) {
	call, err := p.begin(ctx, OpListNodeGroups, c, c.Name, "")
	if err != nil {
		return nil, err
	}
	st, _, err := p.load(ctx, c)
	p.end(call, err)
	if err != nil {
		return nil, err
	}
	out := make([]cloud.NodeGroup, 0, len(st.NodeGroups))
	for name, ng := range st.NodeGroups {
		out = append(out, cloud.NodeGroup{
			Name: name, Version: ng.Version, Status: ng.Status,
			DesiredSize: ng.Size, MinSize: ng.Size, MaxSize: ng.Size,
			InstanceTypes: append([]string(nil), ng.InstanceTypes...),
			Labels:        maps.Clone(ng.Labels), Taints: append([]cloud.Taint(nil), ng.Taints...),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (p *Provider) ListAddons(ctx context.Context, c cloud.ClusterRef) ([]cloud.Addon, error) {
	call, err := p.begin(ctx, OpListAddons, c, c.Name, "")
	if err != nil {
		return nil, err
	}
	st, _, err := p.load(ctx, c)
	p.end(call, err)
	if err != nil {
		return nil, err
	}
	out := make([]cloud.Addon, 0, len(st.Addons))
	for name, a := range st.Addons {
		out = append(out, cloud.Addon{Name: name, Version: a.Version, Status: "ACTIVE", AvailableVersions: append([]string(nil), a.AvailableVersions...)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// start records a new operation, or answers the one its token started.
func (p *Provider) start(ctx context.Context, kind string, c cloud.ClusterRef, target, token string, check func(*ClusterState) error, op Operation) (string, error) {
	call, err := p.begin(ctx, kind, c, target, token)
	if err != nil {
		return "", err
	}
	failAtEnd := call.failOperation
	var id string
	err = p.mutate(ctx, c, func(st *ClusterState) error {
		if token != "" {
			if existing, ok := st.Tokens[token]; ok {
				id = existing
				call.Deduplicated = true
				return nil
			}
		}
		call.Deduplicated = false
		if err := check(st); err != nil {
			return err
		}
		st.NextOp++
		op.ID = fmt.Sprintf("op-%s-%06d", strings.ToLower(kind), st.NextOp)
		op.Kind, op.Target = kind, target
		op.Started = p.now().UTC()
		op.Due = op.Started.Add(p.OperationDuration)
		op.State = string(cloud.OperationRunning)
		op.FailAtEnd = failAtEnd
		st.Operations[op.ID] = &op
		if token != "" {
			st.Tokens[token] = op.ID
		}
		id = op.ID
		return nil
	})
	p.end(call, err)
	return id, err
}

func busy(st *ClusterState, target string) error {
	for _, op := range st.Operations {
		if op.Target == target && op.State == string(cloud.OperationRunning) {
			return &cloud.Error{Kind: cloud.Permanent, Provider: cloud.Mock, Message: fmt.Sprintf("%s has an operation in progress (%s)", target, op.ID), StatusCode: 409}
		}
	}
	return nil
}

func (p *Provider) StartControlPlaneUpgrade(ctx context.Context, c cloud.ClusterRef, version, token string) (string, error) {
	return p.start(ctx, OpStartControlPlaneUpgrade, c, "cluster/"+c.Name, token, func(st *ClusterState) error {
		if st.Version == version {
			return &cloud.Error{Kind: cloud.Permanent, Provider: cloud.Mock, Op: OpStartControlPlaneUpgrade, Message: fmt.Sprintf("cluster is already at version %s", version), StatusCode: 400}
		}
		return busy(st, "cluster/"+c.Name)
	}, Operation{Version: version})
}

func (p *Provider) StartNodeGroupUpgrade(ctx context.Context, c cloud.ClusterRef, group, version, token string) (string, error) {
	return p.start(ctx, OpStartNodeGroupUpgrade, c, "nodegroup/"+group, token, func(st *ClusterState) error {
		if _, ok := st.NodeGroups[group]; !ok {
			return &cloud.Error{Kind: cloud.NotFound, Provider: cloud.Mock, Op: OpStartNodeGroupUpgrade, Message: fmt.Sprintf("node group %q not found", group), StatusCode: 404}
		}
		return busy(st, "nodegroup/"+group)
	}, Operation{Version: version})
}

func (p *Provider) StartCreateNodeGroup(ctx context.Context, c cloud.ClusterRef, g cloud.NodeGroup, token string) (string, error) {
	spec := &NodeGroupSpec{Name: g.Name, Version: g.Version, Size: g.DesiredSize, InstanceTypes: g.InstanceTypes, Labels: maps.Clone(g.Labels), Taints: g.Taints}
	return p.start(ctx, OpStartCreateNodeGroup, c, "nodegroup/"+g.Name, token, func(st *ClusterState) error {
		if _, ok := st.NodeGroups[g.Name]; ok {
			return &cloud.Error{Kind: cloud.Permanent, Provider: cloud.Mock, Op: OpStartCreateNodeGroup, Message: fmt.Sprintf("node group %q already exists", g.Name), StatusCode: 409}
		}
		st.NodeGroups[g.Name] = &NodeGroupState{Version: g.Version, Status: "CREATING", Size: g.DesiredSize, InstanceTypes: g.InstanceTypes, Labels: maps.Clone(g.Labels), Taints: g.Taints}
		return nil
	}, Operation{Version: g.Version, Group: spec})
}

func (p *Provider) StartDeleteNodeGroup(ctx context.Context, c cloud.ClusterRef, name, token string) (string, error) {
	return p.start(ctx, OpStartDeleteNodeGroup, c, "nodegroup/"+name, token, func(st *ClusterState) error {
		ng, ok := st.NodeGroups[name]
		if !ok {
			return &cloud.Error{Kind: cloud.NotFound, Provider: cloud.Mock, Op: OpStartDeleteNodeGroup, Message: fmt.Sprintf("node group %q not found", name), StatusCode: 404}
		}
		if err := busy(st, "nodegroup/"+name); err != nil {
			return err
		}
		ng.Status = "DELETING"
		return nil
	}, Operation{})
}

func (p *Provider) StartAddonUpdate(ctx context.Context, c cloud.ClusterRef, u cloud.AddonUpdate, token string) (string, error) {
	return p.start(ctx, OpStartAddonUpdate, c, "addon/"+u.Name, token, func(st *ClusterState) error {
		a, ok := st.Addons[u.Name]
		if !ok {
			return &cloud.Error{Kind: cloud.NotFound, Provider: cloud.Mock, Op: OpStartAddonUpdate, Message: fmt.Sprintf("addon %q not found", u.Name), StatusCode: 404}
		}
		if !slices.Contains(a.AvailableVersions, u.Version) {
			return &cloud.Error{Kind: cloud.Permanent, Provider: cloud.Mock, Op: OpStartAddonUpdate, Message: fmt.Sprintf("addon %q has no version %q (available: %s)", u.Name, u.Version, strings.Join(a.AvailableVersions, ", ")), StatusCode: 400}
		}
		return busy(st, "addon/"+u.Name)
	}, Operation{Version: u.Version})
}

// PollOperation reports an operation and applies its effect once it is due.
func (p *Provider) PollOperation(ctx context.Context, c cloud.ClusterRef, opID string) (*cloud.OperationStatus, error) {
	call, err := p.begin(ctx, OpPollOperation, c, opID, "")
	if err != nil {
		return nil, err
	}
	var status cloud.OperationStatus
	var effect func(context.Context) error
	err = p.mutate(ctx, c, func(st *ClusterState) error {
		effect = nil
		op, ok := st.Operations[opID]
		if !ok {
			return &cloud.Error{Kind: cloud.NotFound, Provider: cloud.Mock, Op: OpPollOperation, Message: fmt.Sprintf("operation %q not found", opID), StatusCode: 404}
		}
		if op.State == string(cloud.OperationRunning) && !p.now().Before(op.Due) {
			if op.FailAtEnd {
				op.State, op.Message = string(cloud.OperationFailed), "simulated failure of "+op.Kind
			} else {
				p.apply(st, op)
				op.State = string(cloud.OperationSucceeded)
			}
		}
		if op.State == string(cloud.OperationSucceeded) {
			effect = p.nodeEffect(st, op)
		}
		status = cloud.OperationStatus{State: cloud.OperationState(op.State), Message: op.Message}
		if op.State == string(cloud.OperationRunning) {
			status.RetryAfter = op.Due.Sub(p.now())
		}
		return nil
	})
	if err == nil && effect != nil {
		err = effect(ctx)
	}
	p.end(call, err)
	if err != nil {
		return nil, err
	}
	return &status, nil
}

// apply changes the state for a finished operation.
func (p *Provider) apply(st *ClusterState, op *Operation) {
	switch op.Kind {
	case OpStartControlPlaneUpgrade:
		st.Version = op.Version
	case OpStartAddonUpdate:
		st.Addons[strings.TrimPrefix(op.Target, "addon/")].Version = op.Version
	case OpStartNodeGroupUpgrade:
		st.NodeGroups[strings.TrimPrefix(op.Target, "nodegroup/")].Version = op.Version
	case OpStartCreateNodeGroup:
		ng := st.NodeGroups[op.Group.Name]
		if ng == nil {
			ng = &NodeGroupState{}
			st.NodeGroups[op.Group.Name] = ng
		}
		ng.Status = "ACTIVE"
		ng.Version, ng.Size, ng.InstanceTypes, ng.Labels, ng.Taints = op.Group.Version, op.Group.Size, op.Group.InstanceTypes, op.Group.Labels, op.Group.Taints
	case OpStartDeleteNodeGroup:
		delete(st.NodeGroups, strings.TrimPrefix(op.Target, "nodegroup/"))
	}
}

// nodeEffect is the change a succeeded operation makes to Kubernetes
// Nodes. It is idempotent and runs on every poll of a succeeded operation,
// so a crash between storing the state and changing the Nodes is repaired
// by the next poll.
func (p *Provider) nodeEffect(st *ClusterState, op *Operation) func(context.Context) error {
	name := strings.TrimPrefix(op.Target, "nodegroup/")
	switch op.Kind {
	case OpStartNodeGroupUpgrade, OpStartCreateNodeGroup:
		ng := st.NodeGroups[name]
		if ng == nil {
			return nil
		}
		cluster := st.Name
		return func(ctx context.Context) error { return p.ensureNodes(ctx, cluster, name, ng) }
	case OpStartDeleteNodeGroup:
		if _, ok := st.NodeGroups[name]; ok {
			return nil // re-created since; leave its Nodes alone
		}
		cluster := st.Name
		return func(ctx context.Context) error { return p.deleteNodes(ctx, cluster, name) }
	}
	return nil
}
