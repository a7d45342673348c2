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

// Default fills in the defaults of a ClusterUpgradeOperationSpec that a CRD
// cannot express because they depend on other fields. It is the one place
// these defaults are decided:
//
//   - for a node group with requiresVMStorageRollout: true, an omitted
//     vmCluster becomes VMClusterNamespace/VMClusterName
//     ("observability/vmcluster") and an omitted vmCluster.namespace
//     VMClusterNamespace; an empty vmstorageSTSName becomes the StatefulSet
//     the VictoriaMetrics operator creates for that VMCluster
//     ("vmstorage-<vmCluster.name>", DefaultVMStorageSTSName for the
//     default VMCluster) and an empty vmstorageSTSNamespace the VMCluster's
//     namespace;
//   - other node groups are left alone (the CRD forbids these fields
//     there).
//
// ops-apiserver calls it before creating an object, so REST clients see the
// defaults in the stored object. Objects applied with kubectl are stored as
// written; ops-operator reads the same values through
// NodeGroupUpgrade.RolloutVMCluster and NodeGroupUpgrade.VMStorageStatefulSet,
// which apply the same defaults. Default is idempotent and never overwrites
// a value that is set.
func (s *ClusterUpgradeOperationSpec) Default() {
	for i := range s.NodeGroupUpgrades {
		s.NodeGroupUpgrades[i].Default()
	}
}

// Default fills in vmCluster, vmstorageSTSName and vmstorageSTSNamespace for
// a VMStorage rollout; see ClusterUpgradeOperationSpec.Default.
func (n *NodeGroupUpgrade) Default() {
	if !n.RequiresVMStorageRollout {
		return
	}
	n.VMStorageSTSNamespace, n.VMStorageSTSName = n.VMStorageStatefulSet()
	ns, name := n.RolloutVMCluster()
	n.VMCluster = &VMClusterReference{Namespace: ns, Name: name}
}

// RolloutVMCluster returns the namespace and name of the VMCluster this node
// group's VMStorage rollout patches, with the defaults of Default applied.
// Both are empty when the node group has no VMStorage rollout.
func (n NodeGroupUpgrade) RolloutVMCluster() (namespace, name string) {
	if !n.RequiresVMStorageRollout {
		return "", ""
	}
	if n.VMCluster == nil {
		return VMClusterNamespace, VMClusterName
	}
	namespace, name = n.VMCluster.Namespace, n.VMCluster.Name
	if namespace == "" {
		namespace = VMClusterNamespace
	}
	return namespace, name
}

// VMStorageStatefulSet returns the namespace and name of the vmstorage
// StatefulSet observed during this node group's VMStorage rollout, with the
// defaults of Default applied. Both are empty when the node group has no
// VMStorage rollout.
func (n NodeGroupUpgrade) VMStorageStatefulSet() (namespace, name string) {
	if !n.RequiresVMStorageRollout {
		return "", ""
	}
	vmcNamespace, vmcName := n.RolloutVMCluster()
	namespace, name = n.VMStorageSTSNamespace, n.VMStorageSTSName
	if namespace == "" {
		namespace = vmcNamespace
	}
	if name == "" {
		name = "vmstorage-" + vmcName
	}
	return namespace, name
}

// RollsOut reports whether a VMStorage rollout of the spec targets the
// VMCluster namespace/name (see RolloutVMCluster). ops-apiserver (what a
// vmcluster DELETE must wait for) and ops-operator (what a backup waits
// for) both decide with it.
func (s *ClusterUpgradeOperationSpec) RollsOut(namespace, name string) bool {
	for _, ng := range s.NodeGroupUpgrades {
		if ns, n := ng.RolloutVMCluster(); n != "" && ns == namespace && n == name {
			return true
		}
	}
	return false
}

// NodeGroupUpgradeOf returns the node group upgrade a node-group step of
// the plan belongs to, or nil.
func (s *ClusterUpgradeOperationSpec) NodeGroupUpgradeOf(step *UpgradeStep) *NodeGroupUpgrade {
	for i := range s.NodeGroupUpgrades {
		if step.ID == NodeGroupStepID(s.NodeGroupUpgrades[i].NodeGroupName, step.Action) {
			return &s.NodeGroupUpgrades[i]
		}
	}
	return nil
}
