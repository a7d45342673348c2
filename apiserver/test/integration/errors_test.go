package integration

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
)

// TestBadInput sends every kind of bad input: each is a 400 with a field
// violation naming the bad field, and nothing is created or changed.
func TestBadInput(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	const limit = 2048
	s := startServer(t, ns, func(c *config.Config) {
		c.Chart.Repository = deadRepository
		c.MaxRequestBodyBytes = limit
	})
	// The target of the bad PUTs.
	target := s.create(map[string]any{"name": "target", "values": map[string]any{"a": 1}})
	before := &helmv2.HelmRelease{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "target"}, before)).To(Succeed())

	big := `{"name":"big","values":{"x":"` + strings.Repeat("a", limit) + `"}}`
	tests := []struct {
		name, method, path string
		body               any
		fields             []string
	}{
		{"invalid name", http.MethodPost, vmclusters.BasePath, `{"name":"Not_Valid"}`, []string{"name"}},
		{"name too long", http.MethodPost, vmclusters.BasePath, `{"name":"` + strings.Repeat("n", 54) + `"}`, []string{"name"}},
		{"missing name", http.MethodPost, vmclusters.BasePath, `{"values":{}}`, []string{"name"}},
		{"malformed JSON", http.MethodPost, vmclusters.BasePath, `{"name":"x",`, []string{"body"}},
		{"values not an object", http.MethodPost, vmclusters.BasePath, `{"name":"x","values":[1,2]}`, []string{"values"}},
		{"unknown top-level field", http.MethodPost, vmclusters.BasePath, `{"name":"x","replicas":3}`, []string{"replicas"}},
		{"bad chart version", http.MethodPost, vmclusters.BasePath, `{"name":"x","helm_release_info":{"version":"latest"}}`, []string{"helm_release_info.version"}},
		{"body over the limit", http.MethodPost, vmclusters.BasePath, big, []string{"body"}},
		{"PUT malformed JSON", http.MethodPut, itemPath("target"), `{"values":`, []string{"body"}},
		{"PUT values not an object", http.MethodPut, itemPath("target"), `{"values":"x"}`, []string{"values"}},
		{"PUT without values", http.MethodPut, itemPath("target"), `{}`, []string{"values"}},
		{"PUT unknown field", http.MethodPut, itemPath(target.ID), `{"values":{},"spec":{}}`, []string{"spec"}},
		{"PUT body over the limit", http.MethodPut, itemPath("target"), big, []string{"body"}},
		{"PUT another name", http.MethodPut, itemPath("target"), `{"values":{},"name":"vmclusters/other"}`, []string{"name"}},
		{"bad page_token", http.MethodGet, vmclusters.BasePath + "?page_token=bm9wZQ", nil, []string{"page_token"}},
		{"page_size out of range", http.MethodGet, vmclusters.BasePath + "?page_size=1001", nil, []string{"page_size"}},
		{"unknown status filter", http.MethodGet, vmclusters.BasePath + "?status=asleep", nil, []string{"status"}},
		// One policy for every route: a query parameter the OpenAPI document
		// does not declare for it is refused, by name, never ignored.
		{"misspelt list parameter", http.MethodGet, vmclusters.BasePath + "?pagesize=5&status=RUNNING", nil, []string{"pagesize"}},
		{"unknown parameter on a create", http.MethodPost, vmclusters.BasePath + "?dryRun=true", `{"name":"x"}`, []string{"dryRun"}},
		{"unknown parameter on a get", http.MethodGet, itemPath("target") + "?view=full", nil, []string{"view"}},
	}
	for _, tt := range tests {
		code, b := s.do(tt.method, tt.path, tt.body)
		g.Expect(code).To(Equal(http.StatusBadRequest), "%s: %s", tt.name, b)
		e := errorOf(t, b)
		g.Expect(e.Error.Status).To(Equal("INVALID_ARGUMENT"), tt.name)
		g.Expect(violations(t, b)).To(ConsistOf(tt.fields), tt.name)
	}

	// Nothing was created, nothing changed.
	var hrs helmv2.HelmReleaseList
	g.Expect(env.Client.List(ctx, &hrs, client.InNamespace(ns))).To(Succeed())
	g.Expect(hrs.Items).To(ConsistOf(HaveField("Name", "target")))
	var repos sourcev1.HelmRepositoryList
	g.Expect(env.Client.List(ctx, &repos, client.InNamespace(ns))).To(Succeed())
	g.Expect(repos.Items).To(ConsistOf(HaveField("Name", "target")))
	after := hrs.Items[0]
	g.Expect(after.Generation).To(Equal(before.Generation))
	g.Expect(after.Spec.Values.Raw).To(MatchJSON(`{"a":1}`))
	g.Expect(after.Annotations).To(Equal(before.Annotations))
}

// TestNotFound: unknown ids and names are a 404 on GET, PUT and DELETE,
// and a HelmRelease not managed by ops-server is invisible.
func TestNotFound(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	s := startServer(t, ns, func(c *config.Config) { c.Chart.Repository = deadRepository })

	// A HelmRelease of someone else's, suspended so Flux leaves it alone.
	foreign := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Name: "foreign", Namespace: ns},
		Spec: helmv2.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: time.Hour},
			Suspend:  true,
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart: "x", SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "x"},
			}},
		},
	}
	g.Expect(env.Client.Create(ctx, foreign)).To(Succeed())

	for _, id := range []string{"nope", "0b5c2a8e-8d3e-4a55-9c55-3f1f6a3e4b11", string(foreign.UID), "foreign", "NOT%20VALID"} {
		for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
			var body any
			if method == http.MethodPut {
				body = `{"values":{}}`
			}
			code, b := s.do(method, itemPath(id), body)
			g.Expect(code).To(Equal(http.StatusNotFound), "%s %s: %s", method, id, b)
			g.Expect(errorOf(t, b).Error.Status).To(Equal("NOT_FOUND"))
		}
	}
	// Creating over it is a conflict, and leaves it alone.
	code, b := s.do(http.MethodPost, vmclusters.BasePath, `{"name":"foreign"}`)
	g.Expect(code).To(Equal(http.StatusConflict), string(b))
	g.Expect(string(b)).To(ContainSubstring("not managed by ops-server"))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(foreign), foreign)).To(Succeed())
	g.Expect(foreign.Labels).To(BeEmpty())
}

// TestOperationalEndpoints checks /healthz, /readyz, /metrics and the
// OpenAPI document and its page on a running server.
func TestOperationalEndpoints(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	s := startServer(t, env.NewNamespace(t), func(c *config.Config) { c.Chart.Repository = deadRepository })

	for _, p := range []string{"/healthz", "/readyz", "/openapi.yaml", "/docs", "/docs/redoc.standalone.js"} {
		code, _ := s.do(http.MethodGet, p, nil)
		g.Expect(code).To(Equal(http.StatusOK), p)
	}
	s.do(http.MethodGet, itemPath("missing"), nil)
	code, b := s.do(http.MethodGet, "/metrics", nil)
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(string(b)).To(ContainSubstring(`ops_apiserver_http_requests_total{code="404",method="GET",route="/api/v1/observability-ops/vmclusters/:vmclusterId"} 1`))
	g.Expect(string(b)).To(ContainSubstring(`ops_apiserver_http_request_duration_seconds_count{method="GET",route="/readyz"}`))
	g.Expect(string(b)).To(ContainSubstring("go_goroutines"))
	g.Expect(string(b)).To(ContainSubstring(`ops_build_info{goversion=`), "ops_build_info, as ops-operator exports it")
}

// TestMissingNamespace: a namespace that does not exist is a deployment
// problem, reported as such (500 NAMESPACE_NOT_FOUND), never as a 404 of
// the caller's vmcluster.
func TestMissingNamespace(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	s := startServer(t, "no-such-namespace", func(c *config.Config) { c.Chart.Repository = deadRepository })
	code, b := s.do(http.MethodPost, vmclusters.BasePath, `{"name":"c1"}`)
	g.Expect(code).To(Equal(http.StatusInternalServerError), string(b))
	e := errorOf(t, b)
	g.Expect(e.Error.Message).To(ContainSubstring(`"no-such-namespace" does not exist`))
	g.Expect(e.Error.Details).To(ContainElement(HaveField("Reason", vmclusters.ReasonNamespaceMissing)))
}
