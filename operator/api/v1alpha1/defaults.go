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
//   - for a node group with requiresVMStorageRollout: true, an empty
//     vmstorageSTSName becomes DefaultVMStorageSTSName
//     ("vmstorage-vmcluster") and an empty vmstorageSTSNamespace becomes
//     DefaultVMStorageSTSNamespace ("observability");
//   - other node groups are left alone (the CRD forbids the two fields
//     there).
//
// ops-apiserver calls it before creating an object, so REST clients see the
// defaults in the stored object. Objects applied with kubectl are stored as
// written; ops-operator reads the same values through
// NodeGroupUpgrade.VMStorageStatefulSet, which applies the same defaults.
// Default is idempotent and never overwrites a value that is set.
func (s *ClusterUpgradeOperationSpec) Default() {
	for i := range s.NodeGroupUpgrades {
		s.NodeGroupUpgrades[i].Default()
	}
}

// Default fills in vmstorageSTSName and vmstorageSTSNamespace for a VMStorage
// rollout; see ClusterUpgradeOperationSpec.Default.
func (n *NodeGroupUpgrade) Default() {
	if !n.RequiresVMStorageRollout {
		return
	}
	n.VMStorageSTSNamespace, n.VMStorageSTSName = n.VMStorageStatefulSet()
}

// VMStorageStatefulSet returns the namespace and name of the vmstorage
// StatefulSet observed during this node group's VMStorage rollout, with the
// defaults of Default applied. Both are empty when the node group has no
// VMStorage rollout.
func (n NodeGroupUpgrade) VMStorageStatefulSet() (namespace, name string) {
	if !n.RequiresVMStorageRollout {
		return "", ""
	}
	namespace, name = n.VMStorageSTSNamespace, n.VMStorageSTSName
	if namespace == "" {
		namespace = DefaultVMStorageSTSNamespace
	}
	if name == "" {
		name = DefaultVMStorageSTSName
	}
	return namespace, name
}
