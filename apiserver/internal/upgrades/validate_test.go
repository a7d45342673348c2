package upgrades

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/apiserver/internal/upgrades/upgradestest"
)

const validBody = upgradestest.ValidBody

// mutate returns validBody changed by fn (on a generic JSON map).
func mutate(_ *testing.T, fn func(m map[string]any)) string { return upgradestest.Mutate(fn) }

func ng(m map[string]any, i int) map[string]any { return upgradestest.NodeGroup(m, i) }

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
	// The REST API takes vmCluster as a vmcluster id or name (a string);
	// the CR takes a reference object, so this refusal is REST's own.
	restOnly := []upgradestest.Invalid{
		{Name: "wrong type: vmCluster object", Body: upgradestest.Mutate(func(m map[string]any) {
			upgradestest.NodeGroup(m, 1)["vmCluster"] = map[string]any{"name": "metrics"}
		}), Field: "nodeGroupUpgrades.vmCluster"},
	}
	restOnly = append(restOnly, upgradestest.RefusedByPreflight()...)
	for _, tc := range append(upgradestest.InvalidRequests(), restOnly...) {
		t.Run(tc.Name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Decode([]byte(tc.Body))
			g.Expect(err).NotTo(BeNil())
			g.Expect(err.Code).To(Equal(400))
			var fields []string
			for _, v := range err.Violations {
				fields = append(fields, v.Field)
				g.Expect(v.Description).NotTo(BeEmpty())
			}
			g.Expect(fields).To(ContainElement(tc.Field), "violations: %+v", err.Violations)
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

	// The cluster name follows its cloud's rules, as in a request.
	for provider, name := range map[string]string{"eks": "Prod_Cluster-01", "aks": "myAKS_cluster", "ack": "生产集群-01"} {
		_, err = ParseClusterQuery(map[string][]string{"k8sClusterName": {name}, "region": {"r"}, "cloudProvider": {provider}}, false)
		g.Expect(err).To(BeNil(), "%s %s", provider, name)
	}
	_, err = ParseClusterQuery(map[string][]string{"k8sClusterName": {"Prod_Cluster-01"}, "region": {"r"}, "cloudProvider": {"gke"}}, false)
	g.Expect(err).NotTo(BeNil())
	g.Expect(err.Violations).To(HaveLen(1))
	g.Expect(err.Violations[0].Field).To(Equal("k8sClusterName"))
	g.Expect(err.Violations[0].Description).To(ContainSubstring("for cloudProvider gke"))
}

// TestDecodeValidCloudNames: each cloud's real-world names (upper case and
// underscores on EKS and AKS, Chinese characters on ACK) pass.
func TestDecodeValidCloudNames(t *testing.T) {
	for _, tc := range upgradestest.ValidNames() {
		t.Run(tc.Name, func(t *testing.T) {
			_, err := Decode([]byte(tc.Body))
			NewWithT(t).Expect(err).To(BeNil())
		})
	}
}
