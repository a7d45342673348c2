package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/go-logr/logr/testr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/app"
	"github.com/tidbcloud/ops-server/apiserver/internal/auth"
	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
)

// Timeouts of the waits on Flux. Generous: the machine may be shared.
const (
	fluxTimeout = 2 * time.Minute
	poll        = 200 * time.Millisecond
)

// deadRepository is a repository URL nobody listens on: vmclusters
// created from it never install, so Flux does next to no work for them.
const deadRepository = "http://127.0.0.1:1/charts"

// apiServer is one running ops-apiserver and an HTTP client for it.
type apiServer struct {
	t    *testing.T
	app  *app.App
	base string
	ns   string
	hc   *http.Client
}

// testToken is the bearer token of the tests' caller.
const testToken = "integration-test-token"

// startServer starts an ops-apiserver for namespace ns, with the chart
// from the test's http repository unless configure says otherwise, and
// waits until it is ready. It stops with the test.
func startServer(t *testing.T, ns string, configure func(*config.Config)) *apiServer {
	t.Helper()
	g := NewWithT(t)
	cfg := config.Default()
	cfg.ListenAddress = "127.0.0.1:0"
	cfg.LocalRepository.ListenAddress = "127.0.0.1:0"
	cfg.Namespace = ns
	cfg.Chart.Repository = chartRepoURL
	cfg.Chart.Version = "0.1.0"
	// Authentication stays on: the tests call as a static-token user of
	// group system:masters, whom the real SubjectAccessReview allows all.
	cfg.Auth.TokenFile = filepath.Join(t.TempDir(), "tokens.csv")
	g.Expect(os.WriteFile(cfg.Auth.TokenFile, []byte(auth.HashToken(testToken)+`,integration-tester,,"system:masters"`+"\n"), 0o600)).To(Succeed())
	cfg.Auth.RateLimitQPS = 0
	if configure != nil {
		configure(cfg)
	}
	g.Expect(cfg.Validate()).To(Succeed())

	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, app.Options{Config: cfg, RESTConfig: env.Config, Logger: testr.New(t)})
	if err != nil {
		cancel()
		t.Fatalf("app.New: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("ops-apiserver stopped with an error: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("ops-apiserver did not stop within 30s")
		}
	})
	s := &apiServer{t: t, app: a, base: "http://" + a.Addr(), ns: ns, hc: contractClient(t, &http.Client{Timeout: 30 * time.Second})}
	g.Eventually(func() int {
		code, _ := s.do(http.MethodGet, "/readyz", nil)
		return code
	}, 30*time.Second, 50*time.Millisecond).Should(Equal(http.StatusOK))
	return s
}

// do sends a request; body is sent as is when it is a string or []byte,
// JSON-encoded otherwise.
func (s *apiServer) do(method, path string, body any) (int, []byte) {
	s.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			s.t.Fatal(err)
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.base+path, r)
	if err != nil {
		s.t.Fatal(err)
	}
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := s.hc.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.StatusCode, out
}

func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decoding %T from %s: %v", v, b, err)
	}
	return v
}

func itemPath(id string) string { return vmclusters.BasePath + "/" + id }

// create POSTs and expects 202.
func (s *apiServer) create(body any) vmclusters.VMCluster {
	s.t.Helper()
	code, b := s.do(http.MethodPost, vmclusters.BasePath, body)
	if code != http.StatusAccepted {
		s.t.Fatalf("POST: want 202, got %d: %s", code, b)
	}
	return decode[vmclusters.VMCluster](s.t, b)
}

// get GETs a vmcluster and expects 200.
func (s *apiServer) get(id string) vmclusters.VMCluster {
	s.t.Helper()
	code, b := s.do(http.MethodGet, itemPath(id), nil)
	if code != http.StatusOK {
		s.t.Fatalf("GET %s: want 200, got %d: %s", id, code, b)
	}
	return decode[vmclusters.VMCluster](s.t, b)
}

// waitStatus polls until the vmcluster reads want; reading FAILED while
// waiting for something else stops at once with Flux's message.
func (s *apiServer) waitStatus(id string, want vmclusters.Status) vmclusters.VMCluster {
	s.t.Helper()
	var last vmclusters.VMCluster
	NewWithT(s.t).Eventually(func(g Gomega) {
		code, b := s.do(http.MethodGet, itemPath(id), nil)
		g.Expect(code).To(Equal(http.StatusOK), string(b))
		last = decode[vmclusters.VMCluster](s.t, b)
		if last.Status == vmclusters.StatusFailed && want != vmclusters.StatusFailed {
			StopTrying(fmt.Sprintf("vmcluster %s FAILED: %s: %s", id, last.StatusReason, last.StatusMessage)).Now()
		}
		g.Expect(last.Status).To(Equal(want), "status_reason=%s status_message=%s", last.StatusReason, last.StatusMessage)
	}, fluxTimeout, poll).Should(Succeed(), func() string { return s.describe(id) })
	return last
}

// waitGone polls until GET answers 404.
func (s *apiServer) waitGone(id string) {
	s.t.Helper()
	NewWithT(s.t).Eventually(func() int {
		code, _ := s.do(http.MethodGet, itemPath(id), nil)
		return code
	}, fluxTimeout, poll).Should(Equal(http.StatusNotFound), func() string { return s.describe(id) })
}

// describe dumps the HelmReleases of the namespace and the Flux logs, for
// failure messages.
func (s *apiServer) describe(id string) string {
	var list helmv2.HelmReleaseList
	_ = env.Client.List(context.Background(), &list, client.InNamespace(s.ns))
	var b strings.Builder
	fmt.Fprintf(&b, "vmcluster %s in namespace %s; HelmReleases:\n", id, s.ns)
	for _, hr := range list.Items {
		st, _ := json.MarshalIndent(hr.Status, "  ", "  ")
		fmt.Fprintf(&b, "- %s generation %d status:\n  %s\n", hr.Name, hr.Generation, st)
	}
	b.WriteString(flux.Logs())
	return b.String()
}

// errorOf decodes an AIP-193 error body.
func errorOf(t *testing.T, b []byte) apierror.Body {
	t.Helper()
	return decode[apierror.Body](t, b)
}

// violations returns the fields of the BadRequest detail.
func violations(t *testing.T, b []byte) []string {
	t.Helper()
	var out []string
	for _, d := range errorOf(t, b).Error.Details {
		if d.Type == apierror.TypeBadRequest {
			for _, v := range d.FieldViolations {
				out = append(out, v.Field)
			}
		}
	}
	return out
}

// withMockCloud seeds cluster (Kubernetes 1.29, node group vmstorage of 3)
// in a mock cloud of its own namespace and returns the configuration of a
// server whose upgrades and backups live in ns and use that cloud (its
// vmclusters' chart repository is dead: these tests are about the REST
// layer, not Flux).
func withMockCloud(t *testing.T, ns, cluster string) func(*config.Config) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	mockNS := ns + "-cloud"
	g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: mockNS}})).To(Succeed())
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: mockNS}})
	})
	p := &mock.Provider{Client: env.Client, Namespace: mockNS}
	g.Expect(p.Seed(ctx, cloud.ClusterRef{Provider: cloud.Mock, Name: cluster, Region: "local"}, mock.ClusterState{
		Version:    "1.29",
		NodeGroups: map[string]*mock.NodeGroupState{"vmstorage": {Size: 3, InstanceTypes: []string{"m5.xlarge"}}},
	})).To(Succeed())
	return func(c *config.Config) {
		c.Chart.Repository = deadRepository
		c.Upgrades.Namespace = ns
		c.Upgrades.EnableMockCloud = true
		c.Upgrades.MockNamespace = mockNS
		c.Backups.Namespace = ns
		c.Backups.FSRoots = []string{"/srv/backups"}
	}
}
