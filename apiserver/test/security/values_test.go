package security

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
)

// Rule (issue #18, item 1): vmcluster values are validated against the
// values.schema.json of the chart version they install, at request time.
// No value can reach the chart's templates as text that changes the shape
// of the rendered VMCluster: each injection is a 400 naming the field,
// and nothing is created or changed.

// valuesInjections are the attempts of issue #18, each with the field the
// 400 must name.
var valuesInjections = []struct {
	name   string
	values string
	fields []string
}{
	{"the issue's reproduction", `{"replicationFactor":"1\n  serviceAccountName: ops-operator","vmselect":{"replicaCount":"1\nhostNetwork: true"}}`,
		[]string{"values.replicationFactor", "values.vmselect.replicaCount"}},
	{"a newline in the service type", `{"vmselect":{"service":{"type":"ClusterIP\n    hostNetwork: true"}}}`,
		[]string{"values.vmselect.service.type"}},
	{"a second YAML document", `{"retentionPeriod":"1\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: x"}`,
		[]string{"values.retentionPeriod"}},
	{"a map where a scalar belongs", `{"replicationFactor":{"serviceAccountName":"ops-operator"}}`,
		[]string{"values.replicationFactor"}},
	{"a huge number", `{"vmstorage":{"replicaCount":99999999999999999999}}`,
		[]string{"values.vmstorage.replicaCount"}},
	{"an unknown key", `{"vmstorage":{"hostNetwork":true}}`,
		[]string{"values.vmstorage.hostNetwork"}},
	{"a newline in a pass-through map", `{"vminsert":{"nodeSelector":{"a":"b\nhostNetwork: true"}}}`,
		[]string{"values.vminsert.nodeSelector.a"}},
}

func violationFields(t *testing.T, body []byte) ([]string, string) {
	t.Helper()
	var b apierror.Body
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("error body is not JSON: %v: %s", err, body)
	}
	var fields []string
	reason := ""
	for _, d := range b.Error.Details {
		switch d.Type {
		case apierror.TypeBadRequest:
			for _, v := range d.FieldViolations {
				fields = append(fields, v.Field)
			}
		case apierror.TypeErrorInfo:
			reason = d.Reason
		}
	}
	return fields, reason
}

func (f *fixture) releases() []helmv2.HelmRelease {
	f.t.Helper()
	var list helmv2.HelmReleaseList
	if err := f.kube.List(context.Background(), &list, client.InNamespace(f.ns)); err != nil {
		f.t.Fatalf("listing HelmReleases: %v", err)
	}
	return list.Items
}

func TestValuesInjectionOnCreate(t *testing.T) {
	f := start(t, nil)
	for _, tc := range valuesInjections {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			code, body := f.do(http.MethodPost, vmclusters.BasePath, `{"name":"injected","values":`+tc.values+`}`)
			g.Expect(code).To(Equal(http.StatusBadRequest), "%s", body)
			fields, reason := violationFields(t, body)
			g.Expect(fields).To(Equal(tc.fields), "%s", body)
			g.Expect(reason).To(Equal(vmclusters.ReasonInvalidValues))
			g.Expect(f.releases()).To(BeEmpty(), "no HelmRelease is created")
		})
	}
	// The same server accepts values within the schema: the 400s above
	// are the schema's, not a broken chart's.
	g := NewWithT(t)
	code, body := f.do(http.MethodPost, vmclusters.BasePath,
		`{"name":"fine","values":{"replicationFactor":2,"vmstorage":{"storage":{"size":"20Gi"}}}}`)
	g.Expect(code).To(Equal(http.StatusAccepted), "%s", body)
	g.Expect(f.releases()).To(HaveLen(1))
}

func TestValuesInjectionOnUpdate(t *testing.T) {
	f := start(t, nil)
	g := NewWithT(t)
	code, body := f.do(http.MethodPost, vmclusters.BasePath, `{"name":"target","values":{"replicationFactor":1}}`)
	g.Expect(code).To(Equal(http.StatusAccepted), "%s", body)
	before := &helmv2.HelmRelease{}
	g.Expect(f.kube.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "target"}, before)).To(Succeed())

	for _, tc := range valuesInjections {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			code, body := f.do(http.MethodPut, vmclusters.BasePath+"/target", `{"values":`+tc.values+`}`)
			g.Expect(code).To(Equal(http.StatusBadRequest), "%s", body)
			fields, reason := violationFields(t, body)
			g.Expect(fields).To(Equal(tc.fields), "%s", body)
			g.Expect(reason).To(Equal(vmclusters.ReasonInvalidValues))
			after := &helmv2.HelmRelease{}
			g.Expect(f.kube.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "target"}, after)).To(Succeed())
			g.Expect(after.Generation).To(Equal(before.Generation), "the HelmRelease is unchanged")
			g.Expect(after.ResourceVersion).To(Equal(before.ResourceVersion), "the HelmRelease is unchanged")
			g.Expect(string(after.Spec.Values.Raw)).To(MatchJSON(before.Spec.Values.Raw))
		})
	}
	// A valid PUT through the same path goes through.
	code, body = f.do(http.MethodPut, vmclusters.BasePath+"/target", `{"values":{"replicationFactor":2}}`)
	g.Expect(code).To(Equal(http.StatusAccepted), "%s", body)
}
