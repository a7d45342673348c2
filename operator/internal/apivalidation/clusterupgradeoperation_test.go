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

package apivalidation

import (
	"fmt"
	"testing"

	"github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// seedRequest is the upgrade request of the design document, verbatim.
const seedRequest = `{
  "k8sClusterName": "my-eks-cluster",
  "region": "us-west-2",
  "cloudProvider": "eks",
  "targetVersion": "1.30",
  "schedule": "2026-05-06T12:00:00Z",
  "clusterAddons": [
    {"name": "vpc-cni", "version": "v1.18.5-eksbuild.1", "resolveConflicts": "PRESERVE"}
  ],
  "nodeGroupUpgrades": [
    {"nodeGroupName": "observability-ng", "strategy": "in-place", "requiresVMStorageRollout": false}
  ]
}`

// seedVMStorageNodeGroup is the VMStorage blue-green entry of the design
// document, verbatim.
const seedVMStorageNodeGroup = `{
  "nodeGroupName": "vmstorage",
  "strategy": "blue-green",
  "requiresVMStorageRollout": true,
  "newNodeGroupName": "vmstorage-130",
  "vmClusterHelmValues": {"vmstorage": {"replicaCount": 3}}
}`

func upgradeSpec() obj { return mustJSON(seedRequest) }

func vmstorageNG() obj { return mustJSON(seedVMStorageNodeGroup) }

// ng0 is the path of the first node group upgrade.
const ng0 = "spec.nodeGroupUpgrades[0]"

// setNodeGroups replaces the node group list.
func setNodeGroups(entries ...obj) func(obj) {
	return func(s obj) {
		l := make([]any, len(entries))
		for i, e := range entries {
			l[i] = e
		}
		s["nodeGroupUpgrades"] = l
	}
}

// vmstorageWith is the seed's VMStorage entry changed by f.
func vmstorageWith(f func(n obj)) obj {
	n := vmstorageNG()
	f(n)
	return n
}

// setFirstNodeGroup sets key of the seed's (in-place) node group to v.
func setFirstNodeGroup(key string, v any) func(obj) {
	return func(s obj) { item(s, "nodeGroupUpgrades", 0)[key] = v }
}

// manyNodeGroups returns n distinct in-place node groups.
func manyNodeGroups(n int) []obj {
	l := make([]obj, n)
	for i := range l {
		l[i] = obj{"nodeGroupName": fmt.Sprintf("ng-%d", i), "strategy": "in-place"}
	}
	return l
}

func TestClusterUpgradeOperationCreate(t *testing.T) {
	cases := []specCase{
		// The design document's examples.
		{name: "seed request", mutate: nil},
		{name: "seed VMStorage blue-green entry", mutate: setNodeGroups(vmstorageNG())},
		{name: "both seed node groups", mutate: func(s obj) {
			s["nodeGroupUpgrades"] = append(list(s, "nodeGroupUpgrades"), vmstorageNG())
		}},
		{name: "minimal: control plane only", mutate: func(s obj) {
			delete(s, "schedule")
			delete(s, "clusterAddons")
			delete(s, "nodeGroupUpgrades")
		}},

		// Required fields, present and non-empty.
		{name: "k8sClusterName missing", mutate: func(s obj) { delete(s, "k8sClusterName") },
			reject: rejected("spec.k8sClusterName", "Required value")},
		{name: "k8sClusterName empty", mutate: func(s obj) { s["k8sClusterName"] = "" },
			reject: rejected("spec.k8sClusterName", "at least 1 chars long")},
		{name: "region missing", mutate: func(s obj) { delete(s, "region") },
			reject: rejected("spec.region", "Required value")},
		{name: "region empty", mutate: func(s obj) { s["region"] = "" },
			reject: rejected("spec.region", "at least 1 chars long")},
		{name: "cloudProvider missing", mutate: func(s obj) { delete(s, "cloudProvider") },
			reject: rejected("spec.cloudProvider", "Required value")},
		{name: "targetVersion missing", mutate: func(s obj) { delete(s, "targetVersion") },
			reject: rejected("spec.targetVersion", "Required value")},
		{name: "targetVersion empty", mutate: func(s obj) { s["targetVersion"] = "" },
			reject: rejected("spec.targetVersion", "at least 1 chars long")},
		{name: "nodeGroupName missing", mutate: func(s obj) { delete(item(s, "nodeGroupUpgrades", 0), "nodeGroupName") },
			reject: rejected(ng0+".nodeGroupName", "Required value")},
		{name: "nodeGroupName empty", mutate: setFirstNodeGroup("nodeGroupName", ""),
			reject: rejected(ng0+".nodeGroupName", "at least 1 chars long")},
		{name: "strategy missing", mutate: func(s obj) { delete(item(s, "nodeGroupUpgrades", 0), "strategy") },
			reject: rejected(ng0+".strategy", "Required value")},
		{name: "addon name missing", mutate: func(s obj) { delete(item(s, "clusterAddons", 0), "name") },
			reject: rejected("spec.clusterAddons[0].name", "Required value")},
		{name: "addon version missing", mutate: func(s obj) { delete(item(s, "clusterAddons", 0), "version") },
			reject: rejected("spec.clusterAddons[0].version", "Required value")},
		{name: "addon version empty", mutate: func(s obj) { item(s, "clusterAddons", 0)["version"] = "" },
			reject: rejected("spec.clusterAddons[0].version", "at least 1 chars long")},

		// cloudProvider and strategy enums.
		{name: "cloudProvider gke", mutate: func(s obj) { s["cloudProvider"] = "gke"; delete(s, "clusterAddons") }},
		{name: "cloudProvider aks", mutate: func(s obj) {
			s["cloudProvider"] = "aks"
			delete(s, "clusterAddons")
			item(s, "nodeGroupUpgrades", 0)["nodeGroupName"] = "obsng"
		}},
		{name: "cloudProvider ack", mutate: func(s obj) { s["cloudProvider"] = "ack"; delete(item(s, "clusterAddons", 0), "resolveConflicts") }},
		{name: "cloudProvider mock", mutate: func(s obj) { s["cloudProvider"] = "mock" }},
		{name: "cloudProvider unknown", mutate: func(s obj) { s["cloudProvider"] = "azure" },
			reject: rejected("spec.cloudProvider", `Unsupported value: "azure"`)},
		{name: "cloudProvider upper case", mutate: func(s obj) { s["cloudProvider"] = "EKS" },
			reject: rejected("spec.cloudProvider", `Unsupported value: "EKS"`)},
		{name: "strategy unknown", mutate: setFirstNodeGroup("strategy", "rolling"),
			reject: rejected(ng0+".strategy", `Unsupported value: "rolling"`)},
		{name: "resolveConflicts OVERWRITE", mutate: func(s obj) { item(s, "clusterAddons", 0)["resolveConflicts"] = "OVERWRITE" }},
		{name: "resolveConflicts omitted", mutate: func(s obj) { delete(item(s, "clusterAddons", 0), "resolveConflicts") }},
		{name: "resolveConflicts unknown", mutate: func(s obj) { item(s, "clusterAddons", 0)["resolveConflicts"] = "MERGE" },
			reject: rejected("spec.clusterAddons[0].resolveConflicts", `Unsupported value: "MERGE"`)},

		// clusterAddons only with eks, ack and mock.
		{name: "clusterAddons with gke", mutate: func(s obj) { s["cloudProvider"] = "gke" },
			reject: rejected("spec.clusterAddons", "clusterAddons is only supported with cloudProvider eks, ack or mock")},
		{name: "clusterAddons with aks", mutate: func(s obj) { s["cloudProvider"] = "aks" },
			reject: rejected("spec.clusterAddons", "clusterAddons is only supported with cloudProvider eks, ack or mock")},
		{name: "empty clusterAddons with gke", mutate: func(s obj) { s["cloudProvider"] = "gke"; s["clusterAddons"] = []any{} }},

		// requiresVMStorageRollout only with blue-green.
		{name: "requiresVMStorageRollout false with in-place", mutate: setFirstNodeGroup("requiresVMStorageRollout", false)},
		{name: "requiresVMStorageRollout with in-place", mutate: setNodeGroups(vmstorageWith(func(n obj) {
			n["strategy"] = "in-place"
			delete(n, "newNodeGroupName")
		})), reject: rejected(ng0+".requiresVMStorageRollout", "requiresVMStorageRollout: true is only valid with strategy blue-green")},
		{name: "blue-green without VMStorage rollout", mutate: setNodeGroups(obj{
			"nodeGroupName": "workers", "strategy": "blue-green", "newNodeGroupName": "workers-130",
		})},

		// vmClusterHelmValues <=> requiresVMStorageRollout.
		{name: "vmClusterHelmValues empty object", mutate: setNodeGroups(vmstorageWith(func(n obj) { n["vmClusterHelmValues"] = obj{} }))},
		{name: "vmClusterHelmValues nested object kept", mutate: setNodeGroups(vmstorageWith(func(n obj) {
			n["vmClusterHelmValues"] = mustJSON(`{"vmstorage": {"nodeSelector": {"eks.amazonaws.com/nodegroup": "vmstorage-130"}, "tolerations": [{"key": "dedicated", "operator": "Exists"}]}}`)
		}))},
		{name: "vmClusterHelmValues every allowed key", mutate: setNodeGroups(vmstorageWith(func(n obj) {
			n["vmClusterHelmValues"] = mustJSON(`{"vmstorage": {"nodeSelector": {"a": "b"}, "affinity": {"nodeAffinity": {}}, "tolerations": [],
				"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}], "replicaCount": 3,
				"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}}`)
		}))},
		// vmClusterHelmValues is an allowlist: another component is refused,
		// naming it, not pruned (vmstorage's own fields: see
		// TestVMClusterHelmValuesAllowlistMatchesGo).
		{name: "vmClusterHelmValues another component", mutate: setNodeGroups(vmstorageWith(func(n obj) {
			n["vmClusterHelmValues"] = mustJSON(`{"vmstorage": {}, "vminsert": {"replicaCount": 1}}`)
		})), reject: rejected(ng0+".vmClusterHelmValues", "may only set vmstorage")},
		{name: "vmClusterHelmValues a top-level scalar", mutate: setNodeGroups(vmstorageWith(func(n obj) {
			n["vmClusterHelmValues"] = mustJSON(`{"clusterVersion": {"x": 1}}`)
		})), reject: rejected(ng0+".vmClusterHelmValues", "may only set vmstorage")},
		{name: "vmClusterHelmValues vmstorage a string", mutate: setNodeGroups(vmstorageWith(func(n obj) {
			n["vmClusterHelmValues"] = mustJSON(`{"vmstorage": "replicaCount: 3"}`)
		})), reject: rejected(ng0+".vmClusterHelmValues.vmstorage", "must be of type object")},
		{name: "vmClusterHelmValues replicaCount 0", mutate: setNodeGroups(vmstorageWith(func(n obj) {
			n["vmClusterHelmValues"] = mustJSON(`{"vmstorage": {"replicaCount": 0}}`)
		})), reject: rejected(ng0+".vmClusterHelmValues.vmstorage.replicaCount", "should be greater than or equal to 1")},
		{name: "vmClusterHelmValues missing for VMStorage rollout", mutate: setNodeGroups(vmstorageWith(func(n obj) { delete(n, "vmClusterHelmValues") })),
			reject: rejected(ng0+".vmClusterHelmValues", "vmClusterHelmValues is required when requiresVMStorageRollout is true")},
		{name: "vmClusterHelmValues without requiresVMStorageRollout", mutate: setNodeGroups(vmstorageWith(func(n obj) { delete(n, "requiresVMStorageRollout") })),
			reject: rejected(ng0+".vmClusterHelmValues", "vmClusterHelmValues requires requiresVMStorageRollout: true")},
		{name: "vmClusterHelmValues with requiresVMStorageRollout false", mutate: setNodeGroups(vmstorageWith(func(n obj) { n["requiresVMStorageRollout"] = false })),
			reject: rejected(ng0+".vmClusterHelmValues", "vmClusterHelmValues requires requiresVMStorageRollout: true")},
		{name: "vmClusterHelmValues on in-place", mutate: setFirstNodeGroup("vmClusterHelmValues", obj{}),
			reject: rejected(ng0+".vmClusterHelmValues", "vmClusterHelmValues requires requiresVMStorageRollout: true")},
		{name: "vmClusterHelmValues an array", mutate: setNodeGroups(vmstorageWith(func(n obj) { n["vmClusterHelmValues"] = []any{"a"} })),
			reject: rejected(ng0+".vmClusterHelmValues", "must be of type object")},
		{name: "vmClusterHelmValues a string", mutate: setNodeGroups(vmstorageWith(func(n obj) { n["vmClusterHelmValues"] = "replicaCount: 3" })),
			reject: rejected(ng0+".vmClusterHelmValues", "must be of type object")},

		// blue-green needs a newNodeGroupName that differs; in-place has none.
		{name: "blue-green without newNodeGroupName", mutate: setNodeGroups(vmstorageWith(func(n obj) { delete(n, "newNodeGroupName") })),
			reject: rejected(ng0+".newNodeGroupName", "newNodeGroupName is required for strategy blue-green")},
		{name: "blue-green with newNodeGroupName equal to nodeGroupName", mutate: setNodeGroups(vmstorageWith(func(n obj) { n["newNodeGroupName"] = "vmstorage" })),
			reject: rejected(ng0+".newNodeGroupName", "newNodeGroupName must differ from nodeGroupName")},
		{name: "in-place with newNodeGroupName", mutate: setFirstNodeGroup("newNodeGroupName", "observability-ng-2"),
			reject: rejected(ng0+".newNodeGroupName", "newNodeGroupName is only valid with strategy blue-green")},
		{name: "blue-green newNodeGroupName empty", mutate: setNodeGroups(vmstorageWith(func(n obj) { n["newNodeGroupName"] = "" })),
			reject: rejected(ng0+".newNodeGroupName", "at least 1 chars long")},

		// vmstorageSTSName / vmstorageSTSNamespace only for a VMStorage rollout.
		{name: "vmstorage StatefulSet given for VMStorage rollout", mutate: setNodeGroups(vmstorageWith(func(n obj) {
			n["vmstorageSTSName"] = "vmstorage-main"
			n["vmstorageSTSNamespace"] = "monitoring"
		}))},
		{name: "vmstorageSTSName without VMStorage rollout", mutate: setFirstNodeGroup("vmstorageSTSName", "vmstorage-main"),
			reject: rejected(ng0+".vmstorageSTSName", "vmstorageSTSName requires requiresVMStorageRollout: true")},
		{name: "vmstorageSTSNamespace without VMStorage rollout", mutate: setFirstNodeGroup("vmstorageSTSNamespace", "monitoring"),
			reject: rejected(ng0+".vmstorageSTSNamespace", "vmstorageSTSNamespace requires requiresVMStorageRollout: true")},
		{name: "vmstorageSTSName not a DNS label", mutate: setNodeGroups(vmstorageWith(func(n obj) { n["vmstorageSTSName"] = "VMStorage" })),
			reject: rejected(ng0+".vmstorageSTSName", "should match")},
		{name: "vmstorageSTSNamespace not a DNS label", mutate: setNodeGroups(vmstorageWith(func(n obj) { n["vmstorageSTSNamespace"] = "obs_ns" })),
			reject: rejected(ng0+".vmstorageSTSNamespace", "should match")},

		// vmCluster names the rollout target, only for a VMStorage rollout.
		{name: "vmCluster given for VMStorage rollout", mutate: setNodeGroups(vmstorageWith(func(n obj) {
			n["vmCluster"] = obj{"namespace": "monitoring", "name": "metrics"}
		}))},
		{name: "vmCluster without namespace", mutate: setNodeGroups(vmstorageWith(func(n obj) { n["vmCluster"] = obj{"name": "metrics"} }))},
		{name: "vmCluster without VMStorage rollout", mutate: setFirstNodeGroup("vmCluster", obj{"name": "metrics"}),
			reject: rejected(ng0+".vmCluster", "vmCluster requires requiresVMStorageRollout: true")},
		{name: "vmCluster without name", mutate: setNodeGroups(vmstorageWith(func(n obj) { n["vmCluster"] = obj{"namespace": "monitoring"} })),
			reject: rejected(ng0+".vmCluster.name", "Required value")},
		{name: "vmCluster name not a DNS label", mutate: setNodeGroups(vmstorageWith(func(n obj) { n["vmCluster"] = obj{"name": "Metrics"} })),
			reject: rejected(ng0+".vmCluster.name", "should match")},

		// Names: what no cloud allows (each cloud's own rules: cloudnames_test.go).
		{name: "k8sClusterName with space", mutate: func(s obj) { s["k8sClusterName"] = "my cluster" },
			reject: rejected("spec.k8sClusterName", "should match")},
		{name: "k8sClusterName starting with underscore", mutate: func(s obj) { s["k8sClusterName"] = "_cluster" },
			reject: rejected("spec.k8sClusterName", "should match")},
		{name: "region with space", mutate: func(s obj) { s["region"] = "us west 2" },
			reject: rejected("spec.region", "should match")},
		{name: "nodeGroupName with dot", mutate: setFirstNodeGroup("nodeGroupName", "observability.ng"),
			reject: rejected(ng0+".nodeGroupName", "should match")},
		{name: "newNodeGroupName with slash", mutate: setNodeGroups(vmstorageWith(func(n obj) { n["newNodeGroupName"] = "vmstorage/130" })),
			reject: rejected(ng0+".newNodeGroupName", "should match")},
		{name: "addon name upper case", mutate: func(s obj) { item(s, "clusterAddons", 0)["name"] = "VPC-CNI" },
			reject: rejected("spec.clusterAddons[0].name", "should match")},

		// Versions are well-formed.
		{name: "targetVersion major.minor.patch", mutate: func(s obj) { s["targetVersion"] = "1.30.4" }},
		{name: "targetVersion ACK full version", mutate: func(s obj) {
			s["cloudProvider"], s["targetVersion"] = "ack", "1.31.1-aliyun.1"
			delete(item(s, "clusterAddons", 0), "resolveConflicts")
		}},
		{name: "targetVersion with v prefix", mutate: func(s obj) { s["targetVersion"] = "v1.30" },
			reject: rejected("spec.targetVersion", "should match")},
		{name: "targetVersion major only", mutate: func(s obj) { s["targetVersion"] = "1" },
			reject: rejected("spec.targetVersion", "should match")},
		{name: "targetVersion latest", mutate: func(s obj) { s["targetVersion"] = "latest" },
			reject: rejected("spec.targetVersion", "should match")},
		{name: "targetVersion trailing dot", mutate: func(s obj) { s["targetVersion"] = "1.30." },
			reject: rejected("spec.targetVersion", "should match")},
		{name: "addon version without v", mutate: func(s obj) { item(s, "clusterAddons", 0)["version"] = "1.11.1" }},
		{name: "addon version ACK style", mutate: func(s obj) {
			s["cloudProvider"] = "ack"
			s["clusterAddons"] = []any{obj{"name": "terway-eniip", "version": "v1.9.3.10-7dfca203-aliyun"}}
		}},
		{name: "addon version latest", mutate: func(s obj) { item(s, "clusterAddons", 0)["version"] = "latest" },
			reject: rejected("spec.clusterAddons[0].version", "should match")},
		{name: "addon version double dot", mutate: func(s obj) { item(s, "clusterAddons", 0)["version"] = "v1..18" },
			reject: rejected("spec.clusterAddons[0].version", "should match")},

		// schedule is a time.
		{name: "schedule not a time", mutate: func(s obj) { s["schedule"] = "tomorrow" },
			reject: rejected("spec.schedule", "date-time")},

		// Node group and addon names are unique; new node group names too.
		{name: "duplicate nodeGroupName", mutate: setNodeGroups(
			obj{"nodeGroupName": "a", "strategy": "in-place"},
			obj{"nodeGroupName": "a", "strategy": "in-place"}),
			reject: rejected("spec.nodeGroupUpgrades[1]", "Duplicate value")},
		{name: "duplicate addon name", mutate: func(s obj) {
			s["clusterAddons"] = append(list(s, "clusterAddons"), obj{"name": "vpc-cni", "version": "v1.19.0-eksbuild.1"})
		}, reject: rejected("spec.clusterAddons[1]", "Duplicate value")},
		{name: "two blue-green node groups", mutate: setNodeGroups(
			obj{"nodeGroupName": "a", "strategy": "blue-green", "newNodeGroupName": "a2"},
			obj{"nodeGroupName": "b", "strategy": "blue-green", "newNodeGroupName": "b2"})},
		{name: "duplicate newNodeGroupName", mutate: setNodeGroups(
			obj{"nodeGroupName": "a", "strategy": "blue-green", "newNodeGroupName": "c"},
			obj{"nodeGroupName": "b", "strategy": "blue-green", "newNodeGroupName": "c"}),
			reject: rejected("spec.nodeGroupUpgrades", "newNodeGroupName must be unique")},
		{name: "newNodeGroupName names another entry", mutate: setNodeGroups(
			obj{"nodeGroupName": "a", "strategy": "blue-green", "newNodeGroupName": "b"},
			obj{"nodeGroupName": "b", "strategy": "in-place"}),
			reject: rejected("spec.nodeGroupUpgrades", "must not be the nodeGroupName of an entry")},

		// Provider limits on the node group a blue-green upgrade creates.
		{name: "aks newNodeGroupName within limits", mutate: func(s obj) {
			s["cloudProvider"] = "aks"
			delete(s, "clusterAddons")
			setNodeGroups(vmstorageWith(func(n obj) { n["newNodeGroupName"] = "vmstorage130" }))(s)
		}},
		{name: "aks newNodeGroupName with dash", mutate: func(s obj) {
			s["cloudProvider"] = "aks"
			delete(s, "clusterAddons")
			setNodeGroups(vmstorageNG())(s)
		}, reject: rejected("spec.nodeGroupUpgrades", "newNodeGroupName must be 1 to 12 lowercase letters and digits")},
		{name: "aks newNodeGroupName too long", mutate: func(s obj) {
			s["cloudProvider"] = "aks"
			delete(s, "clusterAddons")
			setNodeGroups(vmstorageWith(func(n obj) { n["newNodeGroupName"] = "vmstorage1301" }))(s)
		}, reject: rejected("spec.nodeGroupUpgrades", "for cloudProvider aks")},
		{name: "gke newNodeGroupName 40 characters", mutate: func(s obj) {
			s["cloudProvider"] = "gke"
			delete(s, "clusterAddons")
			setNodeGroups(vmstorageWith(func(n obj) { n["newNodeGroupName"] = "v" + repeat('a', 39) }))(s)
		}},
		{name: "gke newNodeGroupName 41 characters", mutate: func(s obj) {
			s["cloudProvider"] = "gke"
			delete(s, "clusterAddons")
			setNodeGroups(vmstorageWith(func(n obj) { n["newNodeGroupName"] = "v" + repeat('a', 40) }))(s)
		}, reject: rejected("spec.nodeGroupUpgrades", "for cloudProvider gke")},
		{name: "gke newNodeGroupName starting with a digit", mutate: func(s obj) {
			s["cloudProvider"] = "gke"
			delete(s, "clusterAddons")
			setNodeGroups(vmstorageWith(func(n obj) { n["newNodeGroupName"] = "130-vmstorage" }))(s)
		}, reject: rejected("spec.nodeGroupUpgrades", "for cloudProvider gke")},

		// Bounded lengths and list sizes.
		{name: "k8sClusterName 100 characters", mutate: func(s obj) { s["k8sClusterName"] = repeat('a', 100) }},
		{name: "k8sClusterName 101 characters", mutate: func(s obj) { s["k8sClusterName"] = repeat('a', 101) },
			reject: rejected("spec.k8sClusterName", "Too long")},
		{name: "region 64 characters", mutate: func(s obj) { s["region"] = repeat('a', 64) },
			reject: rejected("spec.region", "Too long")},
		{name: "nodeGroupName 63 characters", mutate: setFirstNodeGroup("nodeGroupName", repeat('n', 63))},
		{name: "nodeGroupName 64 characters", mutate: setFirstNodeGroup("nodeGroupName", repeat('n', 64)),
			reject: rejected(ng0+".nodeGroupName", "Too long")},
		{name: "targetVersion 65 characters", mutate: func(s obj) { s["targetVersion"] = "1.30-" + repeat('a', 60) },
			reject: rejected("spec.targetVersion", "Too long")},
		{name: "addon version 129 characters", mutate: func(s obj) { item(s, "clusterAddons", 0)["version"] = "v1-" + repeat('a', 126) },
			reject: rejected("spec.clusterAddons[0].version", "Too long")},
		{name: "32 node groups", mutate: setNodeGroups(manyNodeGroups(32)...)},
		{name: "33 node groups", mutate: setNodeGroups(manyNodeGroups(33)...),
			reject: rejected("spec.nodeGroupUpgrades", "Too many")},
		{name: "33 addons", mutate: func(s obj) {
			l := make([]any, 33)
			for i := range l {
				l[i] = obj{"name": fmt.Sprintf("addon-%d", i), "version": "v1.0.0"}
			}
			s["clusterAddons"] = l
		}, reject: rejected("spec.clusterAddons", "Too many")},

		// paused and cancel may be set at creation.
		{name: "created paused", mutate: func(s obj) { s["paused"] = true }},
		{name: "created cancelled", mutate: func(s obj) { s["cancel"] = true }},
	}
	runCreateCases(t, v1alpha1.ClusterUpgradeOperationKind, upgradeSpec, cases)
}
