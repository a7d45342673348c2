package providers_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/ack/acktest"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/eks/ekstest"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/providers"
)

const secretValue = "do-not-print-this-secret"

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for k, v := range files {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// serviceAccountKey writes a syntactically valid (unusable) GCP
// service-account key file.
func serviceAccountKey(t *testing.T) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: must(x509.MarshalPKCS8PrivateKey(key))})
	raw, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "obs", "private_key_id": "0", "private_key": string(pemKey),
		"client_email": "ops@obs.iam.gserviceaccount.com", "client_id": "1", "token_uri": "http://127.0.0.1:1/token",
	})
	path := filepath.Join(t.TempDir(), "key.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestParse(t *testing.T) {
	cases := []struct {
		name    string
		yaml    string
		wantErr string
	}{
		{name: "all providers", yaml: `
eks: {region: us-west-2, pollInterval: 20s}
gke: {}
aks: {}
ack: {region: cn-hangzhou}
identities:
  defaults:
    gke: {project: obs}
    aks: {subscriptionID: sub, resourceGroup: rg}
  clusters:
  - {provider: ack, region: cn-hangzhou, name: prod, clusterID: c1}
`},
		{name: "empty", yaml: ``},
		{name: "unknown field", yaml: "eks: {regoin: us-west-2}", wantErr: "regoin"},
		{name: "unknown provider", yaml: "identities: {defaults: {openshift: {project: x}}}", wantErr: `unknown provider "openshift"`},
		{name: "mapping without region", yaml: "identities: {clusters: [{provider: ack, name: prod, clusterID: c1}]}", wantErr: "name and region are required"},
		{name: "mapped twice", yaml: `
identities:
  clusters:
  - {provider: ack, region: r, name: prod, clusterID: c1}
  - {provider: ack, region: r, name: prod, clusterID: c2}
`, wantErr: "mapped twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := providers.Parse([]byte(tc.yaml))
			if tc.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
		})
	}
}

func TestBuildResolvesIdentities(t *testing.T) {
	g := NewWithT(t)
	cfgYAML := fmt.Sprintf(`
eks: {region: us-west-2, endpoint: "http://127.0.0.1:1"}
gke: {endpoint: "http://127.0.0.1:1/", credentialsFile: %q}
aks: {endpoint: "https://127.0.0.1:1"}
ack: {region: cn-hangzhou, endpoint: "http://127.0.0.1:1"}
identities:
  defaults:
    gke: {project: obs}
    aks: {subscriptionID: sub, resourceGroup: rg}
  clusters:
  - {provider: aks, region: westeurope, name: special, resourceGroup: other-rg}
  - {provider: ack, region: cn-hangzhou, name: prod, clusterID: c1}
`, serviceAccountKey(t))
	path := filepath.Join(t.TempDir(), "clouds.yaml")
	g.Expect(os.WriteFile(path, []byte(cfgYAML), 0o600)).To(Succeed())
	cfg, err := providers.Load(path)
	g.Expect(err).NotTo(HaveOccurred())
	reg, err := providers.Build(context.Background(), cfg, providers.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reg.Names()).To(Equal([]string{cloud.ACK, cloud.AKS, cloud.EKS, cloud.GKE}))

	cases := []struct {
		provider, name, region string
		want                   cloud.ClusterRef
		wantErr                string
	}{
		{provider: cloud.GKE, name: "prod", region: "europe-west1", want: cloud.ClusterRef{Provider: cloud.GKE, Name: "prod", Region: "europe-west1", Project: "obs"}},
		{provider: cloud.AKS, name: "prod", region: "westeurope", want: cloud.ClusterRef{Provider: cloud.AKS, Name: "prod", Region: "westeurope", SubscriptionID: "sub", ResourceGroup: "rg"}},
		{provider: cloud.AKS, name: "special", region: "westeurope", want: cloud.ClusterRef{Provider: cloud.AKS, Name: "special", Region: "westeurope", SubscriptionID: "sub", ResourceGroup: "other-rg"}},
		{provider: cloud.ACK, name: "prod", region: "cn-hangzhou", want: cloud.ClusterRef{Provider: cloud.ACK, Name: "prod", Region: "cn-hangzhou", ClusterID: "c1"}},
		{provider: cloud.ACK, name: "other", region: "cn-hangzhou", wantErr: "no clusterID configured"},
		{provider: cloud.EKS, name: "any", region: "eu-west-1", want: cloud.ClusterRef{Provider: cloud.EKS, Name: "any", Region: "eu-west-1"}},
		{provider: cloud.Mock, name: "any", region: "local", wantErr: "not configured"},
	}
	for _, tc := range cases {
		t.Run(tc.provider+"/"+tc.name, func(t *testing.T) {
			g := NewWithT(t)
			p, ref, err := reg.Resolve(tc.provider, tc.name, tc.region)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Name()).To(Equal(tc.provider))
			g.Expect(ref).To(Equal(tc.want))
		})
	}
}

func TestCredentialsFromMountedSecrets(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	eksSrv := ekstest.New(t)
	eksSrv.AddCluster(ekstest.Cluster{Name: "prod", Region: "eu-west-1", Version: "1.29"})
	ackSrv := acktest.New(t)
	ackSrv.AddCluster(acktest.Cluster{ID: "c1", Name: "prod", Region: "cn-hangzhou", Version: "1.29.3-aliyun.1"})

	cfg := &providers.Config{
		EKS: &providers.EKSConfig{Region: "us-west-2", Common: providers.Common{Endpoint: eksSrv.URL},
			CredentialsDir: writeFiles(t, map[string]string{"aws_access_key_id": "AKIAFAKEFAKEFAKEFAKE", "aws_secret_access_key": secretValue})},
		ACK: &providers.ACKConfig{Region: "cn-hangzhou", Common: providers.Common{Endpoint: ackSrv.URL},
			CredentialsDir: writeFiles(t, map[string]string{"access_key_id": "LTAIfakefakefakefake", "access_key_secret": secretValue})},
		Identities: providers.Identities{Clusters: []providers.ClusterIdentity{
			{Provider: cloud.ACK, Region: "cn-hangzhou", Name: "prod", ClusterIdentity: cloud.ClusterIdentity{ClusterID: "c1"}},
		}},
	}
	g.Expect(cfg.Validate()).To(Succeed())
	reg, err := providers.Build(ctx, cfg, providers.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	for _, tc := range []struct{ provider, region string }{{cloud.EKS, "eu-west-1"}, {cloud.ACK, "cn-hangzhou"}} {
		p, ref, err := reg.Resolve(tc.provider, "prod", tc.region)
		g.Expect(err).NotTo(HaveOccurred())
		c, err := p.DescribeCluster(ctx, ref)
		g.Expect(err).NotTo(HaveOccurred(), tc.provider)
		g.Expect(c.Name).To(Equal("prod"))
	}
}

func TestSecretErrorsNameKeysNotValues(t *testing.T) {
	cases := []struct {
		name    string
		cfg     providers.Config
		wantErr string
	}{
		{name: "eks without secret key", wantErr: "lacks aws_secret_access_key",
			cfg: providers.Config{EKS: &providers.EKSConfig{Region: "us-west-2", CredentialsDir: writeFiles(t, map[string]string{"aws_access_key_id": secretValue})}}},
		{name: "aks without client secret", wantErr: "lacks client_secret",
			cfg: providers.Config{AKS: &providers.AKSConfig{CredentialsDir: writeFiles(t, map[string]string{"tenant_id": secretValue, "client_id": secretValue})}}},
		{name: "ack with an empty secret", wantErr: "lacks access_key_secret",
			cfg: providers.Config{ACK: &providers.ACKConfig{CredentialsDir: writeFiles(t, map[string]string{"access_key_id": secretValue, "access_key_secret": ""})}}},
		{name: "missing directory", wantErr: "lacks access_key_id, access_key_secret",
			cfg: providers.Config{ACK: &providers.ACKConfig{CredentialsDir: filepath.Join(t.TempDir(), "nope")}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := providers.Build(context.Background(), &tc.cfg, providers.Options{})
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
			g.Expect(err.Error()).NotTo(ContainSubstring(secretValue))
		})
	}
}

func TestExtraProvidersAreRegistered(t *testing.T) {
	g := NewWithT(t)
	reg, err := providers.Build(context.Background(), &providers.Config{}, providers.Options{Extra: []cloud.Provider{fakeProvider{}}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reg.Names()).To(Equal([]string{cloud.Mock}))
}

type fakeProvider struct{ cloud.Provider }

func (fakeProvider) Name() string { return cloud.Mock }
