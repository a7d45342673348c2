package upgrades

import (
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

const validBody = `{
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

// mutate returns validBody changed by fn (on a generic JSON map).
func mutate(t *testing.T, fn func(m map[string]any)) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(validBody), &m); err != nil {
		t.Fatal(err)
	}
	fn(m)
	b, _ := json.Marshal(m)
	return string(b)
}

func ng(m map[string]any, i int) map[string]any {
	return m["nodeGroupUpgrades"].([]any)[i].(map[string]any)
}

func TestDecodeValid(t *testing.T) {
	g := NewWithT(t)
	req, err := Decode([]byte(validBody))
	g.Expect(err).To(BeNil())
	g.Expect(req.NodeGroupUpgrades).To(HaveLen(2))
	spec := toSpec(req)
	ns, name := spec.NodeGroupUpgrades[1].VMStorageStatefulSet()
	g.Expect([]string{ns, name}).To(Equal([]string{"observability", "vmstorage-vmcluster"}), "defaults applied")
	g.Expect(spec.NodeGroupUpgrades[1].VMStorageSTSName).To(Equal("vmstorage-vmcluster"))
	g.Expect(spec.NodeGroupUpgrades[0].VMStorageSTSName).To(BeEmpty(), "no defaults without a rollout")
	g.Expect(*spec.NodeGroupUpgrades[1].VMClusterHelmValues["vmstorage"].ReplicaCount).To(Equal(int32(3)))
	g.Expect(fromSpec(&spec).NodeGroupUpgrades[1].VMClusterHelmValues).To(MatchJSON(`{"vmstorage":{"replicaCount":3}}`))
	g.Expect(spec.Schedule.UTC().Format("2006-01-02T15:04:05Z")).To(Equal("2026-05-06T12:00:00Z"))
}

// TestDecodeInvalid is the table of the issue: every seed rule, every
// required field, wrong JSON types, unknown provider or strategy, a bad
// schedule, a bad version, duplicate node groups — each a 400 naming the
// field.
func TestDecodeInvalid(t *testing.T) {
	cases := []struct {
		name  string
		body  string
		field string
	}{
		{"empty body", ``, "body"},
		{"not an object", `[1,2]`, "body"},
		{"malformed JSON", `{"k8sClusterName": `, "body"},
		{"trailing data", validBody + `{}`, "body"},
		{"unknown field", mutate(t, func(m map[string]any) { m["targetVersoin"] = "1.30" }), "targetVersoin"},
		{"wrong type: region number", mutate(t, func(m map[string]any) { m["region"] = 5 }), "region"},
		{"wrong type: requiresVMStorageRollout string", mutate(t, func(m map[string]any) { ng(m, 0)["requiresVMStorageRollout"] = "no" }), "nodeGroupUpgrades.requiresVMStorageRollout"},
		{"wrong type: nodeGroupUpgrades object", mutate(t, func(m map[string]any) { m["nodeGroupUpgrades"] = map[string]any{} }), "nodeGroupUpgrades"},
		{"missing k8sClusterName", mutate(t, func(m map[string]any) { delete(m, "k8sClusterName") }), "k8sClusterName"},
		{"bad k8sClusterName", mutate(t, func(m map[string]any) { m["k8sClusterName"] = "My_Cluster" }), "k8sClusterName"},
		{"missing region", mutate(t, func(m map[string]any) { delete(m, "region") }), "region"},
		{"missing cloudProvider", mutate(t, func(m map[string]any) { delete(m, "cloudProvider") }), "cloudProvider"},
		{"unknown cloudProvider", mutate(t, func(m map[string]any) { m["cloudProvider"] = "openstack" }), "cloudProvider"},
		{"missing targetVersion", mutate(t, func(m map[string]any) { delete(m, "targetVersion") }), "targetVersion"},
		{"bad targetVersion", mutate(t, func(m map[string]any) { m["targetVersion"] = "v1.30-latest!" }), "targetVersion"},
		{"bad schedule", mutate(t, func(m map[string]any) { m["schedule"] = "tomorrow at noon" }), "schedule"},
		{"addons on gke", mutate(t, func(m map[string]any) { m["cloudProvider"] = "gke" }), "clusterAddons"},
		{"addons on aks", mutate(t, func(m map[string]any) { m["cloudProvider"] = "aks" }), "clusterAddons"},
		{"addon without version", mutate(t, func(m map[string]any) { delete(m["clusterAddons"].([]any)[0].(map[string]any), "version") }), "clusterAddons[0].version"},
		{"addon bad version", mutate(t, func(m map[string]any) { m["clusterAddons"].([]any)[0].(map[string]any)["version"] = "latest" }), "clusterAddons[0].version"},
		{"addon bad resolveConflicts", mutate(t, func(m map[string]any) {
			m["clusterAddons"].([]any)[0].(map[string]any)["resolveConflicts"] = "MERGE"
		}), "clusterAddons[0].resolveConflicts"},
		{"ack version with a foreign suffix", mutate(t, func(m map[string]any) {
			m["cloudProvider"], m["targetVersion"] = "ack", "1.30.1-eks.1"
			delete(m, "clusterAddons")
		}), "targetVersion"},
		{"resolveConflicts on ack", mutate(t, func(m map[string]any) { m["cloudProvider"] = "ack" }), "clusterAddons[0].resolveConflicts"},
		{"duplicate addon", mutate(t, func(m map[string]any) {
			m["clusterAddons"] = append(m["clusterAddons"].([]any), map[string]any{"name": "vpc-cni", "version": "v1.0.0"})
		}), "clusterAddons[1].name"},
		{"missing nodeGroupName", mutate(t, func(m map[string]any) { delete(ng(m, 0), "nodeGroupName") }), "nodeGroupUpgrades[0].nodeGroupName"},
		{"missing strategy", mutate(t, func(m map[string]any) { delete(ng(m, 0), "strategy") }), "nodeGroupUpgrades[0].strategy"},
		{"unknown strategy", mutate(t, func(m map[string]any) { ng(m, 0)["strategy"] = "rolling" }), "nodeGroupUpgrades[0].strategy"},
		{"duplicate node group", mutate(t, func(m map[string]any) { ng(m, 1)["nodeGroupName"] = "observability-ng" }), "nodeGroupUpgrades[1].nodeGroupName"},
		{"rollout with in-place", mutate(t, func(m map[string]any) {
			ng(m, 0)["requiresVMStorageRollout"] = true
			ng(m, 0)["vmClusterHelmValues"] = map[string]any{}
		}), "nodeGroupUpgrades[0].requiresVMStorageRollout"},
		{"helm values without rollout", mutate(t, func(m map[string]any) { ng(m, 1)["requiresVMStorageRollout"] = false }), "nodeGroupUpgrades[1].vmClusterHelmValues"},
		{"vmCluster without rollout", mutate(t, func(m map[string]any) { ng(m, 0)["vmCluster"] = "metrics" }), "nodeGroupUpgrades[0].vmCluster"},
		{"wrong type: vmCluster object", mutate(t, func(m map[string]any) { ng(m, 1)["vmCluster"] = map[string]any{"name": "metrics"} }), "nodeGroupUpgrades.vmCluster"},
		{"rollout without helm values", mutate(t, func(m map[string]any) { delete(ng(m, 1), "vmClusterHelmValues") }), "nodeGroupUpgrades[1].vmClusterHelmValues"},
		{"helm values not an object", mutate(t, func(m map[string]any) { ng(m, 1)["vmClusterHelmValues"] = []any{1} }), "nodeGroupUpgrades[1].vmClusterHelmValues"},
		{"blue-green without new name", mutate(t, func(m map[string]any) { delete(ng(m, 1), "newNodeGroupName") }), "nodeGroupUpgrades[1].newNodeGroupName"},
		{"new name equals old", mutate(t, func(m map[string]any) { ng(m, 1)["newNodeGroupName"] = "vmstorage" }), "nodeGroupUpgrades[1].newNodeGroupName"},
		{"new name on in-place", mutate(t, func(m map[string]any) { ng(m, 0)["newNodeGroupName"] = "x" }), "nodeGroupUpgrades[0].newNodeGroupName"},
		{"aks pool name", mutate(t, func(m map[string]any) { m["cloudProvider"] = "aks"; delete(m, "clusterAddons") }), "nodeGroupUpgrades[1].newNodeGroupName"},
		{"sts name without rollout", mutate(t, func(m map[string]any) { ng(m, 0)["vmstorageSTSName"] = "x" }), "nodeGroupUpgrades[0].vmstorageSTSName"},
		{"bad sts namespace", mutate(t, func(m map[string]any) { ng(m, 1)["vmstorageSTSNamespace"] = "Bad_NS" }), "nodeGroupUpgrades[1].vmstorageSTSNamespace"},
		{"too many node groups", mutate(t, func(m map[string]any) {
			var list []any
			for i := 0; i < 33; i++ {
				list = append(list, map[string]any{"nodeGroupName": "ng-" + strings.Repeat("a", i%5+1) + string(rune('a'+i%26)), "strategy": "in-place"})
			}
			m["nodeGroupUpgrades"] = list
		}), "nodeGroupUpgrades"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Decode([]byte(tc.body))
			g.Expect(err).NotTo(BeNil())
			g.Expect(err.Code).To(Equal(400))
			var fields []string
			for _, v := range err.Violations {
				fields = append(fields, v.Field)
				g.Expect(v.Description).NotTo(BeEmpty())
			}
			g.Expect(fields).To(ContainElement(tc.field), "violations: %+v", err.Violations)
		})
	}
}

// TestHelmValuesAllowlist: vmClusterHelmValues is an allowlist (the
// vmstorage placement and size); every key outside it is one violation
// naming its path, and nothing else is reported.
func TestHelmValuesAllowlist(t *testing.T) {
	const f = "nodeGroupUpgrades[1].vmClusterHelmValues"
	cases := []struct {
		name   string
		values string
		want   []string // the violations' fields; none: accepted
	}{
		{name: "empty", values: `{}`},
		{name: "every allowed key", values: `{"vmstorage":{"nodeSelector":{"k":"v"},"affinity":{"nodeAffinity":{}},"tolerations":[{"key":"k","operator":"Exists"}],"topologySpreadConstraints":[],"replicaCount":3,"resources":{"requests":{"cpu":"1"}}}}`},
		{name: "service account", values: `{"vmstorage":{"serviceAccountName":"ops-operator"}}`, want: []string{f + ".vmstorage.serviceAccountName"}},
		{name: "host network and containers", values: `{"vmstorage":{"hostNetwork":true,"containers":[{"name":"x"}],"replicaCount":2}}`,
			want: []string{f + ".vmstorage.containers", f + ".vmstorage.hostNetwork"}},
		{name: "another component", values: `{"vmselect":{"replicaCount":1}}`, want: []string{f + ".vmselect"}},
		{name: "a top-level scalar", values: `{"clusterVersion":"v1.0.0"}`, want: []string{f + ".clusterVersion"}},
		{name: "vmstorage not an object", values: `{"vmstorage":"replicaCount: 3"}`, want: []string{f + ".vmstorage"}},
		{name: "vmstorage null", values: `{"vmstorage":null}`, want: []string{f + ".vmstorage"}},
		{name: "replicaCount a string", values: `{"vmstorage":{"replicaCount":"3\nhostNetwork: true"}}`, want: []string{f + ".vmstorage.replicaCount"}},
		{name: "replicaCount zero", values: `{"vmstorage":{"replicaCount":0}}`, want: []string{f + ".vmstorage.replicaCount"}},
		{name: "nodeSelector a string", values: `{"vmstorage":{"nodeSelector":"x"}}`, want: []string{f + ".vmstorage.nodeSelector"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			body := mutate(t, func(m map[string]any) {
				var v any
				if err := json.Unmarshal([]byte(tc.values), &v); err != nil {
					t.Fatal(err)
				}
				ng(m, 1)["vmClusterHelmValues"] = v
			})
			_, err := Decode([]byte(body))
			if tc.want == nil {
				g.Expect(err).To(BeNil())
				return
			}
			g.Expect(err).NotTo(BeNil())
			g.Expect(err.Code).To(Equal(400))
			var fields []string
			for _, v := range err.Violations {
				fields = append(fields, v.Field)
				g.Expect(v.Description).NotTo(BeEmpty())
			}
			g.Expect(fields).To(Equal(tc.want))
		})
	}
}

func TestParseList(t *testing.T) {
	g := NewWithT(t)
	_, err := ParseList(map[string][]string{"status": {"Exploding"}})
	g.Expect(err).NotTo(BeNil())
	g.Expect(err.Violations[0].Field).To(Equal("status"))
	_, err = ParseList(map[string][]string{"pageSize": {"5000"}})
	g.Expect(err.Violations[0].Field).To(Equal("pageSize"))
	_, err = ParseList(map[string][]string{"pageToken": {"garbage"}})
	g.Expect(err.Violations[0].Field).To(Equal("pageToken"))
	tok := encodeCursor(cursor{Created: 1, Name: "a", Cluster: "c1"})
	_, err = ParseList(map[string][]string{"pageToken": {tok}, "k8sClusterName": {"c2"}})
	g.Expect(err).NotTo(BeNil(), "a token is bound to its filter")
	r, err := ParseList(map[string][]string{"pageToken": {tok}, "k8sClusterName": {"c1"}, "pageSize": {"10"}})
	g.Expect(err).To(BeNil())
	g.Expect(r.PageSize).To(Equal(10))
	g.Expect(r.After.Name).To(Equal("a"))
}

func TestParseClusterQuery(t *testing.T) {
	g := NewWithT(t)
	_, err := ParseClusterQuery(map[string][]string{}, false)
	var fields []string
	for _, v := range err.Violations {
		fields = append(fields, v.Field)
	}
	g.Expect(fields).To(ConsistOf("cloudProvider", "k8sClusterName", "region"))
	_, err = ParseClusterQuery(map[string][]string{"k8sClusterName": {"c"}, "region": {"r"}, "cloudProvider": {"gke"}}, true)
	g.Expect(err).NotTo(BeNil())
	g.Expect(err.Violations[0].Description).To(ContainSubstring("not supported by this provider"))
	_, err = ParseClusterQuery(map[string][]string{"k8sClusterName": {"c"}, "region": {"r"}, "cloudProvider": {"gke"}}, false)
	g.Expect(err).To(BeNil())
}
