/*
Copyright 2026 The ops-server Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterUpgradeOperationKind is the kind of ClusterUpgradeOperation.
const ClusterUpgradeOperationKind = "ClusterUpgradeOperation"

// Defaults that depend on other fields, applied by
// ClusterUpgradeOperationSpec.Default (see there).
const (
	// DefaultVMStorageSTSName is the vmstorage StatefulSet observed during a
	// VMStorage rollout when vmstorageSTSName is omitted: the StatefulSet the
	// VictoriaMetrics operator creates for VMCluster "vmcluster".
	DefaultVMStorageSTSName = "vmstorage-vmcluster"
	// DefaultVMStorageSTSNamespace is the namespace of that StatefulSet when
	// vmstorageSTSNamespace is omitted.
	DefaultVMStorageSTSNamespace = "observability"
)

// The VMCluster that a VMStorage rollout patches with vmClusterHelmValues
// when nodeGroupUpgrades[].vmCluster is omitted.
const (
	// VMClusterNamespace is the namespace of the default VMCluster of a
	// VMStorage rollout, and of one whose vmCluster.namespace is omitted.
	VMClusterNamespace = "observability"
	// VMClusterName is the name of the default VMCluster of a VMStorage
	// rollout.
	VMClusterName = "vmcluster"
)

// CloudProvider names the managed Kubernetes service that runs the cluster.
// +kubebuilder:validation:Enum=eks;gke;aks;ack;mock
type CloudProvider string

const (
	// CloudProviderEKS is Amazon Elastic Kubernetes Service.
	CloudProviderEKS CloudProvider = "eks"
	// CloudProviderGKE is Google Kubernetes Engine.
	CloudProviderGKE CloudProvider = "gke"
	// CloudProviderAKS is Azure Kubernetes Service.
	CloudProviderAKS CloudProvider = "aks"
	// CloudProviderACK is Alibaba Cloud Container Service for Kubernetes.
	CloudProviderACK CloudProvider = "ack"
	// CloudProviderMock is the simulated cloud used by the local stack and
	// the tests.
	CloudProviderMock CloudProvider = "mock"
)

// SupportsClusterAddons reports whether clusterAddons may be set for the
// provider (eks, ack and mock; the Capabilities table). The CRD enforces
// the same rule.
func (p CloudProvider) SupportsClusterAddons() bool {
	c, ok := CapabilitiesOf(p)
	return ok && c.Addons
}

// UpgradeStrategy is how a node group is upgraded.
// +kubebuilder:validation:Enum=blue-green;in-place
type UpgradeStrategy string

const (
	// StrategyBlueGreen creates a new node group (newNodeGroupName) at the
	// target version, moves the workloads to it and deletes the old one.
	StrategyBlueGreen UpgradeStrategy = "blue-green"
	// StrategyInPlace upgrades the existing node group with the cloud's own
	// rolling node replacement.
	StrategyInPlace UpgradeStrategy = "in-place"
)

// ResolveConflicts says how the cloud resolves conflicts between an addon's
// configuration and changes made to it in the cluster (the values of EKS's
// resolveConflicts).
// +kubebuilder:validation:Enum=NONE;OVERWRITE;PRESERVE
type ResolveConflicts string

const (
	// ResolveConflictsNone fails the addon update on a conflict.
	ResolveConflictsNone ResolveConflicts = "NONE"
	// ResolveConflictsOverwrite overwrites changes made in the cluster.
	ResolveConflictsOverwrite ResolveConflicts = "OVERWRITE"
	// ResolveConflictsPreserve keeps changes made in the cluster.
	ResolveConflictsPreserve ResolveConflicts = "PRESERVE"
)

// ClusterUpgradeOperationSpec is the upgrade request: which managed
// Kubernetes cluster, the version to upgrade its control plane to, the
// addons to update and the node groups to upgrade, in that order.
//
// Everything except paused and cancel is immutable once the object exists: an
// operation is a plan that the operator carries out step by step, and
// changing it halfway would leave the cluster in a state no plan describes.
// To change a plan, cancel (or delete) the operation and create a new one.
//
// +kubebuilder:validation:XValidation:rule="!has(self.clusterAddons) || size(self.clusterAddons) == 0 || self.cloudProvider in ['eks', 'ack', 'mock']",message="clusterAddons is only supported with cloudProvider eks, ack or mock",fieldPath=".clusterAddons",reason="FieldValueForbidden"
// +kubebuilder:validation:XValidation:rule=`self.cloudProvider != 'eks' || self.k8sClusterName.matches(r'^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$')`,message="k8sClusterName must be 1 to 100 letters, digits, '-' and '_', starting with a letter or digit, for cloudProvider eks",fieldPath=".k8sClusterName"
// +kubebuilder:validation:XValidation:rule=`self.cloudProvider != 'gke' || self.k8sClusterName.matches(r'^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$')`,message="k8sClusterName must be 1 to 40 lowercase letters, digits and '-', starting with a letter and not ending with '-', for cloudProvider gke",fieldPath=".k8sClusterName"
// +kubebuilder:validation:XValidation:rule=`self.cloudProvider != 'aks' || self.k8sClusterName.matches(r'^[A-Za-z0-9]([A-Za-z0-9_-]{0,61}[A-Za-z0-9])?$')`,message="k8sClusterName must be 1 to 63 letters, digits, '-' and '_', starting and ending with a letter or digit, for cloudProvider aks",fieldPath=".k8sClusterName"
// +kubebuilder:validation:XValidation:rule=`self.cloudProvider != 'ack' || self.k8sClusterName.matches(r'^[\p{Han}A-Za-z0-9][\p{Han}A-Za-z0-9_-]{0,62}$')`,message="k8sClusterName must be 1 to 63 Chinese characters, letters, digits, '-' and '_', not starting with '-' or '_', for cloudProvider ack",fieldPath=".k8sClusterName"
// +kubebuilder:validation:XValidation:rule=`self.cloudProvider != 'mock' || self.k8sClusterName.matches(r'^[a-z0-9]([-a-z0-9]{0,98}[a-z0-9])?$')`,message="k8sClusterName must be 1 to 100 lowercase letters, digits and '-', starting and ending with a letter or digit, for cloudProvider mock",fieldPath=".k8sClusterName"
// +kubebuilder:validation:XValidation:rule=`self.cloudProvider != 'eks' || !has(self.nodeGroupUpgrades) || self.nodeGroupUpgrades.all(n, n.nodeGroupName.matches(r'^[0-9A-Za-z][A-Za-z0-9_-]{0,62}$') && (!has(n.newNodeGroupName) || n.newNodeGroupName.matches(r'^[0-9A-Za-z][A-Za-z0-9_-]{0,62}$')))`,message="nodeGroupUpgrades[].nodeGroupName and newNodeGroupName must be 1 to 63 letters, digits, '-' and '_', starting with a letter or digit, for cloudProvider eks",fieldPath=".nodeGroupUpgrades"
// +kubebuilder:validation:XValidation:rule=`self.cloudProvider != 'gke' || !has(self.nodeGroupUpgrades) || self.nodeGroupUpgrades.all(n, n.nodeGroupName.matches(r'^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$') && (!has(n.newNodeGroupName) || n.newNodeGroupName.matches(r'^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$')))`,message="nodeGroupUpgrades[].nodeGroupName and newNodeGroupName must be 1 to 40 lowercase letters, digits and '-', starting with a letter and not ending with '-', for cloudProvider gke",fieldPath=".nodeGroupUpgrades"
// +kubebuilder:validation:XValidation:rule=`self.cloudProvider != 'aks' || !has(self.nodeGroupUpgrades) || self.nodeGroupUpgrades.all(n, n.nodeGroupName.matches(r'^[a-z][a-z0-9]{0,11}$') && (!has(n.newNodeGroupName) || n.newNodeGroupName.matches(r'^[a-z][a-z0-9]{0,11}$')))`,message="nodeGroupUpgrades[].nodeGroupName and newNodeGroupName must be 1 to 12 lowercase letters and digits, starting with a letter, for cloudProvider aks",fieldPath=".nodeGroupUpgrades"
// +kubebuilder:validation:XValidation:rule=`self.cloudProvider != 'ack' || !has(self.nodeGroupUpgrades) || self.nodeGroupUpgrades.all(n, n.nodeGroupName.matches(r'^[\p{Han}A-Za-z0-9][\p{Han}A-Za-z0-9_-]{0,62}$') && (!has(n.newNodeGroupName) || n.newNodeGroupName.matches(r'^[\p{Han}A-Za-z0-9][\p{Han}A-Za-z0-9_-]{0,62}$')))`,message="nodeGroupUpgrades[].nodeGroupName and newNodeGroupName must be 1 to 63 Chinese characters, letters, digits, '-' and '_', not starting with '-' or '_', for cloudProvider ack",fieldPath=".nodeGroupUpgrades"
// +kubebuilder:validation:XValidation:rule=`self.cloudProvider != 'mock' || !has(self.nodeGroupUpgrades) || self.nodeGroupUpgrades.all(n, n.nodeGroupName.matches(r'^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$') && (!has(n.newNodeGroupName) || n.newNodeGroupName.matches(r'^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$')))`,message="nodeGroupUpgrades[].nodeGroupName and newNodeGroupName must be 1 to 63 lowercase letters, digits and '-', starting and ending with a letter or digit, for cloudProvider mock",fieldPath=".nodeGroupUpgrades"
// +kubebuilder:validation:XValidation:rule=`self.cloudProvider != 'ack' || self.targetVersion.matches(r'^[0-9]+\.[0-9]+(\.[0-9]+(-aliyun\.[0-9]+)?)?$')`,message="targetVersion: cloud provider ack needs a minor such as 1.31 (resolved to the newest available patch) or a full ACK version such as 1.31.1-aliyun.1",fieldPath=".targetVersion"
// +kubebuilder:validation:XValidation:rule=`self.cloudProvider != 'ack' || !has(self.clusterAddons) || self.clusterAddons.all(a, !has(a.resolveConflicts))`,message="clusterAddons[].resolveConflicts is an EKS setting; cloud provider ack has no such option",fieldPath=".clusterAddons",reason="FieldValueForbidden"
// +kubebuilder:validation:XValidation:rule="self.k8sClusterName == oldSelf.k8sClusterName",message="k8sClusterName is immutable",fieldPath=".k8sClusterName"
// +kubebuilder:validation:XValidation:rule="self.region == oldSelf.region",message="region is immutable",fieldPath=".region"
// +kubebuilder:validation:XValidation:rule="self.cloudProvider == oldSelf.cloudProvider",message="cloudProvider is immutable",fieldPath=".cloudProvider"
// +kubebuilder:validation:XValidation:rule="self.targetVersion == oldSelf.targetVersion",message="targetVersion is immutable",fieldPath=".targetVersion"
// +kubebuilder:validation:XValidation:rule="has(self.schedule) == has(oldSelf.schedule) && (!has(self.schedule) || self.schedule == oldSelf.schedule)",message="schedule is immutable",fieldPath=".schedule"
// +kubebuilder:validation:XValidation:rule="(has(self.clusterAddons) ? self.clusterAddons : []) == (has(oldSelf.clusterAddons) ? oldSelf.clusterAddons : [])",message="clusterAddons is immutable",fieldPath=".clusterAddons"
// +kubebuilder:validation:XValidation:rule="(has(self.nodeGroupUpgrades) ? self.nodeGroupUpgrades : []) == (has(oldSelf.nodeGroupUpgrades) ? oldSelf.nodeGroupUpgrades : [])",message="nodeGroupUpgrades is immutable",fieldPath=".nodeGroupUpgrades"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.cancel) || !oldSelf.cancel || (has(self.cancel) && self.cancel)",message="cancel cannot be set back to false once it is true",fieldPath=".cancel"
// +kubebuilder:validation:XValidation:rule="has(self.maintenanceWindow) == has(oldSelf.maintenanceWindow) && (!has(self.maintenanceWindow) || self.maintenanceWindow == oldSelf.maintenanceWindow)",message="maintenanceWindow is immutable",fieldPath=".maintenanceWindow"
// +kubebuilder:validation:XValidation:rule="(has(self.approvals) ? self.approvals : []) == (has(oldSelf.approvals) ? oldSelf.approvals : [])",message="approvals is immutable",fieldPath=".approvals"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.approved) || (has(self.approved) && oldSelf.approved.all(a, a in self.approved))",message="approved: an approval cannot be withdrawn (gates may only be added)",fieldPath=".approved"
type ClusterUpgradeOperationSpec struct {
	// K8sClusterName is the name of the managed Kubernetes cluster in the
	// cloud, as the cloud names it: EKS 1-100 letters, digits, '-' and
	// '_' (e.g. Prod_Cluster-01); GKE 1-40 lowercase letters, digits and
	// '-', starting with a letter; AKS 1-63 letters, digits, '-' and '_',
	// starting and ending with a letter or digit; ACK 1-63 Chinese
	// characters, letters, digits, '-' and '_'; mock a DNS label. The
	// label ops.observability.tidbcloud.com/k8s-cluster-name holds it, or
	// a hash of it when it is not a valid label value (see
	// ClusterNameLabelValue).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=100
	// +kubebuilder:validation:Pattern=`^[\p{Han}A-Za-z0-9][\p{Han}A-Za-z0-9_-]*$`
	K8sClusterName string `json:"k8sClusterName"`

	// Region is the cloud region (or zone, for a zonal GKE cluster) of the
	// cluster, e.g. us-west-2, us-central1, eastus, cn-hangzhou.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Region string `json:"region"`

	// CloudProvider is the managed Kubernetes service: eks, gke, aks, ack, or
	// mock (the simulated cloud).
	// +required
	CloudProvider CloudProvider `json:"cloudProvider"`

	// TargetVersion is the Kubernetes version to upgrade the control plane
	// and the node groups to: major.minor (1.30), major.minor.patch (1.30.1),
	// optionally with the provider's suffix (ACK: 1.31.1-aliyun.1).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[0-9]+\.[0-9]+(\.[0-9]+)?(-[a-z0-9]+([.-][a-z0-9]+)*)?$`
	TargetVersion string `json:"targetVersion"`

	// Schedule is the earliest time the operation may start (RFC 3339, e.g.
	// 2026-05-06T12:00:00Z). Until then its phase is Scheduled. Omitted: the
	// operation starts right away.
	// +optional
	Schedule *metav1.Time `json:"schedule,omitempty"`

	// ClusterAddons are the cluster addons to update after the control plane
	// upgrade, in order. Only supported with cloudProvider eks, ack and mock.
	// Addon names are unique.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	ClusterAddons []ClusterAddon `json:"clusterAddons,omitempty"`

	// NodeGroupUpgrades are the node groups to upgrade after the addons, in
	// order. Node group names are unique, and a newNodeGroupName names
	// neither another new node group nor a node group of this list.
	// +optional
	// +listType=map
	// +listMapKey=nodeGroupName
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(x, !has(x.newNodeGroupName) || self.all(y, y.nodeGroupName != x.newNodeGroupName && (y.nodeGroupName == x.nodeGroupName || !has(y.newNodeGroupName) || y.newNodeGroupName != x.newNodeGroupName)))",message="nodeGroupUpgrades[].newNodeGroupName must be unique and must not be the nodeGroupName of an entry"
	NodeGroupUpgrades []NodeGroupUpgrade `json:"nodeGroupUpgrades,omitempty"`

	// Paused stops the operation from starting its next step while true. A
	// cloud operation already in flight is not interrupted (clouds cannot
	// pause one); the operator waits for it and then stops, with phase
	// Paused. Set it back to false (or remove it) to resume. Paused may be
	// changed at any time.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// Cancel requests cancellation. The operator starts no further step, lets
	// the cloud operation in flight (if any) finish, marks the remaining steps
	// Skipped and ends in phase Cancelled. Completed steps are not rolled
	// back, with one exception: the Nodes of an old node group that the
	// operation cordoned (annotated ops.observability.tidbcloud.com/cordoned-by)
	// are uncordoned before the phase becomes Cancelled; Nodes cordoned by
	// someone else stay cordoned. status.leftBehind then lists what the
	// operation leaves changed. Cancellation is one-way: once true, cancel
	// cannot be set back to false. It has no effect on a finished operation.
	// +optional
	Cancel bool `json:"cancel,omitempty"`

	// MaintenanceWindow is the recurring weekly window the steps start in:
	// a step that changes the cluster (every step but WaitNodesReady), and
	// the preflight, start only inside it; a step already running finishes
	// after it closes. status.nextWindowStart says when the next step may
	// start. Omitted: the operator's default window for the cluster
	// (--maintenance-windows), or none (any time).
	// +optional
	MaintenanceWindow *MaintenanceWindow `json:"maintenanceWindow,omitempty"`

	// Approvals are the gates where the operation stops, in phase
	// AwaitingApproval, until someone approves: BeforeNodeGroups (once,
	// after the control plane and the addons), BeforeEachNodeGroup (before
	// every node group), BeforeDrain (before the drain of every blue-green
	// node group's old nodes).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=3
	Approvals []ApprovalGate `json:"approvals,omitempty"`

	// Approved are the gate ids approved so far: BeforeNodeGroups,
	// BeforeEachNodeGroup/<nodeGroupName>, BeforeDrain/<nodeGroupName>
	// (status.awaitingApproval.gate names the one the operation waits
	// for). A gate may be approved ahead of time; an approval cannot be
	// withdrawn. PUT /ops/api/v1/upgradeOperations/{id}/approve adds to it.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=65
	// +kubebuilder:validation:items:MaxLength=128
	// +kubebuilder:validation:items:Pattern=`^(BeforeNodeGroups|(BeforeEachNodeGroup|BeforeDrain)/[\p{Han}A-Za-z0-9][\p{Han}A-Za-z0-9_-]*)$`
	Approved []string `json:"approved,omitempty"`
}

// ClusterAddon is a cluster addon to update to a version.
type ClusterAddon struct {
	// Name is the addon's name in the cloud, e.g. vpc-cni, coredns,
	// kube-proxy (EKS) or terway-eniip (ACK).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Version is the addon version to update to, e.g. v1.18.5-eksbuild.1.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^v?[0-9]+(\.[0-9]+)*([-+][0-9A-Za-z]+([.-][0-9A-Za-z]+)*)?$`
	Version string `json:"version"`

	// ResolveConflicts says how to resolve conflicts with changes made to the
	// addon in the cluster: NONE, OVERWRITE or PRESERVE. Omitted: the cloud's
	// default.
	// +optional
	ResolveConflicts ResolveConflicts `json:"resolveConflicts,omitempty"`
}

// NodeGroupUpgrade is the upgrade of one node group (node pool) to the
// operation's targetVersion.
//
// +kubebuilder:validation:XValidation:rule="self.strategy != 'blue-green' || has(self.newNodeGroupName)",message="newNodeGroupName is required for strategy blue-green",fieldPath=".newNodeGroupName",reason="FieldValueRequired"
// +kubebuilder:validation:XValidation:rule="self.strategy == 'blue-green' || !has(self.newNodeGroupName)",message="newNodeGroupName is only valid with strategy blue-green",fieldPath=".newNodeGroupName",reason="FieldValueForbidden"
// +kubebuilder:validation:XValidation:rule="!has(self.newNodeGroupName) || self.newNodeGroupName != self.nodeGroupName",message="newNodeGroupName must differ from nodeGroupName",fieldPath=".newNodeGroupName"
// +kubebuilder:validation:XValidation:rule="!has(self.requiresVMStorageRollout) || !self.requiresVMStorageRollout || self.strategy == 'blue-green'",message="requiresVMStorageRollout: true is only valid with strategy blue-green",fieldPath=".requiresVMStorageRollout",reason="FieldValueForbidden"
// +kubebuilder:validation:XValidation:rule="!has(self.vmClusterHelmValues) || (has(self.requiresVMStorageRollout) && self.requiresVMStorageRollout)",message="vmClusterHelmValues requires requiresVMStorageRollout: true",fieldPath=".vmClusterHelmValues",reason="FieldValueForbidden"
// +kubebuilder:validation:XValidation:rule="!has(self.requiresVMStorageRollout) || !self.requiresVMStorageRollout || has(self.vmClusterHelmValues)",message="vmClusterHelmValues is required when requiresVMStorageRollout is true (use {} for no VMCluster change)",fieldPath=".vmClusterHelmValues",reason="FieldValueRequired"
// +kubebuilder:validation:XValidation:rule="!has(self.vmstorageSTSName) || (has(self.requiresVMStorageRollout) && self.requiresVMStorageRollout)",message="vmstorageSTSName requires requiresVMStorageRollout: true",fieldPath=".vmstorageSTSName",reason="FieldValueForbidden"
// +kubebuilder:validation:XValidation:rule="!has(self.vmstorageSTSNamespace) || (has(self.requiresVMStorageRollout) && self.requiresVMStorageRollout)",message="vmstorageSTSNamespace requires requiresVMStorageRollout: true",fieldPath=".vmstorageSTSNamespace",reason="FieldValueForbidden"
// +kubebuilder:validation:XValidation:rule="!has(self.vmCluster) || (has(self.requiresVMStorageRollout) && self.requiresVMStorageRollout)",message="vmCluster requires requiresVMStorageRollout: true",fieldPath=".vmCluster",reason="FieldValueForbidden"
// +kubebuilder:validation:XValidation:rule="!has(self.backupBeforeRollout) || (has(self.requiresVMStorageRollout) && self.requiresVMStorageRollout)",message="backupBeforeRollout requires requiresVMStorageRollout: true",fieldPath=".backupBeforeRollout",reason="FieldValueForbidden"
type NodeGroupUpgrade struct {
	// NodeGroupName is the name of the existing node group (EKS node group,
	// GKE/AKS/ACK node pool) to upgrade, as the cloud names it: EKS 1-63
	// letters, digits, '-' and '_'; GKE 1-40 lowercase letters, digits and
	// '-', starting with a letter; AKS 1-12 lowercase letters and digits,
	// starting with a letter; ACK 1-63 Chinese characters, letters,
	// digits, '-' and '_'; mock a DNS label.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[\p{Han}A-Za-z0-9][\p{Han}A-Za-z0-9_-]*$`
	NodeGroupName string `json:"nodeGroupName"`

	// Strategy is how the node group is upgraded: blue-green (create
	// newNodeGroupName at the target version, move the workloads, delete the
	// old node group) or in-place (the cloud replaces the nodes of the
	// existing node group).
	// +required
	Strategy UpgradeStrategy `json:"strategy"`

	// RequiresVMStorageRollout marks the node group that runs vmstorage: the
	// vmstorage pods are moved to the new node group through the VMCluster
	// (patched with vmClusterHelmValues) rather than by draining the old
	// nodes. Only valid with strategy blue-green, and then vmClusterHelmValues
	// must be present.
	// +optional
	RequiresVMStorageRollout bool `json:"requiresVMStorageRollout,omitempty"`

	// NewNodeGroupName is the node group that a blue-green upgrade creates at
	// the target version. Required for blue-green (there is no generated
	// default), forbidden for in-place, and it must differ from
	// nodeGroupName. The cloud's naming rules of nodeGroupName apply.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[\p{Han}A-Za-z0-9][\p{Han}A-Za-z0-9_-]*$`
	NewNodeGroupName string `json:"newNodeGroupName,omitempty"`

	// VMClusterHelmValues is a partial VMCluster spec merged into VMCluster
	// observability/vmcluster with a JSON merge patch to move vmstorage onto
	// the new node group (for example a new nodeSelector). It is an
	// allowlist: its only key is vmstorage, and below it only nodeSelector,
	// affinity, tolerations, topologySpreadConstraints, replicaCount and
	// resources (the vmstorage placement and size); any other key is
	// refused, naming it. It is not HelmRelease values, and it is not
	// applied during in-place upgrades. Requires requiresVMStorageRollout:
	// true, and a VMStorage rollout requires it to be present:
	// use {} when no VMCluster change is needed.
	// +optional
	VMClusterHelmValues VMClusterHelmValues `json:"vmClusterHelmValues,omitzero"`

	// VMStorageSTSName is the vmstorage StatefulSet whose rollout and pod
	// placement the operator observes during a VMStorage rollout; it is never
	// patched (the VictoriaMetrics operator owns it). Only valid with
	// requiresVMStorageRollout: true. Omitted: vmstorage-<vmCluster name>
	// (vmstorage-vmcluster for the default VMCluster).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	VMStorageSTSName string `json:"vmstorageSTSName,omitempty"`

	// VMStorageSTSNamespace is the namespace of vmstorageSTSName. Only valid
	// with requiresVMStorageRollout: true. Omitted: the vmCluster's namespace
	// (observability for the default VMCluster).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	VMStorageSTSNamespace string `json:"vmstorageSTSNamespace,omitempty"`

	// VMCluster is the VMCluster (operator.victoriametrics.com/v1beta1) a
	// VMStorage rollout patches with vmClusterHelmValues. Only valid with
	// requiresVMStorageRollout: true. Omitted: observability/vmcluster; an
	// omitted namespace is observability. The operator's preflight fails
	// the operation (reason VMClusterNotFound) before any cloud call when it
	// does not exist. When a Flux HelmRelease installs it, the rollout also
	// records vmClusterHelmValues on that HelmRelease (docs/upgrades.md).
	// +optional
	VMCluster *VMClusterReference `json:"vmCluster,omitempty"`

	// BackupBeforeRollout asks for a ClusterBackup of the rolled-out
	// VMCluster before anything of this node group moves: a BackupVMStorage
	// step, first of the node group (before its new node group is created),
	// creates it in the VMCluster's namespace, waits for it to Succeed and
	// records it in the step's backup; a backup that does not Succeed fails
	// the operation. Only valid with requiresVMStorageRollout: true.
	// +optional
	BackupBeforeRollout *BackupBeforeRollout `json:"backupBeforeRollout,omitempty"`
}

// BackupBeforeRollout is the backup a node group upgrade takes before its
// vmstorage rollout.
type BackupBeforeRollout struct {
	// Destination of the backup (see ClusterBackup); a credentials Secret
	// is read from the VMCluster's namespace.
	// +required
	Destination BackupDestination `json:"destination"`
}

// UpgradePhase is the lifecycle phase of a ClusterUpgradeOperation.
// +kubebuilder:validation:Enum=Pending;Scheduled;Running;Paused;AwaitingApproval;Succeeded;Failed;Cancelling;Cancelled
type UpgradePhase string

const (
	// UpgradePhasePending: accepted, the plan is not started yet.
	UpgradePhasePending UpgradePhase = "Pending"
	// UpgradePhaseScheduled: waiting for spec.schedule.
	UpgradePhaseScheduled UpgradePhase = "Scheduled"
	// UpgradePhaseRunning: steps are being carried out.
	UpgradePhaseRunning UpgradePhase = "Running"
	// UpgradePhasePaused: spec.paused is true and no step is in flight.
	UpgradePhasePaused UpgradePhase = "Paused"
	// UpgradePhaseAwaitingApproval: the next step waits behind an
	// approval gate (spec.approvals); status.awaitingApproval names it.
	UpgradePhaseAwaitingApproval UpgradePhase = "AwaitingApproval"
	// UpgradePhaseSucceeded: every step succeeded (terminal).
	UpgradePhaseSucceeded UpgradePhase = "Succeeded"
	// UpgradePhaseFailed: a step failed and the operation stopped (terminal).
	UpgradePhaseFailed UpgradePhase = "Failed"
	// UpgradePhaseCancelling: spec.cancel is true and a step is still in
	// flight.
	UpgradePhaseCancelling UpgradePhase = "Cancelling"
	// UpgradePhaseCancelled: the operation stopped on request (terminal).
	UpgradePhaseCancelled UpgradePhase = "Cancelled"
)

// IsTerminal reports whether the phase is final: Succeeded, Failed or
// Cancelled. A terminal operation is never acted on again.
func (p UpgradePhase) IsTerminal() bool {
	switch p {
	case UpgradePhaseSucceeded, UpgradePhaseFailed, UpgradePhaseCancelled:
		return true
	}
	return false
}

// StepType is the part of the cluster a step changes.
// +kubebuilder:validation:Enum=ControlPlane;Addon;NodeGroup
type StepType string

const (
	// StepTypeControlPlane: the control plane upgrade.
	StepTypeControlPlane StepType = "ControlPlane"
	// StepTypeAddon: the update of one cluster addon.
	StepTypeAddon StepType = "Addon"
	// StepTypeNodeGroup: one step of the upgrade of one node group.
	StepTypeNodeGroup StepType = "NodeGroup"
)

// StepAction is what a step does. The operator's plan decides the actions;
// the constants below are the ones it uses.
type StepAction string

const (
	// ActionUpgradeControlPlane upgrades the control plane to targetVersion.
	ActionUpgradeControlPlane StepAction = "UpgradeControlPlane"
	// ActionUpdateAddon updates a cluster addon to its version.
	ActionUpdateAddon StepAction = "UpdateAddon"
	// ActionUpgradeNodeGroup upgrades a node group in place.
	ActionUpgradeNodeGroup StepAction = "UpgradeNodeGroup"
	// ActionCreateNodeGroup creates the new node group of a blue-green
	// upgrade.
	ActionCreateNodeGroup StepAction = "CreateNodeGroup"
	// ActionWaitNodesReady waits for the new node group's nodes to be Ready.
	ActionWaitNodesReady StepAction = "WaitNodesReady"
	// ActionRolloutVMStorage patches the VMCluster with vmClusterHelmValues
	// and waits for vmstorage to run on the new node group.
	ActionRolloutVMStorage StepAction = "RolloutVMStorage"
	// ActionCordonNodes cordons the old node group's nodes.
	ActionCordonNodes StepAction = "CordonNodes"
	// ActionDrainNodes evicts the pods of the old node group's nodes,
	// respecting PodDisruptionBudgets.
	ActionDrainNodes StepAction = "DrainNodes"
	// ActionDeleteNodeGroup deletes the old node group.
	ActionDeleteNodeGroup StepAction = "DeleteNodeGroup"
	// ActionBackupVMStorage backs up the VMCluster a node group's vmstorage
	// rollout moves (backupBeforeRollout) and waits for the backup to
	// Succeed, before anything of the node group moves.
	ActionBackupVMStorage StepAction = "BackupVMStorage"
)

// StepPhase is the phase of one step.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed;Skipped
type StepPhase string

const (
	// StepPhasePending: not started.
	StepPhasePending StepPhase = "Pending"
	// StepPhaseRunning: started (a cloud operation may be in flight).
	StepPhaseRunning StepPhase = "Running"
	// StepPhaseSucceeded: done.
	StepPhaseSucceeded StepPhase = "Succeeded"
	// StepPhaseFailed: failed; the operation fails with it.
	StepPhaseFailed StepPhase = "Failed"
	// StepPhaseSkipped: not needed (already done in the cloud) or not run
	// because the operation was cancelled or failed earlier.
	StepPhaseSkipped StepPhase = "Skipped"
)

// IsTerminal reports whether the step is finished: Succeeded, Failed or
// Skipped.
func (p StepPhase) IsTerminal() bool {
	switch p {
	case StepPhaseSucceeded, StepPhaseFailed, StepPhaseSkipped:
		return true
	}
	return false
}

// UpgradeStep is one step of the plan in status.steps.
type UpgradeStep struct {
	// ID identifies the step uniquely within the operation:
	// "controlplane", "addon/<name>", or "nodegroup/<nodeGroupName>/<action>"
	// (for example "nodegroup/vmstorage/CreateNodeGroup").
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	ID string `json:"id"`

	// Type is the part of the cluster the step changes: ControlPlane, Addon
	// or NodeGroup.
	// +required
	Type StepType `json:"type"`

	// Action is what the step does, e.g. UpgradeControlPlane, UpdateAddon,
	// CreateNodeGroup, WaitNodesReady, RolloutVMStorage, CordonNodes,
	// DrainNodes, DeleteNodeGroup, UpgradeNodeGroup.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Action StepAction `json:"action"`

	// Target is what the step acts on: the addon or node group name (empty
	// for the control plane).
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Target string `json:"target,omitempty"`

	// Phase is the step's phase: Pending, Running, Succeeded, Failed or
	// Skipped.
	// +required
	Phase StepPhase `json:"phase"`

	// OperationID is the id of the long-running cloud operation the step
	// started and waits on (EKS update id, GKE operation name, AKS resume
	// token, ACK task id). Stored before the operator waits, so that a
	// restarted operator polls it instead of starting the operation again.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	OperationID string `json:"operationID,omitempty"`

	// Backup is the ClusterBackup ("<namespace>/<name>") a BackupVMStorage
	// step created, recorded before it waits for it.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Backup string `json:"backup,omitempty"`

	// Attempts is how many times the step was started.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Attempts int32 `json:"attempts,omitempty"`

	// StartTime is when the step started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the step reached Succeeded, Failed or Skipped.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Message is a human-readable detail of the step's state, e.g. the cloud
	// error of a failed step.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`
}

// ControlPlaneStepID is the id of the control plane step.
const ControlPlaneStepID = "controlplane"

// AddonStepID is the id of the step that updates the named addon.
func AddonStepID(name string) string {
	return "addon/" + name
}

// NodeGroupStepID is the id of the step of the named node group's upgrade
// that performs action.
func NodeGroupStepID(nodeGroupName string, action StepAction) string {
	return "nodegroup/" + nodeGroupName + "/" + string(action)
}

// Reasons for status.blockedBy.reason.
const (
	// BlockedByPodDisruptionBudget: the eviction of a pod is refused by a
	// PodDisruptionBudget.
	BlockedByPodDisruptionBudget = "PodDisruptionBudget"
	// BlockedByNodesNotReady: the new node group's nodes are not Ready.
	BlockedByNodesNotReady = "NodesNotReady"
	// BlockedByVMClusterNotOperational: the VMCluster has not finished its
	// rollout.
	BlockedByVMClusterNotOperational = "VMClusterNotOperational"
)

// NamespacedObjectReference names an object by namespace and name.
type NamespacedObjectReference struct {
	// Namespace of the object.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`

	// Name of the object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// BlockedBy describes what currently keeps a running operation from making
// progress, for example a pod whose eviction a PodDisruptionBudget refuses.
type BlockedBy struct {
	// StepID is the step that is blocked.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	StepID string `json:"stepID,omitempty"`

	// Reason is a CamelCase category: PodDisruptionBudget, NodesNotReady,
	// VMClusterNotOperational, or another one the operator reports.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Reason string `json:"reason"`

	// Message explains the blocker for a human.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`

	// Since is when the blocker was first seen.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`

	// Node is the node concerned, if any.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node,omitempty"`

	// Pod is the pod concerned, if any (e.g. the pod that cannot be evicted).
	// +optional
	Pod *NamespacedObjectReference `json:"pod,omitempty"`

	// PodDisruptionBudget is the PodDisruptionBudget that refuses an
	// eviction, if any.
	// +optional
	PodDisruptionBudget *NamespacedObjectReference `json:"podDisruptionBudget,omitempty"`
}

// CordonedByAnnotation is set on a Node that an operation's CordonNodes
// step cordoned, with the operation's "<namespace>/<name>" as value. A
// cancel uncordons exactly the Nodes that carry its own value; a Node that
// was already cordoned (by a person, or another operation) is not
// annotated and stays cordoned.
const CordonedByAnnotation = "ops.observability.tidbcloud.com/cordoned-by"

// LeftBehindKind is the kind of thing an operation that stopped before its
// end leaves changed in the cluster.
// +kubebuilder:validation:Enum=ControlPlane;Addon;NodeGroup;VMCluster
type LeftBehindKind string

const (
	// LeftBehindControlPlane: the control plane was upgraded; it cannot be
	// downgraded.
	LeftBehindControlPlane LeftBehindKind = "ControlPlane"
	// LeftBehindAddon: a cluster addon was updated.
	LeftBehindAddon LeftBehindKind = "Addon"
	// LeftBehindNodeGroup: a node group was created, upgraded in place,
	// or left next to its replacement.
	LeftBehindNodeGroup LeftBehindKind = "NodeGroup"
	// LeftBehindVMCluster: the VMCluster was patched with
	// vmClusterHelmValues (the vmstorage placement).
	LeftBehindVMCluster LeftBehindKind = "VMCluster"
)

// LeftBehind is one change that an operation which stopped before its end
// (Cancelled or Failed) leaves in the cluster, for a person to decide
// about: keep it, finish the upgrade with a new operation, or undo it by
// hand. docs/upgrades.md lists, per step, what a cancel leaves and what to
// do.
type LeftBehind struct {
	// Kind is what was left: ControlPlane, Addon, NodeGroup or VMCluster.
	// +required
	Kind LeftBehindKind `json:"kind"`

	// Namespace of the object, for a VMCluster.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`

	// Name is the cluster (ControlPlane), addon, node group or VMCluster.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// StepID is the step that made the change.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	StepID string `json:"stepID,omitempty"`

	// Reason says what state the thing is in and why it matters, e.g.
	// "created by step nodegroup/ng1/CreateNodeGroup at 1.30; the old node
	// group ng1 still runs the workloads".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason"`
}

// ClusterUpgradeOperationStatus is the observed state of a
// ClusterUpgradeOperation. It is written by the operator only.
type ClusterUpgradeOperationStatus struct {
	// ObservedGeneration is the last generation the operator fully handled;
	// -1 until then.
	// +optional
	// +kubebuilder:default=-1
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase is the lifecycle phase: Pending, Scheduled, Running, Paused,
	// AwaitingApproval, Succeeded, Failed, Cancelling or Cancelled.
	// +optional
	Phase UpgradePhase `json:"phase,omitempty"`

	// Progress is "<finished>/<total>" steps (succeeded, skipped or
	// failed), e.g. "3/7"; empty until the plan is written.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[0-9]+/[0-9]+$`
	Progress string `json:"progress,omitempty"`

	// ResolvedTargetVersion is the version the steps upgrade to, fixed by
	// the preflight: spec.targetVersion, or on ACK the full version it was
	// resolved to (1.30 → the newest 1.30 version ACK offers the cluster),
	// recorded once so that a restart never resolves it differently.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ResolvedTargetVersion string `json:"resolvedTargetVersion,omitempty"`

	// Conditions are Ready, Reconciling and Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Steps is the ordered plan: the control plane, each addon, then each
	// node group's steps. It is written before the first cloud call and then
	// updated as each step progresses.
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MaxItems=512
	Steps []UpgradeStep `json:"steps,omitempty"`

	// CurrentStep is the id of the step in progress (or the one that failed
	// or is blocked); empty when no step is.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	CurrentStep string `json:"currentStep,omitempty"`

	// StartTime is when the first step started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the operation reached a terminal phase.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// BlockedBy is what currently keeps the operation from making progress;
	// absent when nothing does.
	// +optional
	BlockedBy *BlockedBy `json:"blockedBy,omitempty"`

	// LeftBehind lists what an operation that ended Cancelled or Failed
	// leaves changed in the cluster (a created node group, a patched
	// VMCluster, an upgraded control plane), in step order, so that a
	// person can decide what to do with it. Nodes that the operation
	// cordoned are uncordoned by a cancel and are not listed. Empty for a
	// Succeeded operation.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	LeftBehind []LeftBehind `json:"leftBehind,omitempty"`

	// MaintenanceWindow is the window the operator applies (the spec's, or
	// its default for the cluster) with its source; absent when none.
	// +optional
	MaintenanceWindow *EffectiveMaintenanceWindow `json:"maintenanceWindow,omitempty"`

	// NextWindowStart is when the next step may start: set while the
	// operation waits outside its maintenance window (condition reason
	// OutsideMaintenanceWindow).
	// +optional
	NextWindowStart *metav1.Time `json:"nextWindowStart,omitempty"`

	// AwaitingApproval is the gate the operation stops at in phase
	// AwaitingApproval: what was done and what comes next.
	// +optional
	AwaitingApproval *AwaitingApproval `json:"awaitingApproval,omitempty"`

	// Preflight is the report of the checks run before the first step
	// (see PreflightReport); a fail ends the operation Failed before any
	// change, warnings are kept here.
	// +optional
	Preflight *PreflightReport `json:"preflight,omitempty"`
}

// Step returns the step with the given id, or nil.
func (s *ClusterUpgradeOperationStatus) Step(id string) *UpgradeStep {
	for i := range s.Steps {
		if s.Steps[i].ID == id {
			return &s.Steps[i]
		}
	}
	return nil
}

// ClusterUpgradeOperation upgrades a managed Kubernetes cluster (EKS, GKE,
// AKS, ACK or the mock cloud): its control plane, then its addons, then its
// node groups, in place or blue-green, moving vmstorage through the VMCluster
// when a node group runs it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cuo,categories=ops
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.k8sClusterName`
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.cloudProvider`,priority=1
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.targetVersion`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Progress",type=string,JSONPath=`.status.progress`
// +kubebuilder:printcolumn:name="Step",type=string,JSONPath=`.status.currentStep`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:selectablefield:JSONPath=`.spec.k8sClusterName`
type ClusterUpgradeOperation struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the upgrade request.
	// +required
	Spec ClusterUpgradeOperationSpec `json:"spec"`

	// Status is the progress of the upgrade, written by the operator.
	// +optional
	// +kubebuilder:default={"observedGeneration":-1}
	Status ClusterUpgradeOperationStatus `json:"status,omitempty"`
}

// ClusterUpgradeOperationList is a list of ClusterUpgradeOperations.
//
// +kubebuilder:object:root=true
type ClusterUpgradeOperationList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the ClusterUpgradeOperations.
	Items []ClusterUpgradeOperation `json:"items"`
}
