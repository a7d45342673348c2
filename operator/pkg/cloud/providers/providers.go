// Package providers builds a cloud.Registry from configuration, so the
// operator's main and the apiserver construct the same providers and
// resolve the same cluster identities.
//
// The configuration is one YAML (or JSON) document, typically a mounted
// ConfigMap; credentials never appear in it, only the directories where
// Secrets are mounted:
//
//	eks:
//	  region: us-west-2              # default region; a request's region wins
//	  credentialsDir: /var/run/secrets/ops/aws   # optional: aws_access_key_id, aws_secret_access_key[, aws_session_token]
//	gke:
//	  credentialsFile: /var/run/secrets/ops/gcp/key.json   # optional: service-account key or workload identity federation config
//	aks:
//	  credentialsDir: /var/run/secrets/ops/azure # optional: tenant_id, client_id, client_secret
//	ack:
//	  region: cn-hangzhou
//	  credentialsDir: /var/run/secrets/ops/alibaba # optional: access_key_id, access_key_secret[, security_token]
//	identities:
//	  defaults:                      # per provider, for every cluster
//	    gke: {project: obs-prod}
//	    aks: {subscriptionID: 0000..., resourceGroup: obs}
//	  clusters:                      # per cluster, overriding the defaults
//	  - {provider: ack, region: cn-hangzhou, name: prod, clusterID: c0123...}
//
// A provider is enabled by its section being present. Without a
// credentials directory or file each provider uses its SDK's default chain:
// IRSA / EKS Pod Identity, GKE Workload Identity, AKS Workload Identity,
// ACK RRSA (see docs/providers). Secrets are read once, at Build; rotate
// them by restarting the process.
package providers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/alibabacloud-go/tea/tea"
	alicred "github.com/aliyun/credentials-go/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/ack"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/aks"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/eks"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/gke"
)

// Config selects and configures the cloud providers.
type Config struct {
	EKS *EKSConfig `json:"eks,omitempty"`
	GKE *GKEConfig `json:"gke,omitempty"`
	AKS *AKSConfig `json:"aks,omitempty"`
	ACK *ACKConfig `json:"ack,omitempty"`
	// Identities map clusters to the cloud identity a request lacks.
	Identities Identities `json:"identities,omitempty"`
}

// Common settings of every provider.
type Common struct {
	// Endpoint overrides the cloud's API endpoint (private endpoints,
	// tests).
	Endpoint string `json:"endpoint,omitempty"`
	// PollInterval is how often a running cloud operation is polled when
	// the cloud gives no hint (default 30s).
	PollInterval *metav1.Duration `json:"pollInterval,omitempty"`
}

func (c Common) poll() time.Duration {
	if c.PollInterval == nil {
		return 0
	}
	return c.PollInterval.Duration
}

// EKSConfig configures Amazon EKS.
type EKSConfig struct {
	Common `json:",inline"`
	// Region is the default region.
	Region string `json:"region,omitempty"`
	// CredentialsDir holds aws_access_key_id, aws_secret_access_key and
	// optionally aws_session_token. Empty: the SDK's default chain.
	CredentialsDir string `json:"credentialsDir,omitempty"`
}

// GKEConfig configures Google Kubernetes Engine.
type GKEConfig struct {
	Common `json:",inline"`
	// CredentialsFile is a credentials JSON file. Empty: Application
	// Default Credentials.
	CredentialsFile string `json:"credentialsFile,omitempty"`
}

// AKSConfig configures Azure Kubernetes Service.
type AKSConfig struct {
	Common `json:",inline"`
	// CredentialsDir holds tenant_id, client_id and client_secret of a
	// service principal. Empty: DefaultAzureCredential.
	CredentialsDir string `json:"credentialsDir,omitempty"`
}

// ACKConfig configures Alibaba Cloud ACK.
type ACKConfig struct {
	Common `json:",inline"`
	// Region is the default region.
	Region string `json:"region,omitempty"`
	// CredentialsDir holds access_key_id, access_key_secret and
	// optionally security_token. Empty: the default chain (RRSA included).
	CredentialsDir string `json:"credentialsDir,omitempty"`
}

// Identities is the identity mapping.
type Identities struct {
	// Defaults are per provider name.
	Defaults map[string]cloud.ClusterIdentity `json:"defaults,omitempty"`
	// Clusters are per cluster and override the defaults.
	Clusters []ClusterIdentity `json:"clusters,omitempty"`
}

// ClusterIdentity maps one cluster.
type ClusterIdentity struct {
	Provider              string `json:"provider"`
	Region                string `json:"region"`
	Name                  string `json:"name"`
	cloud.ClusterIdentity `json:",inline"`
}

// Load reads and validates a configuration file.
func Load(path string) (*Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading cloud provider configuration: %w", err)
	}
	return Parse(raw)
}

// Parse decodes (strictly: unknown fields are errors) and validates a
// configuration.
func Parse(raw []byte) (*Config, error) {
	cfg := &Config{}
	if err := yaml.UnmarshalStrict(raw, cfg); err != nil {
		return nil, fmt.Errorf("parsing cloud provider configuration: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Validate checks the identity mapping against the enabled providers.
func (c *Config) Validate() error {
	var errs []error
	enabled := map[string]bool{cloud.EKS: c.EKS != nil, cloud.GKE: c.GKE != nil, cloud.AKS: c.AKS != nil, cloud.ACK: c.ACK != nil, cloud.Mock: true}
	for p := range c.Identities.Defaults {
		if _, known := enabled[p]; !known {
			errs = append(errs, fmt.Errorf("identities.defaults: unknown provider %q", p))
		}
	}
	seen := map[string]bool{}
	for i, m := range c.Identities.Clusters {
		where := fmt.Sprintf("identities.clusters[%d]", i)
		if _, known := enabled[m.Provider]; !known {
			errs = append(errs, fmt.Errorf("%s: unknown provider %q", where, m.Provider))
		}
		if m.Name == "" || m.Region == "" {
			errs = append(errs, fmt.Errorf("%s: name and region are required", where))
		}
		key := cloud.ClusterKey(m.Provider, m.Region, m.Name)
		if seen[key] {
			errs = append(errs, fmt.Errorf("%s: %s is mapped twice", where, key))
		}
		seen[key] = true
	}
	return errors.Join(errs...)
}

// Options are what Build needs besides the configuration.
type Options struct {
	// Extra providers to register as well, e.g. the mock cloud (which
	// needs a Kubernetes client the caller owns).
	Extra []cloud.Provider
}

// Build constructs the enabled providers and the registry.
func Build(ctx context.Context, cfg *Config, o Options) (*cloud.Registry, error) {
	reg := cloud.NewRegistry(o.Extra...)
	if cfg.EKS != nil {
		p, err := buildEKS(ctx, cfg.EKS)
		if err != nil {
			return nil, err
		}
		reg.Register(p)
	}
	if cfg.GKE != nil {
		p, err := gke.New(ctx, gke.Options{Endpoint: cfg.GKE.Endpoint, CredentialsFile: cfg.GKE.CredentialsFile, PollInterval: cfg.GKE.poll()})
		if err != nil {
			return nil, fmt.Errorf("gke: %w", err)
		}
		reg.Register(p)
	}
	if cfg.AKS != nil {
		p, err := buildAKS(cfg.AKS)
		if err != nil {
			return nil, err
		}
		reg.Register(p)
	}
	if cfg.ACK != nil {
		p, err := buildACK(cfg.ACK)
		if err != nil {
			return nil, err
		}
		reg.Register(p)
	}
	for name, id := range cfg.Identities.Defaults {
		reg.Defaults[name] = id
	}
	for _, m := range cfg.Identities.Clusters {
		reg.Clusters[cloud.ClusterKey(m.Provider, m.Region, m.Name)] = m.ClusterIdentity
	}
	return reg, nil
}

func buildEKS(ctx context.Context, c *EKSConfig) (*eks.Provider, error) {
	o := eks.Options{Region: c.Region, Endpoint: c.Endpoint, PollInterval: c.poll()}
	if c.CredentialsDir != "" {
		files, err := readSecret(c.CredentialsDir, []string{"aws_access_key_id", "aws_secret_access_key"}, []string{"aws_session_token"})
		if err != nil {
			return nil, fmt.Errorf("eks: %w", err)
		}
		o.Credentials = credentials.NewStaticCredentialsProvider(files["aws_access_key_id"], files["aws_secret_access_key"], files["aws_session_token"])
	}
	p, err := eks.New(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("eks: %w", err)
	}
	return p, nil
}

func buildAKS(c *AKSConfig) (*aks.Provider, error) {
	o := aks.Options{Endpoint: c.Endpoint, PollInterval: c.poll()}
	if c.CredentialsDir != "" {
		files, err := readSecret(c.CredentialsDir, []string{"tenant_id", "client_id", "client_secret"}, nil)
		if err != nil {
			return nil, fmt.Errorf("aks: %w", err)
		}
		cred, err := azidentity.NewClientSecretCredential(files["tenant_id"], files["client_id"], files["client_secret"], nil)
		if err != nil {
			return nil, fmt.Errorf("aks: building the service principal credential from %s failed", c.CredentialsDir)
		}
		o.Credential = cred
	}
	p, err := aks.New(o)
	if err != nil {
		return nil, fmt.Errorf("aks: %w", err)
	}
	return p, nil
}

func buildACK(c *ACKConfig) (*ack.Provider, error) {
	o := ack.Options{Region: c.Region, Endpoint: c.Endpoint, PollInterval: c.poll()}
	if c.CredentialsDir != "" {
		files, err := readSecret(c.CredentialsDir, []string{"access_key_id", "access_key_secret"}, []string{"security_token"})
		if err != nil {
			return nil, fmt.Errorf("ack: %w", err)
		}
		cc := &alicred.Config{Type: tea.String("access_key"), AccessKeyId: tea.String(files["access_key_id"]), AccessKeySecret: tea.String(files["access_key_secret"])}
		if tok := files["security_token"]; tok != "" {
			cc.Type, cc.SecurityToken = tea.String("sts"), tea.String(tok)
		}
		cred, err := alicred.NewCredential(cc)
		if err != nil {
			return nil, fmt.Errorf("ack: building the access-key credential from %s failed", c.CredentialsDir)
		}
		o.Credential = cred
	}
	p, err := ack.New(o)
	if err != nil {
		return nil, fmt.Errorf("ack: %w", err)
	}
	return p, nil
}

// readSecret reads the files of a mounted Secret. Errors name the
// directory and the missing keys, never a value.
func readSecret(dir string, required, optional []string) (map[string]string, error) {
	out := map[string]string{}
	var missing []string
	read := func(key string, must bool) error {
		raw, err := os.ReadFile(filepath.Join(dir, key))
		switch {
		case err == nil:
			if v := strings.TrimSpace(string(raw)); v != "" {
				out[key] = v
			} else if must {
				missing = append(missing, key)
			}
		case errors.Is(err, os.ErrNotExist):
			if must {
				missing = append(missing, key)
			}
		default:
			return fmt.Errorf("reading credentials key %q in %s: %w", key, dir, errors.Unwrap(err))
		}
		return nil
	}
	for _, k := range required {
		if err := read(k, true); err != nil {
			return nil, err
		}
	}
	for _, k := range optional {
		if err := read(k, false); err != nil {
			return nil, err
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("credentials directory %s lacks %s", dir, strings.Join(missing, ", "))
	}
	return out, nil
}
