package chartvalues

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"sigs.k8s.io/yaml"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
)

// chartDir is the baked-in chart ops-apiserver serves.
const chartDir = "../../../deploy/charts/vmcluster"

func vmclusterValidator(t testing.TB) *Validator {
	t.Helper()
	c, err := loader.LoadDir(chartDir)
	if err != nil {
		t.Fatalf("loading %s: %v", chartDir, err)
	}
	v, err := New(c)
	if err != nil {
		t.Fatalf("compiling the schema of %s: %v", chartDir, err)
	}
	return v
}

func fields(vs []apierror.FieldViolation) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		out = append(out, v.Field)
	}
	return out
}

// TestValidateInjections: every injection attempt of issue #18 is refused
// with a violation naming the field it was attempted in.
func TestValidateInjections(t *testing.T) {
	v := vmclusterValidator(t)
	cases := []struct {
		name   string
		values string
		want   []string // fields, sorted
	}{
		{"the issue's reproduction: newlines in integers",
			`{"replicationFactor":"1\n  serviceAccountName: ops-operator","vmselect":{"replicaCount":"1\nhostNetwork: true"}}`,
			[]string{"values.replicationFactor", "values.vmselect.replicaCount"}},
		{"a newline in the service type",
			`{"vmselect":{"service":{"type":"ClusterIP\n    hostNetwork: true"}}}`,
			[]string{"values.vmselect.service.type"}},
		{"a service type outside the enum",
			`{"vmselect":{"service":{"type":"ExternalName"}}}`,
			[]string{"values.vmselect.service.type"}},
		{"a second YAML document in the retention period",
			`{"retentionPeriod":"1\n---\napiVersion: v1\nkind: Secret"}`,
			[]string{"values.retentionPeriod"}},
		{"a YAML document in the image tag",
			`{"imageTag":"v1\n---\nkind: Pod"}`,
			[]string{"values.imageTag"}},
		{"a map where an integer belongs",
			`{"replicationFactor":{"serviceAccountName":"ops-operator"}}`,
			[]string{"values.replicationFactor"}},
		{"a list where a string belongs",
			`{"vmselect":{"service":{"type":["ClusterIP"]}}}`,
			[]string{"values.vmselect.service.type"}},
		{"a string where a map belongs",
			`{"vmstorage":"replicaCount: 9"}`,
			[]string{"values.vmstorage"}},
		{"a map where a list belongs",
			`{"vmstorage":{"tolerations":{"key":"k"}}}`,
			[]string{"values.vmstorage.tolerations"}},
		{"a map where the storage size belongs",
			`{"vmstorage":{"storage":{"size":{"a":"b"}}}}`,
			[]string{"values.vmstorage.storage.size"}},
		{"huge numbers",
			`{"replicationFactor":1e300,"vmstorage":{"replicaCount":99999999999999999999}}`,
			[]string{"values.replicationFactor", "values.vmstorage.replicaCount"}},
		{"a fraction where an integer belongs",
			`{"vminsert":{"replicaCount":1.5}}`,
			[]string{"values.vminsert.replicaCount"}},
		{"zero and negative replicas",
			`{"vminsert":{"replicaCount":0},"vmselect":{"replicaCount":-1}}`,
			[]string{"values.vminsert.replicaCount", "values.vmselect.replicaCount"}},
		{"unknown top-level keys",
			`{"serviceAccountName":"ops-operator","hostNetwork":true}`,
			[]string{"values.hostNetwork", "values.serviceAccountName"}},
		{"unknown component keys",
			`{"vmstorage":{"hostNetwork":true,"containers":[{"name":"x"}]}}`,
			[]string{"values.vmstorage.containers", "values.vmstorage.hostNetwork"}},
		{"the old volumeClaimTemplate pass-through",
			`{"vmstorage":{"storage":{"volumeClaimTemplate":{"spec":{}}}}}`,
			[]string{"values.vmstorage.storage.volumeClaimTemplate"}},
		{"unknown keys inside resources",
			`{"vmstorage":{"resources":{"requests":{"cpu":"1"},"claims":[{"name":"x"}]}}}`,
			[]string{"values.vmstorage.resources.claims"}},
		{"a quantity with a newline",
			`{"vmstorage":{"resources":{"limits":{"memory":"1Gi\nhostNetwork: true"}}}}`,
			[]string{"values.vmstorage.resources.limits.memory"}},
		{"a nested map in a node selector",
			`{"vmselect":{"nodeSelector":{"a":{"b":"c"}}}}`,
			[]string{"values.vmselect.nodeSelector.a"}},
		{"a newline in a node selector key",
			`{"vmselect":{"nodeSelector":{"a\nhostNetwork":"true"}}}`,
			[]string{`values.vmselect.nodeSelector."a\nhostNetwork"`}},
		{"a newline in a node selector value",
			`{"vmselect":{"nodeSelector":{"a":"b\nhostNetwork: true"}}}`,
			[]string{"values.vmselect.nodeSelector.a"}},
		{"an unknown field in a toleration",
			`{"vmstorage":{"tolerations":[{"operator":"Exists"},{"key":"k","hostNetwork":true}]}}`,
			[]string{"values.vmstorage.tolerations[1].hostNetwork"}},
		{"an unknown field in an affinity",
			`{"vminsert":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"k","operator":"In","values":["v"],"x":1}]}]}}}}}`,
			[]string{"values.vminsert.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].x"}},
		{"replication factor above the vmstorage replicas",
			`{"replicationFactor":4}`,
			[]string{"values.replicationFactor"}},
		{"a null removing a default",
			`{"vmstorage":{"storage":null}}`,
			[]string{"values.vmstorage.storage"}},
		{"a retention period in minutes",
			`{"retentionPeriod":"10m"}`,
			[]string{"values.retentionPeriod"}},
		{"a zero retention period",
			`{"retentionPeriod":0}`,
			[]string{"values.retentionPeriod"}},
		{"a storage class that is no name",
			`{"vmstorage":{"storage":{"storageClassName":"a b"}}}`,
			[]string{"values.vmstorage.storage.storageClassName"}},
		{"emptyDir as a string",
			`{"vmstorage":{"storage":{"emptyDir":"true"}}}`,
			[]string{"values.vmstorage.storage.emptyDir"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := v.Validate([]byte(tc.values))
			g.Expect(fields(got)).To(Equal(tc.want), "%+v", got)
			for _, fv := range got {
				g.Expect(fv.Description).NotTo(BeEmpty())
				g.Expect(fv.Description).NotTo(ContainSubstring("hostNetwork"), "descriptions do not echo the value")
			}
		})
	}
}

// TestValidateAccepts: values within the schema are accepted and render.
func TestValidateAccepts(t *testing.T) {
	v := vmclusterValidator(t)
	for name, values := range map[string]string{
		"empty":                  `{}`,
		"retention in months":    `{"retentionPeriod":12}`,
		"retention with suffix":  `{"retentionPeriod":"2w"}`,
		"replication at the max": `{"replicationFactor":3}`,
		"an integral float":      `{"replicationFactor":2.0}`,
		"storage":                `{"vmstorage":{"storage":{"size":"100Gi","storageClassName":"gp3"}}}`,
		"emptyDir":               `{"vmstorage":{"storage":{"emptyDir":true}}}`,
		"resources":              `{"vmstorage":{"resources":{"requests":{"cpu":"500m","memory":"1Gi"},"limits":{"cpu":2,"example.com/gpu":"1"}}}}`,
		"placement": `{"vmstorage":{"nodeSelector":{"node-role.observability/vmstorage":"true"},
			"tolerations":[{"key":"dedicated","operator":"Equal","value":"vm","effect":"NoSchedule"}],
			"affinity":{"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":100,
				"podAffinityTerm":{"topologyKey":"kubernetes.io/hostname","labelSelector":{"matchLabels":{"app.kubernetes.io/name":"vmstorage"}}}}]}}}}`,
		"service": `{"vmselect":{"service":{"type":"LoadBalancer"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(v.Validate([]byte(values))).To(BeEmpty())
			_, err := v.Render([]byte(values))
			g.Expect(err).NotTo(HaveOccurred())
		})
	}
}

// TestStorage: a PersistentVolumeClaim of 10Gi by default, an emptyDir
// only when asked for.
func TestStorage(t *testing.T) {
	v := vmclusterValidator(t)
	storageOf := func(g Gomega, values string) map[string]any {
		out, err := v.Render([]byte(values))
		g.Expect(err).NotTo(HaveOccurred())
		var obj map[string]any
		g.Expect(yaml.Unmarshal([]byte(out["vmcluster/templates/vmcluster.yaml"]), &obj)).To(Succeed())
		spec := obj["spec"].(map[string]any)
		return spec["vmstorage"].(map[string]any)["storage"].(map[string]any)
	}
	t.Run("default", func(t *testing.T) {
		g := NewWithT(t)
		st := storageOf(g, `{}`)
		g.Expect(st).To(Equal(map[string]any{"volumeClaimTemplate": map[string]any{"spec": map[string]any{
			"accessModes": []any{"ReadWriteOnce"},
			"resources":   map[string]any{"requests": map[string]any{"storage": "10Gi"}},
		}}}))
	})
	t.Run("size and class", func(t *testing.T) {
		g := NewWithT(t)
		st := storageOf(g, `{"vmstorage":{"storage":{"size":"50Gi","storageClassName":"fast"}}}`)
		spec := st["volumeClaimTemplate"].(map[string]any)["spec"].(map[string]any)
		g.Expect(spec["storageClassName"]).To(Equal("fast"))
		g.Expect(spec["resources"]).To(Equal(map[string]any{"requests": map[string]any{"storage": "50Gi"}}))
	})
	t.Run("emptyDir", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(storageOf(g, `{"vmstorage":{"storage":{"emptyDir":true}}}`)).To(Equal(map[string]any{"emptyDir": map[string]any{}}))
	})
}

// TestRetentionPeriodRendersAsString: a number of months reaches the
// VMCluster as the string its CRD wants.
func TestRetentionPeriodRendersAsString(t *testing.T) {
	g := NewWithT(t)
	out, err := vmclusterValidator(t).Render([]byte(`{"retentionPeriod":12}`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out["vmcluster/templates/vmcluster.yaml"]).To(ContainSubstring(`retentionPeriod: "12"`))
}

// TestChartWithoutSchema: only the render runs; its fail is a violation.
func TestChartWithoutSchema(t *testing.T) {
	g := NewWithT(t)
	c := &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: "v2", Name: "plain", Version: "1.0.0"},
		Values:   map[string]any{"n": 1},
		Templates: []*common.File{{Name: "templates/cm.yaml", Data: []byte(
			`{{- if gt (int .Values.n) 2 }}{{ fail "n must be at most 2" }}{{ end }}` + "\nkind: ConfigMap\n")}},
	}
	v, err := New(c)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v.HasSchema()).To(BeFalse())
	g.Expect(v.Validate([]byte(`{"anything":"goes"}`))).To(BeEmpty())
	got := v.Validate([]byte(`{"n":3}`))
	g.Expect(got).To(HaveLen(1))
	g.Expect(got[0].Field).To(Equal("values"))
	g.Expect(got[0].Description).To(HaveSuffix("n must be at most 2"))
}

// TestSchemaWithExternalReference: a schema that would make ops-apiserver
// fetch a URL or read a file is refused when the chart is loaded.
func TestSchemaWithExternalReference(t *testing.T) {
	for _, ref := range []string{"https://example.invalid/s.json", "file:///etc/passwd"} {
		g := NewWithT(t)
		c := &chart.Chart{
			Metadata: &chart.Metadata{APIVersion: "v2", Name: "refs", Version: "1.0.0"},
			Schema:   []byte(`{"type":"object","properties":{"a":{"$ref":"` + ref + `"}}}`),
		}
		_, err := New(c)
		g.Expect(err).To(HaveOccurred())
		g.Expect(err.Error()).To(ContainSubstring("not followed"))
	}
}

// TestViolationsAreOnePerProblem: several problems, several violations,
// and each field once per problem.
func TestViolationsAreOnePerProblem(t *testing.T) {
	g := NewWithT(t)
	got := vmclusterValidator(t).Validate([]byte(`{"a":1,"b":2,"vmselect":{"replicaCount":"x","service":{"type":"x"}}}`))
	g.Expect(fields(got)).To(Equal([]string{"values.a", "values.b", "values.vmselect.replicaCount", "values.vmselect.service.type"}))
	g.Expect(strings.Join(fields(got), ",")).NotTo(ContainSubstring("values,"))
}
