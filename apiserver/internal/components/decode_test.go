package components

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
)

func fields(err *apierror.Error) []string {
	var out []string
	for _, v := range err.Violations {
		out = append(out, v.Field)
	}
	return out
}

func TestDecodeCreate(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		key  string
		want CreateRequest
		// fields are the violations' fields; empty: valid.
		fields []string
	}{
		{name: "minimal", body: `{"name":"vmagent","chart":"vmagent"}`,
			want: CreateRequest{Name: "vmagent", Chart: "vmagent", Values: []byte("{}")}},
		{name: "everything", body: `{"name":"components/a","chart":"vector","version":"1.2.3","namespace":"logging","values":{"b":1,"a":{"c":true}}}`, key: "k-1",
			want: CreateRequest{Name: "a", Chart: "vector", Version: "1.2.3", Namespace: "logging", Values: []byte(`{"a":{"c":true},"b":1}`), IdempotencyKey: "k-1"}},
		{name: "output fields ignored", body: `{"name":"a","chart":"c","status":"RUNNING","deployed_version":"1.0.0","create_time":"x","last_action":{}}`,
			want: CreateRequest{Name: "a", Chart: "c", Values: []byte("{}")}},
		{name: "name and chart required", body: `{}`, fields: []string{"name", "chart"}},
		{name: "bad name", body: `{"name":"A_b","chart":"c"}`, fields: []string{"name"}},
		{name: "bad version", body: `{"name":"a","chart":"c","version":"latest"}`, fields: []string{"version"}},
		{name: "bad namespace", body: `{"name":"a","chart":"c","namespace":"Kube_System"}`, fields: []string{"namespace"}},
		{name: "values not an object", body: `{"name":"a","chart":"c","values":[1]}`, fields: []string{"values"}},
		{name: "id is the server's", body: `{"name":"a","chart":"c","id":"x"}`, fields: []string{"id"}},
		{name: "unknown field", body: `{"name":"a","chart":"c","chrat":"x"}`, fields: []string{"chrat"}},
		{name: "long idempotency key", body: `{"name":"a","chart":"c"}`, key: strings.Repeat("k", 256), fields: []string{IdempotencyHeader}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := DecodeCreate([]byte(tc.body), tc.key)
			if len(tc.fields) > 0 {
				g.Expect(err).NotTo(BeNil())
				g.Expect(fields(err)).To(ConsistOf(tc.fields))
				return
			}
			g.Expect(err).To(BeNil())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestDecodeUpdate(t *testing.T) {
	g := NewWithT(t)
	req, err := DecodeUpdate([]byte(`{"name":"components/a","id":"u","chart":"c","namespace":"n","values":{"x":1},"version":"0.2.0","etag":"e","status":"RUNNING"}`))
	g.Expect(err).To(BeNil())
	g.Expect(*req.Name).To(Equal("a"))
	g.Expect(*req.ID).To(Equal("u"))
	g.Expect(*req.Chart).To(Equal("c"))
	g.Expect(*req.Namespace).To(Equal("n"))
	g.Expect(*req.ETag).To(Equal("e"))
	g.Expect(req.Version).To(Equal("0.2.0"))
	g.Expect(string(req.Values)).To(Equal(`{"x":1}`))

	_, err = DecodeUpdate([]byte(`{"version":"x"}`))
	g.Expect(fields(err)).To(ConsistOf("values", "version"))
}
