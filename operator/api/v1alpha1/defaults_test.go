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
	"reflect"
	"testing"
)

func TestSpecDefault(t *testing.T) {
	values := VMClusterHelmValues{}
	tests := []struct {
		name string
		in   []NodeGroupUpgrade
		want []NodeGroupUpgrade
	}{
		{
			name: "no node groups",
		},
		{
			name: "in-place node group is left alone",
			in:   []NodeGroupUpgrade{{NodeGroupName: "ng", Strategy: StrategyInPlace}},
			want: []NodeGroupUpgrade{{NodeGroupName: "ng", Strategy: StrategyInPlace}},
		},
		{
			name: "blue-green without VMStorage rollout is left alone",
			in:   []NodeGroupUpgrade{{NodeGroupName: "ng", Strategy: StrategyBlueGreen, NewNodeGroupName: "ng2"}},
			want: []NodeGroupUpgrade{{NodeGroupName: "ng", Strategy: StrategyBlueGreen, NewNodeGroupName: "ng2"}},
		},
		{
			name: "VMStorage rollout gets both defaults",
			in: []NodeGroupUpgrade{{NodeGroupName: "vmstorage", Strategy: StrategyBlueGreen, NewNodeGroupName: "vmstorage-130",
				RequiresVMStorageRollout: true, VMClusterHelmValues: values}},
			want: []NodeGroupUpgrade{{NodeGroupName: "vmstorage", Strategy: StrategyBlueGreen, NewNodeGroupName: "vmstorage-130",
				RequiresVMStorageRollout: true, VMClusterHelmValues: values,
				VMStorageSTSName: "vmstorage-vmcluster", VMStorageSTSNamespace: "observability", VMCluster: &VMClusterReference{Namespace: "observability", Name: "vmcluster"}}},
		},
		{
			name: "explicit name is kept, namespace defaulted",
			in:   []NodeGroupUpgrade{{NodeGroupName: "v", RequiresVMStorageRollout: true, VMStorageSTSName: "vmstorage-main"}},
			want: []NodeGroupUpgrade{{NodeGroupName: "v", RequiresVMStorageRollout: true, VMStorageSTSName: "vmstorage-main", VMStorageSTSNamespace: "observability", VMCluster: &VMClusterReference{Namespace: "observability", Name: "vmcluster"}}},
		},
		{
			name: "explicit namespace is kept, name defaulted",
			in:   []NodeGroupUpgrade{{NodeGroupName: "v", RequiresVMStorageRollout: true, VMStorageSTSNamespace: "monitoring"}},
			want: []NodeGroupUpgrade{{NodeGroupName: "v", RequiresVMStorageRollout: true, VMStorageSTSName: "vmstorage-vmcluster", VMStorageSTSNamespace: "monitoring", VMCluster: &VMClusterReference{Namespace: "observability", Name: "vmcluster"}}},
		},
		{
			name: "explicit vmCluster names the StatefulSet and its namespace",
			in:   []NodeGroupUpgrade{{NodeGroupName: "v", RequiresVMStorageRollout: true, VMCluster: &VMClusterReference{Namespace: "monitoring", Name: "metrics"}}},
			want: []NodeGroupUpgrade{{NodeGroupName: "v", RequiresVMStorageRollout: true, VMStorageSTSName: "vmstorage-metrics", VMStorageSTSNamespace: "monitoring",
				VMCluster: &VMClusterReference{Namespace: "monitoring", Name: "metrics"}}},
		},
		{
			name: "vmCluster without namespace gets observability",
			in:   []NodeGroupUpgrade{{NodeGroupName: "v", RequiresVMStorageRollout: true, VMCluster: &VMClusterReference{Name: "metrics"}}},
			want: []NodeGroupUpgrade{{NodeGroupName: "v", RequiresVMStorageRollout: true, VMStorageSTSName: "vmstorage-metrics", VMStorageSTSNamespace: "observability",
				VMCluster: &VMClusterReference{Namespace: "observability", Name: "metrics"}}},
		},
		{
			name: "every node group is defaulted",
			in: []NodeGroupUpgrade{
				{NodeGroupName: "a", Strategy: StrategyInPlace},
				{NodeGroupName: "b", RequiresVMStorageRollout: true},
			},
			want: []NodeGroupUpgrade{
				{NodeGroupName: "a", Strategy: StrategyInPlace},
				{NodeGroupName: "b", RequiresVMStorageRollout: true, VMStorageSTSName: DefaultVMStorageSTSName, VMStorageSTSNamespace: DefaultVMStorageSTSNamespace,
					VMCluster: &VMClusterReference{Namespace: VMClusterNamespace, Name: VMClusterName}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := &ClusterUpgradeOperationSpec{K8sClusterName: "c", NodeGroupUpgrades: tt.in}
			spec.Default()
			if !reflect.DeepEqual(spec.NodeGroupUpgrades, tt.want) {
				t.Errorf("Default() node groups = %+v, want %+v", spec.NodeGroupUpgrades, tt.want)
			}
			if spec.K8sClusterName != "c" {
				t.Errorf("Default() changed k8sClusterName to %q", spec.K8sClusterName)
			}
		})
	}
}

func TestVMStorageStatefulSet(t *testing.T) {
	tests := []struct {
		name             string
		in               NodeGroupUpgrade
		wantNS, wantName string
	}{
		{name: "no rollout", in: NodeGroupUpgrade{VMStorageSTSName: "x", VMStorageSTSNamespace: "y"}},
		{name: "rollout, defaults", in: NodeGroupUpgrade{RequiresVMStorageRollout: true},
			wantNS: "observability", wantName: "vmstorage-vmcluster"},
		{name: "rollout, explicit", in: NodeGroupUpgrade{RequiresVMStorageRollout: true, VMStorageSTSName: "s", VMStorageSTSNamespace: "n"},
			wantNS: "n", wantName: "s"},
		{name: "rollout, vmCluster named", in: NodeGroupUpgrade{RequiresVMStorageRollout: true, VMCluster: &VMClusterReference{Name: "metrics"}},
			wantNS: "observability", wantName: "vmstorage-metrics"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns, name := tt.in.VMStorageStatefulSet()
			if ns != tt.wantNS || name != tt.wantName {
				t.Errorf("VMStorageStatefulSet() = %q, %q; want %q, %q", ns, name, tt.wantNS, tt.wantName)
			}
		})
	}
}

// FuzzDefault checks the properties of Default on arbitrary node groups: it
// never overwrites a set value, only touches VMStorage rollouts, fills both
// fields for them, agrees with VMStorageStatefulSet, and is idempotent.
func FuzzDefault(f *testing.F) {
	f.Add("vmstorage", true, "", "")
	f.Add("vmstorage", true, "vmstorage-main", "")
	f.Add("ng", false, "", "monitoring")
	f.Add("", true, "s", "n")
	f.Fuzz(func(t *testing.T, name string, rollout bool, stsName, stsNamespace string) {
		in := NodeGroupUpgrade{
			NodeGroupName:            name,
			RequiresVMStorageRollout: rollout,
			VMStorageSTSName:         stsName,
			VMStorageSTSNamespace:    stsNamespace,
		}
		wantNS, wantName := in.VMStorageStatefulSet()

		spec := ClusterUpgradeOperationSpec{NodeGroupUpgrades: []NodeGroupUpgrade{in}}
		spec.Default()
		got := spec.NodeGroupUpgrades[0]

		if got.NodeGroupName != name || got.RequiresVMStorageRollout != rollout {
			t.Fatalf("Default changed unrelated fields: %+v", got)
		}
		if !rollout {
			if !reflect.DeepEqual(got, in) {
				t.Fatalf("Default changed a node group without VMStorage rollout: %+v -> %+v", in, got)
			}
			if wantNS != "" || wantName != "" {
				t.Fatalf("VMStorageStatefulSet() = %q, %q without VMStorage rollout", wantNS, wantName)
			}
			return
		}
		if got.VMStorageSTSName == "" || got.VMStorageSTSNamespace == "" {
			t.Fatalf("Default left a VMStorage rollout without StatefulSet: %+v", got)
		}
		if stsName != "" && got.VMStorageSTSName != stsName {
			t.Fatalf("Default overwrote vmstorageSTSName %q with %q", stsName, got.VMStorageSTSName)
		}
		if stsNamespace != "" && got.VMStorageSTSNamespace != stsNamespace {
			t.Fatalf("Default overwrote vmstorageSTSNamespace %q with %q", stsNamespace, got.VMStorageSTSNamespace)
		}
		if got.VMStorageSTSNamespace != wantNS || got.VMStorageSTSName != wantName {
			t.Fatalf("Default stored %q/%q, VMStorageStatefulSet said %q/%q", got.VMStorageSTSNamespace, got.VMStorageSTSName, wantNS, wantName)
		}
		again := spec.DeepCopy()
		again.Default()
		if !reflect.DeepEqual(again, &spec) {
			t.Fatalf("Default is not idempotent: %+v -> %+v", spec, *again)
		}
	})
}
