package integration

import (
	"context"
	"net/http"
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
)

// doIfMatch sends a request with an If-Match header and returns the
// status, the ETag header and the body.
func (s *apiServer) doIfMatch(method, path, body, ifMatch string) (int, string, []byte) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
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
	return resp.StatusCode, resp.Header.Get("ETag"), []byte(b.String())
}

// TestVMClusterETagAndDataLoss: with the real Flux controllers writing
// status, the etag of a vmcluster stays what its create returned; a PUT
// that would lose data is refused unless acknowledged; a stale etag is a
// 412 and a current one works, although Flux keeps changing the
// resourceVersion.
func TestVMClusterETagAndDataLoss(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	s := startServer(t, ns, nil)
	created := s.create(map[string]any{"name": "c1", "values": map[string]any{"retentionPeriod": "3"}})
	g.Expect(created.ETag).NotTo(BeEmpty())
	hr := &helmv2.HelmRelease{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c1"}, hr)).To(Succeed())
	createdRV := hr.ResourceVersion

	// Flux installs it, writing status many times: same etag.
	running := s.waitStatus("c1", vmclusters.StatusRunning)
	g.Expect(running.ETag).To(Equal(created.ETag))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c1"}, hr)).To(Succeed())
	g.Expect(hr.ResourceVersion).NotTo(Equal(createdRV), "Flux wrote status")
	code, etagHeader, _ := s.doIfMatch(http.MethodGet, itemPath("c1"), "", "")
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(etagHeader).To(Equal(`"` + created.ETag + `"`))

	// A shorter retention: refused, then acknowledged.
	code, _, b := s.doIfMatch(http.MethodPut, itemPath("c1"), `{"values":{"retentionPeriod":"2w"}}`, etagHeader)
	g.Expect(code).To(Equal(http.StatusBadRequest), string(b))
	g.Expect(violations(t, b)).To(Equal([]string{"values.retentionPeriod"}))
	g.Expect(s.get("c1").ValuesOverrides).To(MatchJSON(`{"retentionPeriod":"3"}`))
	code, newETag, b := s.doIfMatch(http.MethodPut, itemPath("c1"), `{"values":{"retentionPeriod":"2w"},"allow_data_loss":true}`, etagHeader)
	g.Expect(code).To(Equal(http.StatusAccepted), string(b))
	g.Expect(newETag).NotTo(Equal(etagHeader))
	s.waitStatus("c1", vmclusters.StatusRunning)
	g.Eventually(func(g Gomega) {
		g.Expect(configMap(g, ns, "c1")).To(HaveKeyWithValue("retentionPeriod", "2w"))
	}).Should(Succeed())

	// The old etag is stale: PUT and DELETE answer 412 and change nothing.
	code, _, b = s.doIfMatch(http.MethodPut, itemPath("c1"), `{"values":{"retentionPeriod":"5"}}`, etagHeader)
	g.Expect(code).To(Equal(http.StatusPreconditionFailed), string(b))
	g.Expect(errorOf(t, b).Error.Status).To(Equal("FAILED_PRECONDITION"))
	code, _, b = s.doIfMatch(http.MethodDelete, itemPath("c1"), "", etagHeader)
	g.Expect(code).To(Equal(http.StatusPreconditionFailed), string(b))
	current := s.get("c1")
	g.Expect(current.ValuesOverrides).To(MatchJSON(`{"retentionPeriod":"2w"}`))
	g.Expect(current.Status).To(Equal(vmclusters.StatusRunning))
	g.Expect(`"`+current.ETag+`"`).To(Equal(newETag), "Flux's status writes since the PUT left the etag alone")

	// The current one deletes it.
	code, _, b = s.doIfMatch(http.MethodDelete, itemPath("c1"), "", newETag)
	g.Expect(code).To(Equal(http.StatusAccepted), string(b))
	s.waitGone("c1")
}
