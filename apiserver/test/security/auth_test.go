package security

// Issue #18 items 4 and 7: REST permissions are separate from the custom
// resources' RBAC, and authentication cannot be starved (a per-address
// limit before any TokenReview), replayed from elsewhere (token
// audiences), or switched off on a reachable address; refusals are
// audited; the API can serve TLS.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/app"
	"github.com/tidbcloud/ops-server/apiserver/internal/auth"
	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

// authServer is an ops-apiserver of the auth cases: it records its audit
// lines and counts the TokenReviews it sends to the API server.
type authServer struct {
	t       *testing.T
	ns      string
	base    string
	http    *http.Client
	cs      *kubernetes.Clientset
	reviews *atomic.Int64

	mu     sync.Mutex
	audits []string
}

// authConfig is the configuration of an authServer before configure.
func authConfig(t *testing.T, ns string) *config.Config {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte(auth.HashToken(adminToken)+`,test-admin,,"system:masters"`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.ListenAddress = "127.0.0.1:0"
	cfg.LocalRepository.ListenAddress = "127.0.0.1:0"
	cfg.Namespace, cfg.Upgrades.Namespace, cfg.Backups.Namespace = ns, ns, ns
	cfg.Chart.LocalDir = filepath.Join(root, "deploy", "charts", "vmcluster")
	cfg.Auth.TokenFile = tokens
	cfg.Auth.RateLimitQPS = 0
	cfg.Auth.ClientRateLimitQPS = 0
	return cfg
}

// startAuth assembles an ops-apiserver on the suite's API server in a new
// namespace; configure changes its configuration; client is the HTTP
// client to reach it with (nil: the default).
func startAuth(t *testing.T, configure func(*config.Config), httpClient *http.Client) *authServer {
	t.Helper()
	g := NewWithT(t)
	s := &authServer{t: t, ns: env.NewNamespace(t), reviews: &atomic.Int64{}, http: httpClient}
	if s.http == nil {
		s.http = &http.Client{}
	}
	cfg := authConfig(t, s.ns)
	if configure != nil {
		configure(cfg)
	}
	g.Expect(cfg.Validate()).To(Succeed())

	restCfg := rest.CopyConfig(env.Config)
	restCfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return authRoundTrip(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/tokenreviews") {
				s.reviews.Add(1)
			}
			return rt.RoundTrip(req)
		})
	}
	log := funcr.New(func(prefix, args string) {
		if strings.Contains(prefix, "audit") {
			s.mu.Lock()
			s.audits = append(s.audits, args)
			s.mu.Unlock()
		}
	}, funcr.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, app.Options{Config: cfg, RESTConfig: restCfg, Logger: log})
	if err != nil {
		cancel()
		t.Fatalf("app.New: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	s.base = a.Scheme() + "://" + a.Addr()
	s.cs, err = kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() int {
		code, _, _ := s.call(http.MethodGet, "/readyz", "")
		return code
	}, 30*time.Second, 50*time.Millisecond).Should(Equal(http.StatusOK))
	return s
}

type authRoundTrip func(*http.Request) (*http.Response, error)

func (f authRoundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// call sends one request with token ("" for none).
func (s *authServer) call(method, path, token string) (int, http.Header, string) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.base+path, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("X-Request-Id", "sec-auth-test")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := contractClient(s.t, s.http).Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, resp.Header, string(body)
}

// auditLines returns the audit lines containing every part.
func (s *authServer) auditLines(parts ...string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range s.audits {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(l, p)
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// serviceAccount creates a ServiceAccount bound to a Role of rules (none:
// no Role) and returns its user name.
func (s *authServer) serviceAccount(name string, rules ...rbacv1.PolicyRule) string {
	s.t.Helper()
	ctx := context.Background()
	g := NewWithT(s.t)
	g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns}})).To(Succeed())
	if len(rules) > 0 {
		g.Expect(env.Client.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns}, Rules: rules})).To(Succeed())
		g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: s.ns}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		})).To(Succeed())
	}
	return "system:serviceaccount:" + s.ns + ":" + name
}

// token mints a token of the ServiceAccount for audiences (none: the API
// server's own), as `kubectl create token --audience` does.
func (s *authServer) token(sa string, audiences ...string) string {
	s.t.Helper()
	tr, err := s.cs.CoreV1().ServiceAccounts(s.ns).CreateToken(context.Background(), sa, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{Audiences: audiences, ExpirationSeconds: ptr.To[int64](600)},
	}, metav1.CreateOptions{})
	NewWithT(s.t).Expect(err).NotTo(HaveOccurred())
	return tr.Status.Token
}

// kubeClientWithToken is a client of the suite's API server that
// authenticates with a bearer token only.
func kubeClientWithToken(t *testing.T, token string) client.Client {
	t.Helper()
	cfg := &rest.Config{Host: env.Config.Host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: env.Config.CAData, CAFile: env.Config.CAFile}}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const authVMClustersPath = "/api/v1/observability-ops/vmclusters"

// Item 4: the REST permissions live in a group no CRD serves. A
// ServiceAccount with every REST permission cannot create a ClusterBackup
// or a ClusterUpgradeOperation through the Kubernetes API, and one with
// every right on the custom resources gets 403 from the REST API.
func TestRESTAndCustomResourcePermissionsAreSeparate(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := startAuth(t, nil, nil)
	g.Expect(auth.Group).NotTo(Equal(opsv1.GroupVersion.Group))

	restOperator := s.serviceAccount("rest-operator", rbacv1.PolicyRule{
		APIGroups: []string{auth.Group},
		Resources: []string{"vmclusters", "clusterbackups", "upgradeoperations", "upgradeoperations/dryrun", "upgradeoperations/pause", "upgradeoperations/resume", "nodegroups", "addons"},
		Verbs:     []string{"get", "list", "create", "update", "delete"},
	})
	crdEditor := s.serviceAccount("crd-editor", rbacv1.PolicyRule{
		APIGroups: []string{opsv1.GroupVersion.Group},
		Resources: []string{"clusterbackups", "clusterupgradeoperations", "vmclusters"},
		Verbs:     []string{"*"},
	})
	restToken, crdToken := s.token("rest-operator"), s.token("crd-editor")

	// The REST operator uses the REST API...
	code, _, body := s.call(http.MethodGet, authVMClustersPath, restToken)
	g.Expect(code).To(Equal(http.StatusOK), body)
	// ...and has no rights on the custom resources through kubectl.
	kube := kubeClientWithToken(t, restToken)
	backup := &opsv1.ClusterBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "b1", Namespace: s.ns},
		Spec:       opsv1.ClusterBackupSpec{VMCluster: opsv1.VMClusterReference{Name: "vm1"}, Destination: opsv1.BackupDestination{URL: "s3://bucket/x"}},
	}
	err := kube.Create(ctx, backup.DeepCopy())
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s creating a ClusterBackup through the Kubernetes API: %v", restOperator, err)
	err = kube.List(ctx, &opsv1.ClusterUpgradeOperationList{}, client.InNamespace(s.ns))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s listing ClusterUpgradeOperations: %v", restOperator, err)

	// The CRD editor uses the Kubernetes API...
	crdKube := kubeClientWithToken(t, crdToken)
	err = crdKube.Create(ctx, backup.DeepCopy(), client.DryRunAll)
	g.Expect(apierrors.IsForbidden(err)).To(BeFalse(), "%s creating a ClusterBackup through the Kubernetes API: %v", crdEditor, err)
	// ...and gets 403 from the REST API, for backups as for the rest.
	for _, r := range []struct{ method, path, resource string }{
		{http.MethodGet, authVMClustersPath + "/vm1/backups", "clusterbackups"},
		{http.MethodPost, authVMClustersPath + "/vm1/backups", "clusterbackups"},
		{http.MethodGet, "/ops/api/v1/upgradeOperations", "upgradeoperations"},
		{http.MethodGet, authVMClustersPath, "vmclusters"},
	} {
		code, _, body := s.call(r.method, r.path, crdToken)
		g.Expect(code).To(Equal(http.StatusForbidden), "%s %s as %s: %s", r.method, r.path, crdEditor, body)
		g.Expect(body).To(ContainSubstring(fmt.Sprintf(`resource \"%s\" in API group \"%s\"`, r.resource, auth.Group)))
	}
}

// Item 7: with an audience configured, only tokens minted for it are
// accepted; a token for the Kubernetes API server, or for another
// service, is a 401 — and the token minted for ops-apiserver is refused by
// the Kubernetes API server.
func TestTokenForAnotherAudienceIsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := startAuth(t, func(c *config.Config) { c.Auth.TokenAudiences = []string{"ops-server"} }, nil)
	s.serviceAccount("caller", rbacv1.PolicyRule{APIGroups: []string{auth.Group}, Resources: []string{"vmclusters"}, Verbs: []string{"list"}})

	ours := s.token("caller", "ops-server")
	code, _, body := s.call(http.MethodGet, authVMClustersPath, ours)
	g.Expect(code).To(Equal(http.StatusOK), "a token minted for ops-server: %s", body)

	for name, tok := range map[string]string{
		"the API server's audience": s.token("caller"),
		"another service":           s.token("caller", "vault"),
	} {
		code, h, body := s.call(http.MethodGet, authVMClustersPath, tok)
		g.Expect(code).To(Equal(http.StatusUnauthorized), "a token for %s: %s", name, body)
		g.Expect(h.Get("WWW-Authenticate")).To(ContainSubstring("invalid_token"))
		// Nothing of the TokenReview's answer is echoed.
		g.Expect(body).NotTo(ContainSubstring("target audiences"))
		g.Expect(body).NotTo(ContainSubstring("invalid bearer token"))
	}

	// Not replayable against the Kubernetes API server either.
	err := kubeClientWithToken(t, ours).List(ctx, &corev1.ConfigMapList{}, client.InNamespace(s.ns))
	g.Expect(apierrors.IsUnauthorized(err)).To(BeTrue(), "the ops-server token against the Kubernetes API server: %v", err)
}

// Item 7: a flood from one address is refused with 429 before any
// TokenReview, so it cannot starve the authentication of others; every
// refusal is audited.
func TestFloodFromOneAddressIsRefusedBeforeTokenReview(t *testing.T) {
	g := NewWithT(t)
	s := startAuth(t, func(c *config.Config) {
		c.Auth.ClientRateLimitQPS = 0.001
		c.Auth.ClientRateLimitBurst = 5
	}, nil)
	before := s.reviews.Load()
	codes := map[int]int{}
	retryAfter := ""
	for i := range 60 {
		code, h, _ := s.call(http.MethodGet, authVMClustersPath, fmt.Sprintf("random-token-%d", i))
		codes[code]++
		if code == http.StatusTooManyRequests {
			retryAfter = h.Get("Retry-After")
		}
	}
	g.Expect(codes).To(Equal(map[int]int{http.StatusUnauthorized: 5, http.StatusTooManyRequests: 55}))
	g.Expect(retryAfter).NotTo(BeEmpty())
	g.Expect(s.reviews.Load()-before).To(Equal(int64(5)), "TokenReviews sent for the flood: only the burst's")
	g.Expect(s.auditLines(`"result"="rate_limited"`, `"status"=429`, `"requestID"="sec-auth-test"`, `"operation"="vmclusters.list"`)).To(HaveLen(55))
	g.Expect(s.auditLines(`"result"="unauthenticated"`, `"status"=401`, `"user"=""`)).To(HaveLen(5))
	// Public probes are not limited.
	code, _, _ := s.call(http.MethodGet, "/healthz", "")
	g.Expect(code).To(Equal(http.StatusOK))
}

// Item 7: 401, 403 and the per-user 429 each leave an audit line naming
// the user when it is known, the route, the result and the request id.
func TestRefusalsAreAudited(t *testing.T) {
	g := NewWithT(t)
	s := startAuth(t, func(c *config.Config) {
		c.Auth.RateLimitQPS = 0.001
		c.Auth.RateLimitBurst = 2
	}, nil)
	user := s.serviceAccount("nobody")
	tok := s.token("nobody")

	code, _, _ := s.call(http.MethodGet, authVMClustersPath, "")
	g.Expect(code).To(Equal(http.StatusUnauthorized))
	g.Expect(s.auditLines(`"result"="unauthenticated"`, `"reason"="NO_CREDENTIALS"`, `"path"="`+authVMClustersPath+`"`, `"requestID"="sec-auth-test"`)).To(HaveLen(1))

	for range 2 {
		code, _, _ = s.call(http.MethodDelete, authVMClustersPath+"/any", tok)
		g.Expect(code).To(Equal(http.StatusForbidden))
	}
	g.Expect(s.auditLines(`"result"="forbidden"`, `"status"=403`, fmt.Sprintf(`"user"=%q`, user), `"operation"="vmclusters.delete"`, `"requestID"="sec-auth-test"`)).To(HaveLen(2))

	code, h, _ := s.call(http.MethodDelete, authVMClustersPath+"/any", tok)
	g.Expect(code).To(Equal(http.StatusTooManyRequests))
	g.Expect(h.Get("Retry-After")).NotTo(BeEmpty())
	g.Expect(s.auditLines(`"result"="rate_limited"`, fmt.Sprintf(`"user"=%q`, user), `"operation"="vmclusters.delete"`)).To(HaveLen(1))
}

// Item 7: --insecure-disable-auth is refused unless the server listens on
// a loopback address.
func TestDisableAuthRefusedOffLoopback(t *testing.T) {
	g := NewWithT(t)
	ns := env.NewNamespace(t)
	for _, addr := range []string{":0", "0.0.0.0:0", "[::]:0", nonLoopbackAddr(t) + ":0"} {
		cfg := authConfig(t, ns)
		cfg.ListenAddress = addr
		cfg.Auth.InsecureDisableAuth = true
		g.Expect(cfg.Validate()).To(MatchError(ContainSubstring("loopback")), addr)
		// Even past Validate, the assembly refuses it.
		a, err := app.New(context.Background(), app.Options{Config: cfg, RESTConfig: env.Config, Logger: funcr.New(func(string, string) {}, funcr.Options{})})
		g.Expect(err).To(MatchError(ContainSubstring("loopback")), addr)
		g.Expect(a).To(BeNil())
	}
	// On loopback it starts, serving everyone as anonymous.
	s := startAuth(t, func(c *config.Config) { c.Auth.InsecureDisableAuth = true }, nil)
	code, _, body := s.call(http.MethodGet, authVMClustersPath, "")
	g.Expect(code).To(Equal(http.StatusOK), body)
}

// nonLoopbackAddr is an address of this machine that is not loopback
// (listening on it is what must be refused), or a documentation address
// when there is none (Validate refuses before listening anyway).
func nonLoopbackAddr(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
				return ipn.IP.String()
			}
		}
	}
	return "192.0.2.1"
}

// Item 7: with a certificate and key the API serves HTTPS only, and a
// renewed certificate is served without a restart.
func TestServesTLS(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	ca := newAuthTestCA(t)
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	first := ca.issue(t, certFile, keyFile)
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	var served atomic.Value
	httpsClient := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12, VerifyConnection: func(cs tls.ConnectionState) error {
			served.Store(cs.PeerCertificates[0].SerialNumber.String())
			return nil
		}},
		DisableKeepAlives: true,
	}}
	s := startAuth(t, func(c *config.Config) {
		c.TLS.CertFile, c.TLS.PrivateKeyFile = certFile, keyFile
	}, httpsClient)
	g.Expect(s.base).To(HavePrefix("https://127.0.0.1:"))

	code, _, _ := s.call(http.MethodGet, "/healthz", "")
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(served.Load()).To(Equal(first.String()))
	code, _, body := s.call(http.MethodGet, authVMClustersPath, adminToken)
	g.Expect(code).To(Equal(http.StatusOK), body)

	// Plain HTTP gets no answer from the API.
	resp, err := http.Get("http" + strings.TrimPrefix(s.base, "https") + "/healthz")
	if err == nil {
		resp.Body.Close()
		g.Expect(resp.StatusCode).NotTo(Equal(http.StatusOK))
	}

	// A renewed certificate is served by the next connections.
	second := ca.issue(t, certFile, keyFile)
	g.Eventually(func() any {
		s.call(http.MethodGet, "/healthz", "")
		return served.Load()
	}, 30*time.Second, 200*time.Millisecond).Should(Equal(second.String()))
}

// authTestCA issues certificates for 127.0.0.1.
type authTestCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	next int64
}

func newAuthTestCA(t *testing.T) *authTestCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "security-test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &authTestCA{cert: cert, key: key, next: 100}
}

// issue writes a new server certificate and key and returns its serial.
func (ca *authTestCA) issue(t *testing.T, certFile, keyFile string) *big.Int {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca.next++
	serial := big.NewInt(ca.next)
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "ops-apiserver"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	// The key first, then the certificate: a reload between the two
	// writes fails to match them and keeps the previous pair.
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return serial
}

// Profiles (--pprof-bind-address) are served without authentication, so
// only on their own loopback listener: never on the REST API's, and an
// address off loopback is refused by Validate and by the assembly.
func TestProfilesOnlyOnTheirOwnLoopbackListener(t *testing.T) {
	g := NewWithT(t)
	ns := env.NewNamespace(t)
	for _, addr := range []string{":0", "0.0.0.0:0", nonLoopbackAddr(t) + ":0"} {
		cfg := authConfig(t, ns)
		cfg.PprofAddress = addr
		g.Expect(cfg.Validate()).To(MatchError(ContainSubstring("loopback")), addr)
		a, err := app.New(context.Background(), app.Options{Config: cfg, RESTConfig: env.Config, Logger: funcr.New(func(string, string) {}, funcr.Options{})})
		g.Expect(err).To(MatchError(ContainSubstring("loopback")), addr)
		g.Expect(a).To(BeNil())
	}
	port, err := testenv.FreePort()
	g.Expect(err).NotTo(HaveOccurred())
	pprofAddr := fmt.Sprintf("127.0.0.1:%d", port)
	s := startAuth(t, func(c *config.Config) { c.PprofAddress = pprofAddr }, nil)
	resp, err := http.Get("http://" + pprofAddr + "/debug/pprof/cmdline")
	g.Expect(err).NotTo(HaveOccurred())
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(string(body)).NotTo(BeEmpty())
	// The REST listener has no such route, with or without a token.
	code, _, _ := s.call(http.MethodGet, "/debug/pprof/cmdline", "")
	g.Expect(code).To(Or(Equal(http.StatusNotFound), Equal(http.StatusUnauthorized)))
}
