// Package upgradestest holds the upgrade requests the REST validation
// refuses, shared by the validation's own table test
// (apiserver/internal/upgrades) and the GitOps parity test
// (apiserver/test/parity), which applies each as a ClusterUpgradeOperation
// and expects the same refusal from the API server or the operator.
package upgradestest

import (
	"encoding/json"
	"strings"
)

// ValidBody is a valid upgrade request (EKS, the seed's shape).
const ValidBody = `{
  "k8sClusterName": "my-eks-cluster",
  "region": "us-west-2",
  "cloudProvider": "eks",
  "targetVersion": "1.30",
  "schedule": "2026-05-06T12:00:00Z",
  "clusterAddons": [{"name": "vpc-cni", "version": "v1.18.5-eksbuild.1", "resolveConflicts": "PRESERVE"}],
  "nodeGroupUpgrades": [
    {"nodeGroupName": "observability-ng", "strategy": "in-place", "requiresVMStorageRollout": false},
    {"nodeGroupName": "vmstorage", "strategy": "blue-green", "requiresVMStorageRollout": true,
     "newNodeGroupName": "vmstorage-130", "vmClusterHelmValues": {"vmstorage": {"replicaCount": 3}}}
  ]
}`

// Mutate returns ValidBody changed by fn (on a generic JSON map).
func Mutate(fn func(m map[string]any)) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(ValidBody), &m); err != nil {
		panic(err)
	}
	fn(m)
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// NodeGroup is the i-th entry of nodeGroupUpgrades of a request map.
func NodeGroup(m map[string]any, i int) map[string]any {
	return m["nodeGroupUpgrades"].([]any)[i].(map[string]any)
}

// OnCloud returns a request for provider with the cluster and node-group
// names given (in-place upgrades of nodeGroups, or a blue-green upgrade of
// nodeGroups[0] to newNodeGroup when it is set), without addons.
func OnCloud(provider, cluster, newNodeGroup string, nodeGroups ...string) string {
	return Mutate(func(m map[string]any) {
		m["cloudProvider"], m["k8sClusterName"] = provider, cluster
		delete(m, "clusterAddons")
		var list []any
		for i, n := range nodeGroups {
			e := map[string]any{"nodeGroupName": n, "strategy": "in-place"}
			if i == 0 && newNodeGroup != "" {
				e["strategy"], e["newNodeGroupName"] = "blue-green", newNodeGroup
			}
			list = append(list, e)
		}
		m["nodeGroupUpgrades"] = list
	})
}

// ValidNames are real-world cluster and node-group names each cloud
// accepts (see opsv1.ClusterNameRule): the REST API and the CRD accept
// each request.
func ValidNames() []Invalid {
	return []Invalid{
		{"eks: upper case and underscores", OnCloud("eks", "Prod_Cluster-01", "NG_blue-02", "NG_blue-01"), ""},
		{"eks: 100-character cluster name", OnCloud("eks", "A"+strings.Repeat("b_", 49)+"c", "", "ng"), ""},
		{"eks: node group ending in '-'", OnCloud("eks", "prod", "", "workers-"), ""},
		{"gke: lowercase with dashes", OnCloud("gke", "prod-cluster-1", "pool-130", "default-pool"), ""},
		{"gke: 40-character names", OnCloud("gke", "g"+strings.Repeat("k", 39), "", "p"+strings.Repeat("o", 39)), ""},
		{"aks: mixed case and underscore", OnCloud("aks", "myAKS_cluster", "userpool2", "userpool1"), ""},
		{"aks: 12-character pool", OnCloud("aks", "a", "", "nodepool1234"), ""},
		{"ack: Chinese characters", OnCloud("ack", "生产集群-01", "新节点池", "默认节点池"), ""},
		{"ack: letters and underscores", OnCloud("ack", "Prod_ACK", "pool_131", "pool_130"), ""},
		{"ack: 63 Chinese characters", OnCloud("ack", strings.Repeat("集", 63), "", strings.Repeat("池", 63)), ""},
		{"mock: DNS labels", OnCloud("mock", "dev-cluster", "vmstorage-130", "vmstorage"), ""},
		{"a maintenance window and every approval gate", Mutate(func(m map[string]any) {
			m["maintenanceWindow"] = ValidWindow()
			m["approvals"] = []any{"BeforeNodeGroups", "BeforeEachNodeGroup", "BeforeDrain"}
		}), ""},
		{"a week-long window in UTC", WithWindow(map[string]any{"duration": "168h", "timeZone": "UTC", "days": []any{"Monday"}}), ""},
	}
}

// Invalid is a request the REST validation refuses with a field
// violation on Field.
type Invalid struct {
	Name  string
	Body  string
	Field string
}

// InvalidRequests is the table of the issue: every seed rule, every
// required field, wrong JSON types, unknown provider or strategy, a bad
// schedule, a bad version, duplicate node groups, each cloud's naming
// rules — each a 400 naming the field.
func InvalidRequests() []Invalid {
	return []Invalid{
		{"empty body", ``, "body"},
		{"not an object", `[1,2]`, "body"},
		{"malformed JSON", `{"k8sClusterName": `, "body"},
		{"trailing data", ValidBody + `{}`, "body"},
		{"unknown field", Mutate(func(m map[string]any) { m["targetVersoin"] = "1.30" }), "targetVersoin"},
		{"wrong type: region number", Mutate(func(m map[string]any) { m["region"] = 5 }), "region"},
		{"wrong type: requiresVMStorageRollout string", Mutate(func(m map[string]any) { NodeGroup(m, 0)["requiresVMStorageRollout"] = "no" }), "nodeGroupUpgrades.requiresVMStorageRollout"},
		{"wrong type: nodeGroupUpgrades object", Mutate(func(m map[string]any) { m["nodeGroupUpgrades"] = map[string]any{} }), "nodeGroupUpgrades"},
		{"missing k8sClusterName", Mutate(func(m map[string]any) { delete(m, "k8sClusterName") }), "k8sClusterName"},
		{"bad k8sClusterName", Mutate(func(m map[string]any) { m["k8sClusterName"] = "My Cluster" }), "k8sClusterName"},
		{"missing region", Mutate(func(m map[string]any) { delete(m, "region") }), "region"},
		{"missing cloudProvider", Mutate(func(m map[string]any) { delete(m, "cloudProvider") }), "cloudProvider"},
		{"unknown cloudProvider", Mutate(func(m map[string]any) { m["cloudProvider"] = "openstack" }), "cloudProvider"},
		{"missing targetVersion", Mutate(func(m map[string]any) { delete(m, "targetVersion") }), "targetVersion"},
		{"bad targetVersion", Mutate(func(m map[string]any) { m["targetVersion"] = "v1.30-latest!" }), "targetVersion"},
		{"bad schedule", Mutate(func(m map[string]any) { m["schedule"] = "tomorrow at noon" }), "schedule"},
		{"addons on gke", Mutate(func(m map[string]any) { m["cloudProvider"] = "gke" }), "clusterAddons"},
		{"addons on aks", Mutate(func(m map[string]any) { m["cloudProvider"] = "aks" }), "clusterAddons"},
		{"addon without version", Mutate(func(m map[string]any) { delete(m["clusterAddons"].([]any)[0].(map[string]any), "version") }), "clusterAddons[0].version"},
		{"addon bad version", Mutate(func(m map[string]any) { m["clusterAddons"].([]any)[0].(map[string]any)["version"] = "latest" }), "clusterAddons[0].version"},
		{"addon bad resolveConflicts", Mutate(func(m map[string]any) {
			m["clusterAddons"].([]any)[0].(map[string]any)["resolveConflicts"] = "MERGE"
		}), "clusterAddons[0].resolveConflicts"},
		{"ack version with a foreign suffix", Mutate(func(m map[string]any) {
			m["cloudProvider"], m["targetVersion"] = "ack", "1.30.1-eks.1"
			delete(m, "clusterAddons")
		}), "targetVersion"},
		{"resolveConflicts on ack", Mutate(func(m map[string]any) { m["cloudProvider"] = "ack" }), "clusterAddons[0].resolveConflicts"},
		{"duplicate addon", Mutate(func(m map[string]any) {
			m["clusterAddons"] = append(m["clusterAddons"].([]any), map[string]any{"name": "vpc-cni", "version": "v1.0.0"})
		}), "clusterAddons[1].name"},
		{"missing nodeGroupName", Mutate(func(m map[string]any) { delete(NodeGroup(m, 0), "nodeGroupName") }), "nodeGroupUpgrades[0].nodeGroupName"},
		{"missing strategy", Mutate(func(m map[string]any) { delete(NodeGroup(m, 0), "strategy") }), "nodeGroupUpgrades[0].strategy"},
		{"unknown strategy", Mutate(func(m map[string]any) { NodeGroup(m, 0)["strategy"] = "rolling" }), "nodeGroupUpgrades[0].strategy"},
		{"duplicate node group", Mutate(func(m map[string]any) { NodeGroup(m, 1)["nodeGroupName"] = "observability-ng" }), "nodeGroupUpgrades[1].nodeGroupName"},
		{"rollout with in-place", Mutate(func(m map[string]any) {
			NodeGroup(m, 0)["requiresVMStorageRollout"] = true
			NodeGroup(m, 0)["vmClusterHelmValues"] = map[string]any{}
		}), "nodeGroupUpgrades[0].requiresVMStorageRollout"},
		{"helm values without rollout", Mutate(func(m map[string]any) { NodeGroup(m, 1)["requiresVMStorageRollout"] = false }), "nodeGroupUpgrades[1].vmClusterHelmValues"},
		{"vmCluster without rollout", Mutate(func(m map[string]any) { NodeGroup(m, 0)["vmCluster"] = "metrics" }), "nodeGroupUpgrades[0].vmCluster"},
		{"backup gate without rollout", Mutate(func(m map[string]any) {
			NodeGroup(m, 0)["backupBeforeRollout"] = map[string]any{"destination": map[string]any{"url": "s3://b/p"}}
		}), "nodeGroupUpgrades[0].backupBeforeRollout"},
		{"backup gate without url", Mutate(func(m map[string]any) {
			NodeGroup(m, 1)["backupBeforeRollout"] = map[string]any{"destination": map[string]any{}}
		}), "nodeGroupUpgrades[1].backupBeforeRollout.destination.url"},
		{"backup gate bad url", Mutate(func(m map[string]any) {
			NodeGroup(m, 1)["backupBeforeRollout"] = map[string]any{"destination": map[string]any{"url": "http://b/p"}}
		}), "nodeGroupUpgrades[1].backupBeforeRollout.destination.url"},
		{"backup gate fs with credentials", Mutate(func(m map[string]any) {
			NodeGroup(m, 1)["backupBeforeRollout"] = map[string]any{"destination": map[string]any{"url": "fs:///b", "credentialsSecretRef": map[string]any{"name": "x"}}}
		}), "nodeGroupUpgrades[1].backupBeforeRollout.destination.credentialsSecretRef"},
		{"rollout without helm values", Mutate(func(m map[string]any) { delete(NodeGroup(m, 1), "vmClusterHelmValues") }), "nodeGroupUpgrades[1].vmClusterHelmValues"},
		{"helm values not an object", Mutate(func(m map[string]any) { NodeGroup(m, 1)["vmClusterHelmValues"] = []any{1} }), "nodeGroupUpgrades[1].vmClusterHelmValues"},
		{"blue-green without new name", Mutate(func(m map[string]any) { delete(NodeGroup(m, 1), "newNodeGroupName") }), "nodeGroupUpgrades[1].newNodeGroupName"},
		{"new name equals old", Mutate(func(m map[string]any) { NodeGroup(m, 1)["newNodeGroupName"] = "vmstorage" }), "nodeGroupUpgrades[1].newNodeGroupName"},
		{"new name on in-place", Mutate(func(m map[string]any) { NodeGroup(m, 0)["newNodeGroupName"] = "x" }), "nodeGroupUpgrades[0].newNodeGroupName"},
		{"aks pool name", Mutate(func(m map[string]any) { m["cloudProvider"] = "aks"; delete(m, "clusterAddons") }), "nodeGroupUpgrades[1].newNodeGroupName"},
		{"sts name without rollout", Mutate(func(m map[string]any) { NodeGroup(m, 0)["vmstorageSTSName"] = "x" }), "nodeGroupUpgrades[0].vmstorageSTSName"},
		{"bad sts namespace", Mutate(func(m map[string]any) { NodeGroup(m, 1)["vmstorageSTSNamespace"] = "Bad_NS" }), "nodeGroupUpgrades[1].vmstorageSTSNamespace"},
		{"too many node groups", Mutate(func(m map[string]any) {
			var list []any
			for i := 0; i < 33; i++ {
				list = append(list, map[string]any{"nodeGroupName": "ng-" + strings.Repeat("a", i%5+1) + string(rune('a'+i%26)), "strategy": "in-place"})
			}
			m["nodeGroupUpgrades"] = list
		}), "nodeGroupUpgrades"},
		// Each cloud's naming rules.
		{"eks: cluster name starting with '-'", OnCloud("eks", "-prod", "", "ng"), "k8sClusterName"},
		{"eks: cluster name of 101 characters", OnCloud("eks", "a"+strings.Repeat("b", 100), "", "ng"), "k8sClusterName"},
		{"eks: node group name with a dot", OnCloud("eks", "prod", "", "ng.v2"), "nodeGroupUpgrades[0].nodeGroupName"},
		{"eks: node group name of 64 characters", OnCloud("eks", "prod", "", "n"+strings.Repeat("g", 63)), "nodeGroupUpgrades[0].nodeGroupName"},
		{"eks: new node group starting with '_'", OnCloud("eks", "prod", "_blue", "ng"), "nodeGroupUpgrades[0].newNodeGroupName"},
		{"gke: cluster name with upper case", OnCloud("gke", "Prod-Cluster", "", "pool"), "k8sClusterName"},
		{"gke: cluster name with underscore", OnCloud("gke", "prod_cluster", "", "pool"), "k8sClusterName"},
		{"gke: cluster name of 41 characters", OnCloud("gke", "g"+strings.Repeat("k", 40), "", "pool"), "k8sClusterName"},
		{"gke: node pool starting with a digit", OnCloud("gke", "prod", "", "1pool"), "nodeGroupUpgrades[0].nodeGroupName"},
		{"gke: new node pool ending in '-'", OnCloud("gke", "prod", "pool-", "pool"), "nodeGroupUpgrades[0].newNodeGroupName"},
		{"aks: cluster name ending in '_'", OnCloud("aks", "myAKS_", "", "pool"), "k8sClusterName"},
		{"aks: cluster name with a dot", OnCloud("aks", "my.aks", "", "pool"), "k8sClusterName"},
		{"aks: pool name with '-'", OnCloud("aks", "myAKS", "", "user-pool"), "nodeGroupUpgrades[0].nodeGroupName"},
		{"aks: pool name of 13 characters", OnCloud("aks", "myAKS", "", "nodepool12345"), "nodeGroupUpgrades[0].nodeGroupName"},
		{"aks: new pool with upper case", OnCloud("aks", "myAKS", "Pool2", "pool1"), "nodeGroupUpgrades[0].newNodeGroupName"},
		{"ack: cluster name starting with '-'", OnCloud("ack", "-集群", "", "pool"), "k8sClusterName"},
		{"ack: cluster name with a dot", OnCloud("ack", "prod.cluster", "", "pool"), "k8sClusterName"},
		{"ack: node pool name with a space", OnCloud("ack", "prod", "", "pool one"), "nodeGroupUpgrades[0].nodeGroupName"},
		{"ack: cluster name of 64 Chinese characters", OnCloud("ack", strings.Repeat("集", 64), "", "pool"), "k8sClusterName"},
		{"mock: cluster name with upper case", OnCloud("mock", "Dev_Cluster", "", "ng"), "k8sClusterName"},
		{"mock: node group with underscore", OnCloud("mock", "dev", "", "ng_1"), "nodeGroupUpgrades[0].nodeGroupName"},
		// Maintenance windows and approval gates.
		{"window longer than a week", WithWindow(map[string]any{"duration": "169h"}), "maintenanceWindow.duration"},
		{"window of seconds", WithWindow(map[string]any{"duration": "30s"}), "maintenanceWindow.duration"},
		{"window start 24:00", WithWindow(map[string]any{"start": "24:00"}), "maintenanceWindow.start"},
		{"window day abbreviated", WithWindow(map[string]any{"days": []any{"Mon"}}), "maintenanceWindow.days"},
		{"window without days", WithWindow(map[string]any{"days": []any{}}), "maintenanceWindow.days"},
		{"unknown approval gate", Mutate(func(m map[string]any) { m["approvals"] = []any{"BeforeEverything"} }), "approvals[0]"},
		{"approval gate twice", Mutate(func(m map[string]any) { m["approvals"] = []any{"BeforeDrain", "BeforeDrain"} }), "approvals[1]"},
	}
}

// ValidWindow is a valid maintenanceWindow of a request.
func ValidWindow() map[string]any {
	return map[string]any{"days": []any{"Saturday", "Sunday"}, "start": "02:00", "duration": "4h", "timeZone": "Europe/Berlin"}
}

// WithWindow returns ValidBody with ValidWindow changed by the fields given.
func WithWindow(fields map[string]any) string {
	return Mutate(func(m map[string]any) {
		w := ValidWindow()
		for k, v := range fields {
			w[k] = v
		}
		m["maintenanceWindow"] = w
	})
}

// RefusedByPreflight are requests the REST API refuses and the CRD cannot
// (admission knows no time zones): applied as CRs they are accepted, and
// ops-operator's preflight fails them with the REST API's words
// (operator/internal/controller/upgrade,
// TestMaintenanceWindowDefaultAndUnknownTimeZone).
func RefusedByPreflight() []Invalid {
	return []Invalid{
		{"unknown time zone", WithWindow(map[string]any{"timeZone": "Mars/Olympus_Mons"}), "maintenanceWindow.timeZone"},
	}
}
