// Package cloud defines the narrow interface ops-server needs from a managed
// Kubernetes cloud (EKS, GKE, AKS, ACK, and the simulated mock), defined by
// its consumers: the ClusterUpgradeOperation reconciler and the apiserver's
// nodeGroups/addons endpoints. One package per provider implements it.
//
// Every mutating call is long-running in the clouds: it returns an operation
// id at once, which is persisted in the operation's status and polled with
// PollOperation, also by a freshly started operator. Every mutating call
// takes an idempotency token derived from the operation and step, so that a
// call repeated after a crash (between the cloud call and the status patch)
// is recognised by the cloud, or by the provider's own check of the cloud's
// state, and returns the same operation instead of starting a second one.
//
// Every provider turns its SDK's errors into a classified *Error with
// Classify, adding only how its own SDK's error types read; messages go
// through Sanitize. MajorMinor is the one parser of a Kubernetes version's
// major and minor for providers, fake clouds, preflight and the upgrade
// reconciler. The fake cloud servers of the providers' tests share
// package cloudtest.
package cloud

import (
	"context"
	"time"
)

// Provider names, as in ClusterUpgradeOperation.spec.cloudProvider.
const (
	EKS  = "eks"
	GKE  = "gke"
	AKS  = "aks"
	ACK  = "ack"
	Mock = "mock"
)

// ClusterRef identifies a managed cluster. Name, Region and Provider come
// from the request; the rest is resolved from configuration per provider
// (see docs/providers).
type ClusterRef struct {
	Provider string
	Name     string
	Region   string

	// Project is the GCP project id (gke).
	Project string
	// SubscriptionID and ResourceGroup locate an AKS cluster.
	SubscriptionID string
	ResourceGroup  string
	// ClusterID is the ACK cluster id (c-...).
	ClusterID string
}

// Cluster is what DescribeCluster reports.
type Cluster struct {
	Name    string
	Version string
	// Status is the provider's own word (ACTIVE, RUNNING, Succeeded, ...).
	Status string
}

// Taint is a node-group taint.
type Taint struct {
	Key    string
	Value  string
	Effect string // NoSchedule, PreferNoSchedule, NoExecute
}

// NodeGroup is a group of worker nodes (EKS node group, GKE node pool, AKS
// agent pool, ACK node pool).
type NodeGroup struct {
	Name          string
	Version       string
	Status        string
	DesiredSize   int32
	MinSize       int32
	MaxSize       int32
	InstanceTypes []string
	Labels        map[string]string
	Taints        []Taint
	// Extra holds provider-specific settings copied when the group is
	// cloned (subnets, role, launch template, disk, ...).
	Extra map[string]string
}

// Addon is a cluster addon and the versions it can move to.
type Addon struct {
	Name              string
	Version           string
	Status            string
	AvailableVersions []string
}

// AddonUpdate asks for an addon version.
type AddonUpdate struct {
	Name    string
	Version string
	// ResolveConflicts is EKS's NONE | OVERWRITE | PRESERVE.
	ResolveConflicts string
}

// OperationState is the state of a long-running cloud operation.
type OperationState string

const (
	OperationRunning   OperationState = "Running"
	OperationSucceeded OperationState = "Succeeded"
	OperationFailed    OperationState = "Failed"
)

// OperationStatus is what PollOperation reports.
type OperationStatus struct {
	State OperationState
	// Message is the cloud's word on a failure (never a credential).
	Message string
	// RetryAfter suggests when to poll again (0: caller's default).
	RetryAfter time.Duration
}

// Provider is one cloud. Implementations are safe for concurrent use.
type Provider interface {
	// Name is the provider name (eks, gke, aks, ack, mock).
	Name() string
	// NodeGroupLabel is the Node label whose value names the node group.
	NodeGroupLabel() string
	// SupportsAddons reports whether ListAddons/StartAddonUpdate work.
	SupportsAddons() bool

	DescribeCluster(ctx context.Context, c ClusterRef) (*Cluster, error)
	StartControlPlaneUpgrade(ctx context.Context, c ClusterRef, version, token string) (opID string, err error)

	ListNodeGroups(ctx context.Context, c ClusterRef) ([]NodeGroup, error)
	StartNodeGroupUpgrade(ctx context.Context, c ClusterRef, group, version, token string) (opID string, err error)
	// StartCreateNodeGroup creates group (cloned from an existing one, at
	// group.Version).
	StartCreateNodeGroup(ctx context.Context, c ClusterRef, group NodeGroup, token string) (opID string, err error)
	StartDeleteNodeGroup(ctx context.Context, c ClusterRef, name, token string) (opID string, err error)

	ListAddons(ctx context.Context, c ClusterRef) ([]Addon, error)
	StartAddonUpdate(ctx context.Context, c ClusterRef, u AddonUpdate, token string) (opID string, err error)

	// PollOperation reports the state of an operation started by one of
	// the Start calls, by the id it returned.
	PollOperation(ctx context.Context, c ClusterRef, opID string) (*OperationStatus, error)
}

// NodeGroupSelector is implemented by providers whose Nodes carry the node
// group's id rather than its name (ACK labels alibabacloud.com/nodepool-id):
// it returns the label selector of a group's Nodes. Without it, the
// selector is {NodeGroupLabel(): group}.
type NodeGroupSelector interface {
	NodeSelector(ctx context.Context, c ClusterRef, group string) (map[string]string, error)
}

// VersionLister is implemented by providers whose upgrades take one of the
// cloud's own full versions (ACK: 1.31.1-aliyun.1) rather than a minor:
// AvailableVersions lists the Kubernetes versions the cluster can be at
// after an upgrade (its current version and those the cloud offers to
// upgrade it to), in no particular order. The apiserver resolves a
// requested minor (1.30) to the newest of them at request time, and
// refuses a version that is not among them.
type VersionLister interface {
	AvailableVersions(ctx context.Context, c ClusterRef) ([]string, error)
}

// NodeSelectorFor returns the label selector of a node group's Nodes.
func NodeSelectorFor(ctx context.Context, p Provider, c ClusterRef, group string) (map[string]string, error) {
	if s, ok := p.(NodeGroupSelector); ok {
		return s.NodeSelector(ctx, c, group)
	}
	return map[string]string{p.NodeGroupLabel(): group}, nil
}

// AddonCompatibility is implemented by providers whose API says which
// addon versions run on a Kubernetes version (EKS DescribeAddonVersions):
// the preflight checks each requested addon version against the target.
type AddonCompatibility interface {
	AddonVersionsFor(ctx context.Context, c ClusterRef, addon, k8sVersion string) ([]string, error)
}
