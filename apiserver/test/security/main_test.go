// Package security is the REST API's security suite: one file per rule of
// the security model (docs/install.md, "Security model"), each showing on a
// real kube-apiserver that a request reaching beyond the caller's role is
// refused with a 4xx and changes nothing, and that the same object applied
// directly (kubectl, GitOps) is refused too.
package security

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/app"
	"github.com/tidbcloud/ops-server/apiserver/internal/auth"
	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

var env *testenv.Environment

// adminToken is a system:masters user of the apiserver's token file: the
// suite tests what a request may reach, not who may send it.
const adminToken = "security-test-admin-token"

func TestMain(m *testing.M) {
	os.Exit(testenv.RunMain(m, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{opsv1.AddToScheme}},
		func(e *testenv.Environment) error { env = e; return nil }))
}

// fixture is one ops-apiserver serving its own namespace on the suite's
// API server, with the mock cloud seeded with cluster dev-cluster.
type fixture struct {
	t    *testing.T
	ns   string
	base string
	kube client.Client
}

// start assembles an ops-apiserver for one test; configure may change the
// configuration before it starts (nil: the defaults of the local stack).
func start(t *testing.T, configure func(*config.Config)) *fixture {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	mockNS := ns + "-cloud"
	g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: mockNS}})).To(Succeed())
	p := &mock.Provider{Client: env.Client, Namespace: mockNS}
	g.Expect(p.Seed(ctx, cloud.ClusterRef{Provider: cloud.Mock, Name: "dev-cluster", Region: "local"}, mock.ClusterState{
		Version: "1.29",
		NodeGroups: map[string]*mock.NodeGroupState{
			"observability-ng": {Size: 1, InstanceTypes: []string{"m5.xlarge"}},
			"vmstorage":        {Size: 3, InstanceTypes: []string{"m5.xlarge"}},
		},
	})).To(Succeed())

	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	g.Expect(os.WriteFile(tokens, []byte(auth.HashToken(adminToken)+`,test-admin,,"system:masters"`+"\n"), 0o600)).To(Succeed())

	cfg := config.Default()
	cfg.ListenAddress = "127.0.0.1:0"
	cfg.LocalRepository.ListenAddress = "127.0.0.1:0"
	cfg.Namespace = ns
	cfg.Upgrades.Namespace = ns
	cfg.Upgrades.EnableMockCloud = true
	cfg.Upgrades.MockNamespace = mockNS
	cfg.Backups.Namespace = ns
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	cfg.Chart.LocalDir = filepath.Join(root, "deploy", "charts", "vmcluster")
	cfg.Auth.TokenFile = tokens
	cfg.Auth.RateLimitQPS = 0
	if configure != nil {
		configure(cfg)
	}
	g.Expect(cfg.Validate()).To(Succeed())

	actx, cancel := context.WithCancel(ctx)
	a, err := app.New(actx, app.Options{Config: cfg, RESTConfig: env.Config, Logger: funcr.New(func(string, string) {}, funcr.Options{})})
	if err != nil {
		cancel()
		t.Fatalf("app.New: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(actx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	f := &fixture{t: t, ns: ns, base: "http://" + a.Addr(), kube: env.Client}
	g.Eventually(func() int {
		code, _ := f.do(http.MethodGet, "/readyz", "")
		return code
	}, 30*time.Second, 50*time.Millisecond).Should(Equal(http.StatusOK))
	return f
}

// do sends one request as the admin user and returns the status and body.
func (f *fixture) do(method, path, body string) (int, []byte) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.base+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := contractClient(f.t, nil).Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, out
}
