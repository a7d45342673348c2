package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/components"
	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// catalogDir holds the test catalog's chart, greeter 0.1.0 and 0.2.0 (a
// ConfigMap, a strict values.schema.json).
const catalogDir = "testdata/catalog"

// doWith sends a request with extra headers.
func (s *apiServer) doWith(method, path, body string, headers map[string]string) (int, []byte, http.Header) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, []byte(b.String()), resp.Header
}

// waitComponent polls until the component reads want (FAILED stops at
// once with Flux's message).
func (s *apiServer) waitComponent(id string, want vmclusters.Status) components.Component {
	s.t.Helper()
	var last components.Component
	NewWithT(s.t).Eventually(func(g Gomega) {
		code, b := s.do(http.MethodGet, components.BasePath+"/"+id, nil)
		g.Expect(code).To(Equal(http.StatusOK), string(b))
		last = decode[components.Component](s.t, b)
		if last.Status == vmclusters.StatusFailed && want != vmclusters.StatusFailed {
			StopTrying(fmt.Sprintf("component %s FAILED: %s: %s", id, last.StatusReason, last.StatusMessage)).Now()
		}
		g.Expect(last.Status).To(Equal(want), "status_reason=%s status_message=%s", last.StatusReason, last.StatusMessage)
	}, fluxTimeout, poll).Should(Succeed(), func() string { return s.describe(id) })
	return last
}

func greeterConfig(g Gomega, ns, release string) map[string]string {
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: release + "-greeter"}, cm)).To(Succeed())
	return cm.Data
}

// TestComponentLifecycle installs a baked catalog chart as a component
// with real Flux, replays the create, refuses bad requests, upgrades it
// with new values and a new chart version (with an etag), and deletes it.
func TestComponentLifecycle(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	s := startServer(t, ns, func(c *config.Config) {
		c.Catalog.LocalDir = catalogDir
		c.Catalog.Charts = []config.CatalogChart{{Name: "greeter", Version: "0.1.0"}}
	})
	coll := components.BasePath

	// ---- refused requests change nothing ----
	for _, tc := range []struct {
		name, body, field, contains string
	}{
		{"not in the catalog", `{"name":"x","chart":"vector"}`, "chart", "not in the catalog (available: greeter)"},
		{"the vmcluster chart", `{"name":"x","chart":"vmcluster"}`, "chart", vmclusters.BasePath},
		{"invalid values", `{"name":"x","chart":"greeter","values":{"message":5}}`, "values.message", ""},
		{"unknown value", `{"name":"x","chart":"greeter","values":{"mesage":"hi"}}`, "values.mesage", "unknown field"},
		{"unknown version", `{"name":"x","chart":"greeter","version":"9.9.9"}`, "version", "available: 0.1.0, 0.2.0"},
		{"namespace not allowed", `{"name":"x","chart":"greeter","namespace":"kube-system"}`, "namespace", "may be installed into " + ns + " only"},
		{"no chart", `{"name":"x"}`, "chart", "is required"},
	} {
		code, b := s.do(http.MethodPost, coll, tc.body)
		g.Expect(code).To(Equal(http.StatusBadRequest), "%s: %s", tc.name, b)
		g.Expect(violations(t, b)).To(ContainElement(tc.field), "%s: %s", tc.name, b)
		g.Expect(string(b)).To(ContainSubstring(tc.contains), tc.name)
	}
	var hrs helmv2.HelmReleaseList
	g.Expect(env.Client.List(ctx, &hrs, client.InNamespace(ns))).To(Succeed())
	g.Expect(hrs.Items).To(BeEmpty(), "a refused request creates nothing")

	// ---- create, replayed with its Idempotency-Key ----
	body := `{"name":"greet","chart":"greeter","values":{"message":"hi"}}`
	code, b, _ := s.doWith(http.MethodPost, coll, body, map[string]string{"Idempotency-Key": "create-greet-1"})
	g.Expect(code).To(Equal(http.StatusAccepted), string(b))
	created := decode[components.Component](t, b)
	g.Expect(created.Name).To(Equal("components/greet"))
	g.Expect(created.Chart).To(Equal("greeter"))
	g.Expect(created.Version).To(Equal("0.1.0"))
	g.Expect(created.Namespace).To(Equal(ns))
	g.Expect(created.Status).To(Equal(vmclusters.StatusCreating))
	g.Expect(created.Values).To(MatchJSON(`{"message":"hi"}`))

	code, b, _ = s.doWith(http.MethodPost, coll, body, map[string]string{"Idempotency-Key": "create-greet-1"})
	g.Expect(code).To(Equal(http.StatusAccepted), string(b))
	g.Expect(decode[components.Component](t, b).ID).To(Equal(created.ID), "a replay answers with the same component")
	code, b = s.do(http.MethodPost, coll, `{"name":"greet","chart":"greeter","values":{"message":"other"}}`)
	g.Expect(code).To(Equal(http.StatusConflict), string(b))

	hr := &helmv2.HelmRelease{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "greet"}, hr)).To(Succeed())
	g.Expect(hr.Labels).To(HaveKeyWithValue(components.LabelComponent, "greet"))
	g.Expect(hr.Labels).NotTo(HaveKey(vmclusters.LabelVMCluster))
	g.Expect(hr.Annotations).To(HaveKeyWithValue(opsv1.AnnotationIdempotencyKey, "create-greet-1"))
	repo := &sourcev1.HelmRepository{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "greet"}, repo)).To(Succeed())
	g.Expect(repo.Labels).To(HaveKeyWithValue(components.LabelComponent, "greet"))

	// ---- running: Helm installed the chart with the values ----
	s.waitComponent(created.ID, vmclusters.StatusRunning)
	g.Eventually(func(g Gomega) {
		data := greeterConfig(g, ns, "greet")
		g.Expect(data).To(HaveKeyWithValue("message", "hi"))
		g.Expect(data).To(HaveKeyWithValue("chartVersion", "0.1.0"))
	}, fluxTimeout, poll).Should(Succeed())

	// A component is not a vmcluster, and the other way round.
	code, b = s.do(http.MethodGet, vmclusters.BasePath+"/greet", nil)
	g.Expect(code).To(Equal(http.StatusNotFound), string(b))
	code, b = s.do(http.MethodGet, vmclusters.BasePath, nil)
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(decode[vmclusters.ListResponse](t, b).VMClusters).To(BeEmpty())
	code, b = s.do(http.MethodGet, coll+"?status=RUNNING", nil)
	g.Expect(code).To(Equal(http.StatusOK))
	list := decode[components.ListResponse](t, b)
	g.Expect(list.Components).To(HaveLen(1))
	g.Expect(list.Components[0].Values).To(BeNil(), "lists carry no values")

	// ---- update: a stale etag is a 412 and changes nothing ----
	code, b, hdr := s.doWith(http.MethodGet, coll+"/greet", "", nil)
	g.Expect(code).To(Equal(http.StatusOK), string(b))
	etag := hdr.Get("ETag")
	g.Expect(etag).NotTo(BeEmpty())
	code, b, _ = s.doWith(http.MethodPut, coll+"/greet", `{"values":{"message":"stale"}}`, map[string]string{"If-Match": `"not-the-etag"`})
	g.Expect(code).To(Equal(http.StatusPreconditionFailed), string(b))
	code, b = s.do(http.MethodPut, coll+"/greet", `{"values":{"replicas":7}}`)
	g.Expect(code).To(Equal(http.StatusBadRequest), string(b))
	g.Expect(violations(t, b)).To(ContainElement("values.replicas"))
	code, b = s.do(http.MethodPut, coll+"/greet", `{"values":{},"chart":"other"}`)
	g.Expect(code).To(Equal(http.StatusBadRequest), string(b))
	g.Expect(violations(t, b)).To(ContainElement("chart"))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "greet"}, hr)).To(Succeed())
	g.Expect(string(hr.Spec.Values.Raw)).To(MatchJSON(`{"message":"hi"}`), "refused PUTs change nothing")

	// ---- update: new values and chart version, with the etag ----
	code, b, _ = s.doWith(http.MethodPut, coll+"/greet", `{"values":{"message":"bye","replicas":2},"version":"0.2.0"}`, map[string]string{"If-Match": etag})
	g.Expect(code).To(Equal(http.StatusAccepted), string(b))
	updated := decode[components.Component](t, b)
	g.Expect(updated.Version).To(Equal("0.2.0"))
	g.Expect(updated.ETag).NotTo(Equal(strings.Trim(etag, `"`)))
	g.Eventually(func(g Gomega) {
		data := greeterConfig(g, ns, "greet")
		g.Expect(data).To(HaveKeyWithValue("message", "bye"))
		g.Expect(data).To(HaveKeyWithValue("replicas", "2"))
		g.Expect(data).To(HaveKeyWithValue("chartVersion", "0.2.0"))
	}, fluxTimeout, poll).Should(Succeed())
	g.Eventually(func() string {
		return s.waitComponent("greet", vmclusters.StatusRunning).DeployedVersion
	}, fluxTimeout, poll).Should(Equal("0.2.0"))

	// ---- delete: Helm uninstalls, the source goes ----
	code, b = s.do(http.MethodDelete, coll+"/greet", nil)
	g.Expect(code).To(Equal(http.StatusAccepted), string(b))
	g.Expect(decode[components.Component](t, b).Status).To(Equal(vmclusters.StatusDeleting))
	g.Eventually(func() int {
		code, _ := s.do(http.MethodGet, coll+"/greet", nil)
		return code
	}, fluxTimeout, poll).Should(Equal(http.StatusNotFound), func() string { return s.describe("greet") })
	g.Eventually(func() bool {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "greet-greeter"}, &corev1.ConfigMap{})
		return apierrors.IsNotFound(err)
	}, fluxTimeout, poll).Should(BeTrue(), "the uninstall removes what the chart created")
	g.Eventually(func() bool {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "greet"}, &sourcev1.HelmRepository{})
		return apierrors.IsNotFound(err)
	}, fluxTimeout, poll).Should(BeTrue())
}
