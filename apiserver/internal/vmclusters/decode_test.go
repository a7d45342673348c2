package vmclusters

import (
	"net/url"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
)

func fields(e *apierror.Error) []string {
	var out []string
	for _, v := range e.Violations {
		out = append(out, v.Field)
	}
	return out
}

func TestDecodeCreate(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		want       CreateRequest
		violations []string
	}{
		{name: "name and values", body: `{"name":"c1","values":{"b":1,"a":{"x":"y"}}}`,
			want: CreateRequest{Name: "c1", Values: []byte(`{"a":{"x":"y"},"b":1}`)}},
		{name: "collection prefix accepted", body: `{"name":"vmclusters/c1"}`, want: CreateRequest{Name: "c1", Values: []byte(`{}`)}},
		{name: "chart version", body: `{"name":"c1","helm_release_info":{"version":"0.2.0"}}`,
			want: CreateRequest{Name: "c1", Values: []byte(`{}`), Version: "0.2.0"}},
		{name: "output-only fields ignored", body: `{"name":"c1","id":"x","status":"RUNNING","endpoints":{},"create_time":"t"}`,
			want: CreateRequest{Name: "c1", Values: []byte(`{}`)}},
		{name: "numbers kept as written", body: `{"name":"c1","values":{"n":12345678901234567890,"f":1.50}}`,
			want: CreateRequest{Name: "c1", Values: []byte(`{"f":1.50,"n":12345678901234567890}`)}},
		{name: "max length name", body: `{"name":"` + strings.Repeat("a", 53) + `"}`,
			want: CreateRequest{Name: strings.Repeat("a", 53), Values: []byte(`{}`)}},
		{name: "restore_from", body: `{"name":"c1","restore_from":{"backup":"b1"}}`,
			want: CreateRequest{Name: "c1", Values: []byte(`{}`), RestoreFrom: &RestoreFrom{Backup: "b1"}}},
		{name: "restore_from null", body: `{"name":"c1","restore_from":null}`, want: CreateRequest{Name: "c1", Values: []byte(`{}`)}},

		{name: "empty body", body: ``, violations: []string{"body"}},
		{name: "malformed JSON", body: `{"name":`, violations: []string{"body"}},
		{name: "trailing data", body: `{"name":"c1"} {}`, violations: []string{"body"}},
		{name: "array body", body: `[1]`, violations: []string{"body"}},
		{name: "null body", body: `null`, violations: []string{"body"}},
		{name: "missing name", body: `{"values":{}}`, violations: []string{"name"}},
		{name: "empty name", body: `{"name":""}`, violations: []string{"name"}},
		{name: "name too long", body: `{"name":"` + strings.Repeat("a", 54) + `"}`, violations: []string{"name"}},
		{name: "upper case name", body: `{"name":"Cluster"}`, violations: []string{"name"}},
		{name: "name with dot", body: `{"name":"a.b"}`, violations: []string{"name"}},
		{name: "name ends with dash", body: `{"name":"a-"}`, violations: []string{"name"}},
		{name: "name not a string", body: `{"name":5}`, violations: []string{"name"}},
		{name: "values a string", body: `{"name":"c1","values":"x"}`, violations: []string{"values"}},
		{name: "values an array", body: `{"name":"c1","values":[]}`, violations: []string{"values"}},
		{name: "values null", body: `{"name":"c1","values":null}`, violations: []string{"values"}},
		{name: "unknown field", body: `{"name":"c1","replicas":3}`, violations: []string{"replicas"}},
		{name: "empty key", body: `{"name":"c1","":{}}`, violations: []string{`""`}},
		{name: "key with a dot", body: `{"name":"c1","a.b":1}`, violations: []string{`"a.b"`}},
		{name: "field in other case", body: `{"Name":"c1"}`, violations: []string{"Name", "name"}},
		{name: "unknown nested field", body: `{"name":"c1","helm_release_info":{"foo":1}}`, violations: []string{"helm_release_info.foo"}},
		{name: "helm_release_info not an object", body: `{"name":"c1","helm_release_info":3}`, violations: []string{"helm_release_info"}},
		{name: "bad version", body: `{"name":"c1","helm_release_info":{"version":"latest"}}`, violations: []string{"helm_release_info.version"}},
		{name: "server-set release name", body: `{"name":"c1","helm_release_info":{"release_name":"x"}}`, violations: []string{"helm_release_info.release_name"}},
		{name: "restore_from not an object", body: `{"name":"c1","restore_from":"b1"}`, violations: []string{"restore_from"}},
		{name: "restore_from without backup", body: `{"name":"c1","restore_from":{}}`, violations: []string{"restore_from.backup"}},
		{name: "restore_from empty backup", body: `{"name":"c1","restore_from":{"backup":""}}`, violations: []string{"restore_from.backup"}},
		{name: "restore_from backup not a string", body: `{"name":"c1","restore_from":{"backup":3}}`, violations: []string{"restore_from.backup"}},
		{name: "restore_from backup too long", body: `{"name":"c1","restore_from":{"backup":"` + strings.Repeat("b", 254) + `"}}`, violations: []string{"restore_from.backup"}},
		{name: "restore_from unknown field", body: `{"name":"c1","restore_from":{"backup":"b1","strategy":"x"}}`, violations: []string{"restore_from.strategy"}},
		{name: "every problem at once", body: `{"name":"BAD","values":1,"x":1}`, violations: []string{"x", "name", "values"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := DecodeCreate([]byte(tt.body))
			if tt.violations != nil {
				g.Expect(err).NotTo(BeNil())
				g.Expect(err.Code).To(Equal(400))
				g.Expect(fields(err)).To(ConsistOf(tt.violations))
				return
			}
			g.Expect(err).To(BeNil())
			g.Expect(got.Name).To(Equal(tt.want.Name))
			g.Expect(string(got.Values)).To(Equal(string(tt.want.Values)))
			g.Expect(got.Version).To(Equal(tt.want.Version))
			g.Expect(got.RestoreFrom).To(Equal(tt.want.RestoreFrom))
		})
	}
}

func TestDecodeUpdate(t *testing.T) {
	g := NewWithT(t)
	req, err := DecodeUpdate([]byte(`{"name":"vmclusters/c1","id":"u","status":"RUNNING","values":{"a":1},
		"helm_release_info":{"release_name":"c1","release_namespace":"ns","chart":"vmcluster","version":"0.2.0"}}`))
	g.Expect(err).To(BeNil())
	g.Expect(string(req.Values)).To(Equal(`{"a":1}`))
	g.Expect(req.Version).To(Equal("0.2.0"))
	g.Expect(*req.Name).To(Equal("c1"))
	g.Expect(*req.ID).To(Equal("u"))
	g.Expect(*req.ReleaseNamespace).To(Equal("ns"))

	for body, want := range map[string][]string{
		`{}`:                                    {"values"},
		`{"values":[]}`:                         {"values"},
		`{"values":{},"extra":true}`:            {"extra"},
		`{"values":{},"name":1}`:                {"name"},
		`{"helm_release_info":{"version":"x"}}`: {"values", "helm_release_info.version"},
	} {
		_, err := DecodeUpdate([]byte(body))
		g.Expect(err).NotTo(BeNil(), body)
		g.Expect(fields(err)).To(ConsistOf(want), body)
	}
}

func TestParseList(t *testing.T) {
	tok := EncodePageToken("c7", "")
	runTok := EncodePageToken("c7", StatusRunning)
	tests := []struct {
		name       string
		query      string
		want       ListRequest
		violations []string
	}{
		{name: "defaults", query: "", want: ListRequest{PageSize: 50}},
		{name: "page size", query: "page_size=7", want: ListRequest{PageSize: 7}},
		{name: "page size zero means default", query: "page_size=0", want: ListRequest{PageSize: 50}},
		{name: "max page size", query: "page_size=1000", want: ListRequest{PageSize: 1000}},
		{name: "token", query: "page_token=" + tok, want: ListRequest{PageSize: 50, After: "c7"}},
		{name: "status filter any case", query: "status=running&page_token=" + runTok, want: ListRequest{PageSize: 50, After: "c7", Status: StatusRunning}},
		{name: "page size too big", query: "page_size=1001", violations: []string{"page_size"}},
		{name: "negative page size", query: "page_size=-1", violations: []string{"page_size"}},
		{name: "page size not a number", query: "page_size=ten", violations: []string{"page_size"}},
		{name: "garbage token", query: "page_token=%21%21", violations: []string{"page_token"}},
		{name: "token of another filter", query: "status=FAILED&page_token=" + runTok, violations: []string{"page_token"}},
		{name: "token of no filter used with a filter", query: "status=RUNNING&page_token=" + tok, violations: []string{"page_token"}},
		{name: "unknown status", query: "status=SLEEPING", violations: []string{"status"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			q, err := url.ParseQuery(tt.query)
			g.Expect(err).NotTo(HaveOccurred())
			got, verr := ParseList(q)
			if tt.violations != nil {
				g.Expect(verr).NotTo(BeNil())
				g.Expect(fields(verr)).To(ConsistOf(tt.violations))
				return
			}
			g.Expect(verr).To(BeNil())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestPageToken(t *testing.T) {
	g := NewWithT(t)
	tok := EncodePageToken("abc", StatusFailed)
	after, err := DecodePageToken(tok, StatusFailed)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after).To(Equal("abc"))

	for name, bad := range map[string]string{
		"not base64":       "***",
		"not JSON":         "bm90IGpzb24",
		"unknown field":    "eyJ2IjoxLCJhIjoiYWJjIiwieCI6MX0",
		"wrong version":    "eyJ2IjoyLCJhIjoiYWJjIn0",
		"invalid name":     "eyJ2IjoxLCJhIjoiQUJDIn0",
		"too long":         strings.Repeat("A", 600),
		"other filter":     EncodePageToken("abc", StatusRunning),
		"trailing content": "eyJ2IjoxLCJhIjoiYWJjIn17fQ",
	} {
		_, err := DecodePageToken(bad, StatusFailed)
		g.Expect(err).To(HaveOccurred(), name)
	}
}
