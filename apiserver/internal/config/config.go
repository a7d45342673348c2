// Package config holds the ops-apiserver configuration: defaults, command
// line flags (a pflag FlagSet of our own, never the global one) and an
// optional YAML file. Flags given on the command line override the file;
// the file overrides the defaults. docs/apiserver.md documents every key.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/template"
	"time"
	"unicode"

	"github.com/Masterminds/semver/v3"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// Source types of the chart.
const (
	SourceHTTPS = "https"
	SourceOCI   = "oci"
	SourceLocal = "local"
)

// MaxRequestBodyLimit is the largest request body limit accepted: the
// values end up in one HelmRelease object, and etcd refuses objects above
// ~1.5 MiB.
const MaxRequestBodyLimit = 1 << 20

// Config is the whole ops-apiserver configuration.
type Config struct {
	// ConfigFile is the YAML file the rest was read from (flag only).
	ConfigFile string `json:"-"`

	// ListenAddress is the host:port of the REST API.
	ListenAddress string `json:"listenAddress"`
	// Namespace is where vmclusters (HelmReleases and their sources) live.
	Namespace string `json:"namespace"`
	// FieldManager is the field manager of every write to Kubernetes.
	FieldManager string `json:"fieldManager"`
	// Kubeconfig is a kubeconfig path; empty means $KUBECONFIG, then the
	// in-cluster configuration.
	Kubeconfig string `json:"kubeconfig"`
	// KubeAPIQPS and KubeAPIBurst limit the requests to the Kubernetes API.
	KubeAPIQPS   float32 `json:"kubeAPIQPS"`
	KubeAPIBurst int     `json:"kubeAPIBurst"`
	// MaxRequestBodyBytes bounds request bodies; larger ones are a 400.
	MaxRequestBodyBytes int64 `json:"maxRequestBodyBytes"`
	// RequestTimeout bounds the work of one request.
	RequestTimeout metav1.Duration `json:"requestTimeout"`
	// ShutdownTimeout bounds the graceful shutdown.
	ShutdownTimeout metav1.Duration `json:"shutdownTimeout"`

	Log             LogConfig             `json:"log"`
	Chart           ChartConfig           `json:"chart"`
	Catalog         CatalogConfig         `json:"catalog"`
	LocalRepository LocalRepositoryConfig `json:"localRepository"`
	Flux            FluxConfig            `json:"flux"`
	Upgrades        UpgradesConfig        `json:"upgrades"`
	Backups         BackupsConfig         `json:"backups"`
	Auth            AuthConfig            `json:"auth"`
	TLS             TLSConfig             `json:"tls"`
	Troubleshoot    TroubleshootConfig    `json:"troubleshoot"`
	Watch           WatchConfig           `json:"watch"`
}

// WatchConfig bounds the watch streams of the list routes (?watch=true,
// docs/apiserver.md "Watch streams").
type WatchConfig struct {
	// Heartbeat is the interval of the comment lines of an idle stream.
	Heartbeat metav1.Duration `json:"heartbeat"`
	// MaxDuration ends a stream cleanly; the client reconnects with
	// Last-Event-ID.
	MaxDuration metav1.Duration `json:"maxDuration"`
	// MaxPerCaller and MaxTotal cap the concurrent streams of one caller
	// and of the server (429 beyond).
	MaxPerCaller int `json:"maxPerCaller"`
	MaxTotal     int `json:"maxTotal"`
}

// TroubleshootConfig bounds the logs and exec routes of a vmcluster's
// Pods (docs/troubleshooting.md).
type TroubleshootConfig struct {
	// LogMaxBytes is the most bytes one logs request returns (its
	// limitBytes default and maximum).
	LogMaxBytes int64 `json:"logMaxBytes"`
	// LogFollowMaxDuration ends a followed log stream.
	LogFollowMaxDuration metav1.Duration `json:"logFollowMaxDuration"`
	// ExecAllowedCommands, when not empty, are the only executables an
	// exec may run (exact matches of the command's first item).
	ExecAllowedCommands []string `json:"execAllowedCommands"`
	// ExecMaxOutputBytes bounds each of an exec's stdout and stderr; the
	// rest is dropped and the answer says truncated.
	ExecMaxOutputBytes int64 `json:"execMaxOutputBytes"`
	// DiagnosticsLogLines is how many of the last lines of each
	// container's log a diagnostics bundle holds.
	DiagnosticsLogLines int64 `json:"diagnosticsLogLines"`
	// DiagnosticsMaxBytes bounds a diagnostics bundle's content
	// (uncompressed); the parts past it are cut and listed as truncated.
	DiagnosticsMaxBytes int64 `json:"diagnosticsMaxBytes"`
}

// TLSConfig turns on HTTPS for the REST API (docs/install.md, "TLS").
type TLSConfig struct {
	// CertFile is a PEM certificate (chain) file; with PrivateKeyFile it
	// makes the REST API serve HTTPS only. Both files are re-read when
	// they change (checked at most once every few seconds), so a renewed
	// certificate (cert-manager) is used without a restart.
	CertFile string `json:"certFile"`
	// PrivateKeyFile is the PEM private key of CertFile.
	PrivateKeyFile string `json:"privateKeyFile"`
}

// Enabled reports whether HTTPS is configured.
func (c TLSConfig) Enabled() bool { return c.CertFile != "" || c.PrivateKeyFile != "" }

// AuthConfig configures authentication, authorization, audit and the
// per-caller rate limit of the REST API (docs/auth.md).
type AuthConfig struct {
	// InsecureDisableAuth serves every route to anyone. For explicit local
	// use only: it is refused unless ListenAddress is a loopback address
	// (127.0.0.0/8, ::1, localhost), and the server logs a warning at
	// start-up.
	InsecureDisableAuth bool `json:"insecureDisableAuth"`
	// TokenFile is an optional file of hashed static bearer tokens
	// (development); it is re-read when it changes.
	TokenFile string `json:"tokenFile"`
	// TokenAudiences are the audiences a TokenReview asks for; a token
	// is accepted only when minted for one of them (kubectl create token
	// --audience). Empty means the Kubernetes API server's own.
	TokenAudiences []string `json:"tokenAudiences"`
	// CacheTTL is how long a TokenReview or SubjectAccessReview answer is
	// reused.
	CacheTTL metav1.Duration `json:"cacheTTL"`
	// CacheMaxEntries bounds each cache of answers (accepted tokens,
	// refused tokens, authorization decisions); beyond it the least
	// recently used answer is dropped.
	CacheMaxEntries int `json:"cacheMaxEntries"`
	// ClientRateLimitQPS is the sustained number of requests per second
	// one client address (an IPv4 address, an IPv6 /64) may make, counted
	// before authentication; 0 disables the limit. Behind a proxy every
	// caller shares the proxy's address: raise it there.
	ClientRateLimitQPS float64 `json:"clientRateLimitQPS"`
	// ClientRateLimitBurst is how many requests one client address may
	// make at once.
	ClientRateLimitBurst int `json:"clientRateLimitBurst"`
	// RateLimitQPS is the sustained number of requests per second one
	// caller may make; 0 disables the limit.
	RateLimitQPS float64 `json:"rateLimitQPS"`
	// RateLimitBurst is how many requests one caller may make at once.
	RateLimitBurst int `json:"rateLimitBurst"`
}

// LogConfig configures the zap logger behind logr.
type LogConfig struct {
	// Level is debug, info, warn or error.
	Level string `json:"level"`
	// Format is json or console.
	Format string `json:"format"`
}

// ChartConfig says which chart a vmcluster installs and where it comes
// from: an https (or http) Helm repository, an oci:// repository, or a
// chart directory baked into the image (Repository empty).
type ChartConfig struct {
	// Name is the chart name.
	Name string `json:"name"`
	// Version is the default chart version of new vmclusters. Required for
	// repositories; for a local chart it defaults to the chart's version.
	Version string `json:"version"`
	// Repository is an https://, http:// or oci:// repository URL. When
	// empty, LocalDir is used.
	Repository string `json:"repository"`
	// LocalDir is a chart directory, or a directory of chart directories,
	// packaged at start-up and served to the source-controller on
	// LocalRepository.ListenAddress.
	LocalDir string `json:"localDir"`
	// Insecure allows plain http to an oci:// registry.
	Insecure bool `json:"insecure"`
	// SecretName is a Secret in Namespace with the repository credentials
	// (Flux HelmRepository spec.secretRef).
	SecretName string `json:"secretName"`
	// Endpoints are Go templates of the endpoints shown for a vmcluster,
	// by endpoint name. See EndpointData for the fields.
	Endpoints map[string]string `json:"endpoints"`
}

// CatalogConfig is the catalog of charts the components resource
// (/api/v1/observability-ops/components, docs/components.md) may install.
// Empty: no chart, every component request is refused.
type CatalogConfig struct {
	// LocalDir is a directory of chart directories (or one chart
	// directory) baked into the image, packaged at start-up and served by
	// the same local repository as chart.localDir. Empty: chart.localDir.
	LocalDir string `json:"localDir"`
	// Charts are the allowed charts.
	Charts []CatalogChart `json:"charts"`
}

// CatalogChart is one chart of the catalog.
type CatalogChart struct {
	// Name is the chart name (and the catalog entry's name in requests).
	Name string `json:"name"`
	// Repository is an https://, http:// or oci:// repository URL. Empty:
	// the chart is baked into the image (catalog.localDir).
	Repository string `json:"repository"`
	// Version is the default chart version of new components. Required
	// with Repository; for a baked chart it defaults to the highest
	// packaged version.
	Version string `json:"version"`
	// Versions are the allowed chart versions. Empty: for a baked chart
	// every packaged version, for a repository Version only.
	Versions []string `json:"versions"`
	// Namespaces are the namespaces a component of this chart may be
	// installed into (the request's namespace) besides the ops-server
	// namespace (Config.Namespace), which is the default.
	Namespaces []string `json:"namespaces"`
	// Insecure allows plain http to an oci:// registry.
	Insecure bool `json:"insecure"`
	// SecretName is a Secret in Namespace with the repository credentials.
	SecretName string `json:"secretName"`
}

// SourceType is SourceHTTPS, SourceOCI or SourceLocal.
func (c CatalogChart) SourceType() string {
	return ChartConfig{Repository: c.Repository}.SourceType()
}

// CatalogLocalDir is the directory the baked catalog charts are read
// from.
func (c *Config) CatalogLocalDir() string {
	if c.Catalog.LocalDir != "" {
		return c.Catalog.LocalDir
	}
	return c.Chart.LocalDir
}

// HasLocalCharts reports whether the local chart repository is needed:
// the vmcluster chart or a catalog chart is baked into the image.
func (c *Config) HasLocalCharts() bool {
	if c.Chart.SourceType() == SourceLocal {
		return true
	}
	for _, ch := range c.Catalog.Charts {
		if ch.SourceType() == SourceLocal {
			return true
		}
	}
	return false
}

func (c *Config) validateCatalog() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	seen := map[string]bool{}
	for i, ch := range c.Catalog.Charts {
		at := fmt.Sprintf("catalog.charts[%d]", i)
		if !chartNameRE.MatchString(ch.Name) || len(ch.Name) > 250 {
			add("%s.name %q: not a valid chart name", at, ch.Name)
		}
		if seen[ch.Name] {
			add("%s.name %q: listed twice", at, ch.Name)
		}
		seen[ch.Name] = true
		if ch.Name == c.Chart.Name {
			add("%s.name %q: the vmcluster chart (chart.name) is served by /vmclusters, not as a component", at, ch.Name)
		}
		for _, v := range append([]string{ch.Version}, ch.Versions...) {
			if v == "" {
				continue
			}
			if _, err := semver.StrictNewVersion(v); err != nil {
				add("%s: version %q is not a semantic version: %v", at, v, err)
			}
		}
		if ch.Version != "" && len(ch.Versions) > 0 && !slices.Contains(ch.Versions, ch.Version) {
			add("%s.version %q: not one of versions", at, ch.Version)
		}
		if ch.SourceType() == SourceLocal {
			if c.CatalogLocalDir() == "" {
				add("%s: a baked chart needs catalog.localDir (or chart.localDir)", at)
			}
		} else {
			if err := repositoryProblem(ch.Repository); err != "" {
				add("%s.repository: %s", at, err)
			}
			if ch.Version == "" {
				add("%s.version is required with a repository", at)
			}
		}
		if ch.Insecure && ch.SourceType() != SourceOCI {
			add("%s.insecure only applies to oci:// repositories", at)
		}
		if ch.SecretName != "" {
			for _, msg := range validation.IsDNS1123Subdomain(ch.SecretName) {
				add("%s.secretName %q: %s", at, ch.SecretName, msg)
			}
		}
		for _, ns := range ch.Namespaces {
			for _, msg := range validation.IsDNS1123Label(ns) {
				add("%s.namespaces: %q: %s", at, ns, msg)
			}
		}
	}
	return errs
}

// repositoryProblem returns what is wrong with a chart repository URL,
// empty if nothing.
func repositoryProblem(repository string) string {
	u, err := url.Parse(repository)
	switch {
	case err != nil:
		return fmt.Sprintf("not a URL: %v", err)
	case u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "oci":
		return fmt.Sprintf("%q: scheme must be https, http or oci", u.Redacted())
	case u.Host == "":
		return fmt.Sprintf("%q: host missing", u.Redacted())
	case u.User != nil:
		return "credentials do not belong in the URL; use secretName"
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Sprintf("%q: query and fragment are not allowed", u.Redacted())
	}
	return ""
}

// LocalRepositoryConfig configures the Helm repository the apiserver serves
// for local charts.
type LocalRepositoryConfig struct {
	// ListenAddress is where the repository listens (keep it on localhost:
	// only the source-controller sidecar reads it).
	ListenAddress string `json:"listenAddress"`
	// URL is the address the HelmRepository objects point at; empty means
	// http://<the address actually listened on>.
	URL string `json:"url"`
}

// FluxConfig holds the Flux settings written into every HelmRelease and
// HelmRepository. docs/apiserver.md explains the choices.
type FluxConfig struct {
	// ReleaseInterval is the HelmRelease reconcile interval.
	ReleaseInterval metav1.Duration `json:"releaseInterval"`
	// SourceInterval is the HelmRepository (and chart) check interval.
	SourceInterval metav1.Duration `json:"sourceInterval"`
	// Timeout bounds each Helm action, waiting for readiness included.
	Timeout metav1.Duration `json:"timeout"`
	// InstallRetries is the number of install retries, with an uninstall
	// of the failed attempt in between.
	InstallRetries int `json:"installRetries"`
	// UpgradeRetries is the number of upgrade retries, with a rollback to
	// the last good release in between; the last failure is rolled back too.
	UpgradeRetries int `json:"upgradeRetries"`
	// DisableWait makes Helm actions succeed without waiting for the
	// workloads to become ready.
	DisableWait bool `json:"disableWait"`
	// MaxHistory is the number of Helm release revisions kept.
	MaxHistory int `json:"maxHistory"`
	// Shard is the value of the sharding.fluxcd.io/key label on every Flux
	// object ops-server creates; ops-server's Flux controllers watch only
	// that shard (docs/install.md, "Installing next to an existing Flux").
	// Empty: no label.
	Shard string `json:"shard"`
}

// Default returns the default configuration.
func Default() *Config {
	return &Config{
		ListenAddress:       "127.0.0.1:8080",
		Namespace:           "observability",
		FieldManager:        "ops-server",
		KubeAPIQPS:          50,
		KubeAPIBurst:        100,
		MaxRequestBodyBytes: MaxRequestBodyLimit,
		RequestTimeout:      metav1.Duration{Duration: 30 * time.Second},
		ShutdownTimeout:     metav1.Duration{Duration: 20 * time.Second},
		Log:                 LogConfig{Level: "info", Format: "json"},
		Chart: ChartConfig{
			Name:      "vmcluster",
			LocalDir:  "deploy/charts/vmcluster",
			Endpoints: DefaultEndpoints(),
		},
		LocalRepository: LocalRepositoryConfig{ListenAddress: "127.0.0.1:8089"},
		Upgrades:        UpgradesConfig{Namespace: "observability", MockNamespace: "ops-mock-cloud"},
		Backups:         BackupsConfig{Namespace: "observability", RestoresEnabled: true},
		Auth: AuthConfig{
			CacheTTL:             metav1.Duration{Duration: 10 * time.Second},
			CacheMaxEntries:      10000,
			ClientRateLimitQPS:   50,
			ClientRateLimitBurst: 100,
			RateLimitQPS:         50,
			RateLimitBurst:       100,
		},
		Watch: WatchConfig{
			Heartbeat:    metav1.Duration{Duration: 15 * time.Second},
			MaxDuration:  metav1.Duration{Duration: 30 * time.Minute},
			MaxPerCaller: 10,
			MaxTotal:     500,
		},
		Troubleshoot: TroubleshootConfig{
			LogMaxBytes:          10 << 20,
			LogFollowMaxDuration: metav1.Duration{Duration: 10 * time.Minute},
			ExecMaxOutputBytes:   1 << 20,
			DiagnosticsLogLines:  500,
			DiagnosticsMaxBytes:  64 << 20,
		},
		Flux: FluxConfig{
			ReleaseInterval: metav1.Duration{Duration: 10 * time.Minute},
			SourceInterval:  metav1.Duration{Duration: 10 * time.Minute},
			Timeout:         metav1.Duration{Duration: 10 * time.Minute},
			InstallRetries:  3,
			UpgradeRetries:  3,
			MaxHistory:      5,
			Shard:           opsv1.DefaultFluxShard,
		},
	}
}

// UpgradesConfig configures the cluster-upgrade API.
type UpgradesConfig struct {
	// Namespace of the ClusterUpgradeOperation objects.
	Namespace string `json:"namespace"`
	// CloudConfig is the path of the cloud providers' configuration
	// (operator/pkg/cloud/providers: enabled clouds, endpoints, credential
	// directories, cluster identities); empty enables no real cloud.
	CloudConfig string `json:"cloudConfig"`
	// EnableMockCloud registers the simulated cloud (local stack, tests).
	EnableMockCloud bool `json:"enableMockCloud"`
	// MockNamespace holds the simulated cloud's state.
	MockNamespace string `json:"mockNamespace"`
}

// BackupsConfig configures the backup API (ClusterBackup objects).
type BackupsConfig struct {
	// Namespace of the ClusterBackup objects. A backup that uses a
	// credentials Secret must be in its VMCluster's namespace (the upload
	// Jobs run there and read the Secret from there).
	Namespace string `json:"namespace"`
	// Destination is the destination URL of a backup whose request names
	// none (s3://, gs://, azblob:// or fs://); empty: every request must.
	Destination string `json:"destination"`
	// CredentialsSecret is the Secret (in Namespace) with the object store
	// credentials of a backup whose request names none; not used with an
	// fs:// destination. Empty: the ambient identity (IRSA, workload
	// identity).
	CredentialsSecret string `json:"credentialsSecret"`
	// CredentialsSecretKey is the key of CredentialsSecret holding a
	// credentials file; empty: every key of the Secret is an environment
	// variable of vmbackup.
	CredentialsSecretKey string `json:"credentialsSecretKey"`
	// FSRoots are the absolute directories an fs:// destination must be
	// inside (the same list as ops-operator's --backup-fs-roots); empty:
	// fs:// destinations are refused.
	FSRoots []string `json:"fsRoots"`
	// RestoresEnabled accepts restores (POST .../restores and restore_from
	// on POST /vmclusters). In a real cluster ops-operator restores with
	// vmrestore Jobs and holds vmstorage with the vmcluster chart's ops-hold
	// init container (docs/backups.md); a vmcluster installed without it
	// fails a restore InvalidSpec before anything is touched. On by
	// default (the e2e suite restores on that path); false refuses
	// restores.
	RestoresEnabled bool `json:"restoresEnabled"`
}

// Backup destination URL schemes (vmbackup's -dst).
var backupSchemes = []string{"s3", "gs", "azblob", "fs"}

var (
	// bucketURLRE is the CRD's rule for object-store URLs: a bucket or
	// container name, then an optional path.
	bucketURLRE = regexp.MustCompile(`^[a-zA-Z0-9][-a-zA-Z0-9._]*(/.*)?$`)
	// secretKeyRE is the rule for a Secret key.
	secretKeyRE = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)
)

// MaxBackupDestinationLength bounds a backup destination URL (the CRD's
// limit).
const MaxBackupDestinationLength = 1024

// BackupDestinationProblem returns what is wrong with a backup destination
// URL, empty if nothing: the ClusterBackup CRD's rules for
// spec.destination.url, which the REST API checks first. The message never
// repeats the URL (it could hold a credential pasted by mistake).
func BackupDestinationProblem(u string) string {
	if u == "" {
		return "is required"
	}
	if len(u) > MaxBackupDestinationLength {
		return fmt.Sprintf("must be at most %d characters", MaxBackupDestinationLength)
	}
	if strings.ContainsAny(u, "?#") || strings.IndexFunc(u, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return "must not contain whitespace, control characters, a query string (?) or a fragment (#)"
	}
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok || !slices.Contains(backupSchemes, scheme) {
		return "scheme must be s3://, gs://, azblob:// or fs://"
	}
	if scheme == "fs" {
		if len(rest) < 2 || rest[0] != '/' {
			return "an fs:// URL must be an absolute path, e.g. fs:///backups"
		}
		return ""
	}
	if !bucketURLRE.MatchString(rest) {
		return fmt.Sprintf("must name a bucket or container, e.g. %s://<bucket>/<path>", scheme)
	}
	return ""
}

// IsFSBackupDestination reports whether u is a local file system
// destination, which takes no credentials.
func IsFSBackupDestination(u string) bool { return strings.HasPrefix(u, "fs://") }

// SecretKeyProblem returns what is wrong with the key of a Secret, empty if
// nothing.
func SecretKeyProblem(k string) string {
	if len(k) > validation.DNS1123SubdomainMaxLength || !secretKeyRE.MatchString(k) {
		return "must be 1 to 253 letters, digits, '-', '_' or '.'"
	}
	return ""
}

func (c BackupsConfig) validate() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, msg := range validation.IsDNS1123Label(c.Namespace) {
		add("backups.namespace %q: %s", c.Namespace, msg)
	}
	if _, err := opsv1.CleanFSRoots(c.FSRoots); err != nil {
		add("backups.fsRoots: %v", err)
	} else if c.Destination != "" {
		if msg := BackupDestinationProblem(c.Destination); msg != "" {
			add("backups.destination: %s", msg)
		} else if msg := opsv1.FSDestinationProblem(c.Destination, c.FSRoots); msg != "" {
			add("backups.destination: %s", msg)
		}
	}
	if c.CredentialsSecret != "" {
		for _, msg := range validation.IsDNS1123Subdomain(c.CredentialsSecret) {
			add("backups.credentialsSecret %q: %s", c.CredentialsSecret, msg)
		}
	}
	if c.CredentialsSecretKey != "" {
		if c.CredentialsSecret == "" {
			add("backups.credentialsSecretKey needs backups.credentialsSecret")
		} else if msg := SecretKeyProblem(c.CredentialsSecretKey); msg != "" {
			add("backups.credentialsSecretKey: %s", msg)
		}
	}
	return errs
}

// DefaultEndpoints are the endpoints of a VMCluster managed by the
// VictoriaMetrics operator, whose Services are named vmselect-<name> and
// vminsert-<name> (the chart names its VMCluster after the release).
func DefaultEndpoints() map[string]string {
	return map[string]string{
		"prometheus":   "http://vmselect-{{.Release}}.{{.Namespace}}.svc:8481/select/0/prometheus",
		"remote_write": "http://vminsert-{{.Release}}.{{.Namespace}}.svc:8480/insert/0/prometheus/api/v1/write",
	}
}

// BindFlags registers every setting on fs, writing into c.
func (c *Config) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.ConfigFile, "config", c.ConfigFile, "Optional YAML configuration file; flags given on the command line override it.")
	fs.StringVar(&c.ListenAddress, "listen-address", c.ListenAddress, "host:port of the REST API.")
	fs.StringVar(&c.Namespace, "namespace", c.Namespace, "Namespace of the vmclusters (Flux HelmReleases and their sources).")
	fs.StringVar(&c.FieldManager, "field-manager", c.FieldManager, "Field manager of every write to Kubernetes.")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", c.Kubeconfig, "Path of a kubeconfig; empty means $KUBECONFIG, then in-cluster.")
	fs.Float32Var(&c.KubeAPIQPS, "kube-api-qps", c.KubeAPIQPS, "Requests per second to the Kubernetes API.")
	fs.IntVar(&c.KubeAPIBurst, "kube-api-burst", c.KubeAPIBurst, "Burst of requests to the Kubernetes API.")
	fs.Int64Var(&c.MaxRequestBodyBytes, "max-request-body-bytes", c.MaxRequestBodyBytes, "Largest request body accepted; larger bodies are rejected with 400.")
	fs.DurationVar(&c.RequestTimeout.Duration, "request-timeout", c.RequestTimeout.Duration, "Upper bound of the work done for one request.")
	fs.DurationVar(&c.ShutdownTimeout.Duration, "shutdown-timeout", c.ShutdownTimeout.Duration, "Upper bound of the graceful shutdown.")
	fs.StringVar(&c.Log.Level, "log-level", c.Log.Level, "Log level: debug, info, warn or error.")
	fs.StringVar(&c.Log.Format, "log-format", c.Log.Format, "Log format: json or console.")

	fs.StringVar(&c.Chart.Name, "chart-name", c.Chart.Name, "Name of the chart a vmcluster installs.")
	fs.StringVar(&c.Chart.Version, "chart-version", c.Chart.Version, "Default chart version (required with --chart-repository; defaults to the local chart's version).")
	fs.StringVar(&c.Chart.Repository, "chart-repository", c.Chart.Repository, "https://, http:// or oci:// chart repository; empty uses --chart-dir.")
	fs.StringVar(&c.Chart.LocalDir, "chart-dir", c.Chart.LocalDir, "Chart directory (or directory of chart directories) baked into the image, used when --chart-repository is empty.")
	fs.BoolVar(&c.Chart.Insecure, "chart-insecure", c.Chart.Insecure, "Allow plain http to an oci:// registry.")
	fs.StringVar(&c.Chart.SecretName, "chart-secret-name", c.Chart.SecretName, "Secret (in --namespace) with the chart repository credentials.")
	fs.StringToStringVar(&c.Chart.Endpoints, "chart-endpoint", c.Chart.Endpoints, "Endpoint templates, name=template (Go template over .Name .Release .Namespace .Chart .Version); replaces the defaults.")

	fs.StringVar(&c.LocalRepository.ListenAddress, "local-repository-listen-address", c.LocalRepository.ListenAddress, "host:port of the Helm repository serving the local charts.")
	fs.StringVar(&c.LocalRepository.URL, "local-repository-url", c.LocalRepository.URL, "URL the source-controller uses for the local charts; empty means http://<listen address>.")

	fs.DurationVar(&c.Flux.ReleaseInterval.Duration, "flux-release-interval", c.Flux.ReleaseInterval.Duration, "HelmRelease reconcile interval.")
	fs.DurationVar(&c.Flux.SourceInterval.Duration, "flux-source-interval", c.Flux.SourceInterval.Duration, "HelmRepository and chart check interval.")
	fs.DurationVar(&c.Flux.Timeout.Duration, "flux-timeout", c.Flux.Timeout.Duration, "Timeout of each Helm action, waiting included.")
	fs.IntVar(&c.Flux.InstallRetries, "flux-install-retries", c.Flux.InstallRetries, "Install retries (a failed install is uninstalled before the next attempt); -1 is unlimited.")
	fs.IntVar(&c.Flux.UpgradeRetries, "flux-upgrade-retries", c.Flux.UpgradeRetries, "Upgrade retries (a failed upgrade is rolled back before the next attempt); -1 is unlimited.")
	fs.BoolVar(&c.Flux.DisableWait, "flux-disable-wait", c.Flux.DisableWait, "Do not wait for workloads to become ready after install and upgrade.")
	fs.IntVar(&c.Flux.MaxHistory, "flux-max-history", c.Flux.MaxHistory, "Helm release revisions kept.")
	fs.StringVar(&c.Flux.Shard, "flux-shard", c.Flux.Shard, "Value of the sharding.fluxcd.io/key label on every Flux object ops-server creates (its Flux controllers watch only this shard); empty: no label.")

	fs.StringVar(&c.Upgrades.Namespace, "upgrade-namespace", c.Upgrades.Namespace, "Namespace of the ClusterUpgradeOperation objects.")
	fs.StringVar(&c.Upgrades.CloudConfig, "cloud-config", c.Upgrades.CloudConfig, "Cloud providers' configuration file (see docs/providers); empty enables no real cloud.")
	fs.BoolVar(&c.Upgrades.EnableMockCloud, "enable-mock-cloud", c.Upgrades.EnableMockCloud, "Register the simulated cloud (cloudProvider mock), for the local stack and tests.")
	fs.StringVar(&c.Upgrades.MockNamespace, "mock-namespace", c.Upgrades.MockNamespace, "Namespace of the simulated cloud's state.")

	fs.StringVar(&c.Backups.Namespace, "backup-namespace", c.Backups.Namespace, "Namespace of the ClusterBackup objects.")
	fs.StringVar(&c.Backups.Destination, "backup-destination", c.Backups.Destination, "Destination URL (s3://, gs://, azblob:// or fs://) of a backup whose request names none; empty: every request must.")
	fs.StringVar(&c.Backups.CredentialsSecret, "backup-credentials-secret", c.Backups.CredentialsSecret, "Secret (in --backup-namespace) with the object store credentials of a backup whose request names none; empty: the ambient identity.")
	fs.BoolVar(&c.Backups.RestoresEnabled, "restores-enabled", c.Backups.RestoresEnabled, "Accept restores (POST .../restores, restore_from on POST /vmclusters); the vmclusters need the vmcluster chart's ops-hold init container (docs/backups.md). --restores-enabled=false refuses them.")
	fs.StringSliceVar(&c.Backups.FSRoots, "backup-fs-roots", c.Backups.FSRoots, "Comma-separated absolute directories an fs:// backup destination must be inside (give ops-operator the same list); empty: fs:// destinations are refused.")
	fs.StringVar(&c.Backups.CredentialsSecretKey, "backup-credentials-secret-key", c.Backups.CredentialsSecretKey, "Key of --backup-credentials-secret holding a credentials file; empty: every key is an environment variable.")

	fs.BoolVar(&c.Auth.InsecureDisableAuth, "insecure-disable-auth", c.Auth.InsecureDisableAuth, "Serve every route without authentication or authorization. Local experiments only.")
	fs.StringVar(&c.Auth.TokenFile, "auth-token-file", c.Auth.TokenFile, "File of hashed static bearer tokens (development; see docs/auth.md), re-read when it changes.")
	fs.Int64Var(&c.Troubleshoot.LogMaxBytes, "log-max-bytes", c.Troubleshoot.LogMaxBytes, "Most bytes one Pod logs request returns (the default and maximum of limitBytes).")
	fs.DurationVar(&c.Watch.Heartbeat.Duration, "watch-heartbeat", c.Watch.Heartbeat.Duration, "Interval of the heartbeat comments of a watch stream (?watch=true).")
	fs.DurationVar(&c.Watch.MaxDuration.Duration, "watch-max-duration", c.Watch.MaxDuration.Duration, "A watch stream ends after this long; clients reconnect with Last-Event-ID.")
	fs.IntVar(&c.Watch.MaxPerCaller, "watch-max-per-caller", c.Watch.MaxPerCaller, "Concurrent watch streams of one caller (429 beyond).")
	fs.IntVar(&c.Watch.MaxTotal, "watch-max-total", c.Watch.MaxTotal, "Concurrent watch streams of the server (429 beyond).")
	fs.DurationVar(&c.Troubleshoot.LogFollowMaxDuration.Duration, "log-follow-max-duration", c.Troubleshoot.LogFollowMaxDuration.Duration, "A followed Pod log stream ends after this long.")
	fs.StringSliceVar(&c.Troubleshoot.ExecAllowedCommands, "exec-allowed-commands", c.Troubleshoot.ExecAllowedCommands, "Comma-separated executables a Pod exec may run (exact match of the command's first item: \"ls\" allows ls found in the container's PATH, /bin/ls only that path); empty: any.")
	fs.Int64Var(&c.Troubleshoot.ExecMaxOutputBytes, "exec-max-output-bytes", c.Troubleshoot.ExecMaxOutputBytes, "Bound of each of a Pod exec's stdout and stderr; the rest is dropped and flagged truncated.")
	fs.Int64Var(&c.Troubleshoot.DiagnosticsLogLines, "diagnostics-log-lines", c.Troubleshoot.DiagnosticsLogLines, "Last lines of each container's log in a vmcluster's diagnostics bundle.")
	fs.Int64Var(&c.Troubleshoot.DiagnosticsMaxBytes, "diagnostics-max-bytes", c.Troubleshoot.DiagnosticsMaxBytes, "Bound of a diagnostics bundle's uncompressed content; parts past it are cut (manifest.json lists them as truncated).")
	fs.StringSliceVar(&c.Auth.TokenAudiences, "auth-token-audiences", c.Auth.TokenAudiences, "Audiences a bearer token must be minted for (TokenReview); empty: the Kubernetes API server's.")
	fs.DurationVar(&c.Auth.CacheTTL.Duration, "auth-cache-ttl", c.Auth.CacheTTL.Duration, "How long a TokenReview or SubjectAccessReview answer is reused.")
	fs.IntVar(&c.Auth.CacheMaxEntries, "auth-cache-max-entries", c.Auth.CacheMaxEntries, "Answers each authentication and authorization cache keeps (least recently used dropped first).")
	fs.Float64Var(&c.Auth.ClientRateLimitQPS, "client-rate-limit-qps", c.Auth.ClientRateLimitQPS, "Sustained requests per second per client address, counted before authentication; 0 disables the limit.")
	fs.IntVar(&c.Auth.ClientRateLimitBurst, "client-rate-limit-burst", c.Auth.ClientRateLimitBurst, "Requests one client address may make at once.")
	fs.Float64Var(&c.Auth.RateLimitQPS, "rate-limit-qps", c.Auth.RateLimitQPS, "Sustained requests per second per caller; 0 disables the limit.")
	fs.IntVar(&c.Auth.RateLimitBurst, "rate-limit-burst", c.Auth.RateLimitBurst, "Requests one caller may make at once.")

	fs.StringVar(&c.TLS.CertFile, "tls-cert-file", c.TLS.CertFile, "PEM certificate of the REST API; with --tls-private-key-file it serves HTTPS only (re-read when it changes).")
	fs.StringVar(&c.TLS.PrivateKeyFile, "tls-private-key-file", c.TLS.PrivateKeyFile, "PEM private key of --tls-cert-file.")
}

// NewFlagSet returns a FlagSet bound to c.
func NewFlagSet(name string, c *Config) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SortFlags = false
	c.BindFlags(fs)
	return fs
}

// Load builds the configuration from defaults, the optional --config file
// and the command line args, and validates it. pflag.ErrHelp is returned
// as is for --help.
func Load(name string, args []string) (*Config, error) {
	cfg := Default()
	fs := NewFlagSet(name, cfg)
	fs.SetOutput(&bytes.Buffer{})
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if cfg.ConfigFile != "" {
		fileCfg, err := FromFile(cfg.ConfigFile)
		if err != nil {
			return nil, err
		}
		// Parse again on top of the file, so that the flags given on the
		// command line win.
		fs = NewFlagSet(name, fileCfg)
		fs.SetOutput(&bytes.Buffer{})
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		cfg = fileCfg
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// maxConfigFileBytes bounds the configuration file read.
const maxConfigFileBytes = 1 << 20

// FromFile reads a YAML file over the defaults. Unknown keys are errors.
func FromFile(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading configuration file: %w", err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, maxConfigFileBytes+1)); err != nil {
		return nil, fmt.Errorf("reading configuration file %s: %w", path, err)
	}
	if buf.Len() > maxConfigFileBytes {
		return nil, fmt.Errorf("configuration file %s is larger than %d bytes", path, maxConfigFileBytes)
	}
	return Parse(buf.Bytes())
}

// Parse reads YAML configuration over the defaults. Unknown keys are errors.
func Parse(data []byte) (*Config, error) {
	cfg := Default()
	// A map in the file replaces the default map instead of merging with it.
	cfg.Chart.Endpoints = nil
	if err := yaml.UnmarshalStrict(data, cfg); err != nil {
		return nil, fmt.Errorf("parsing configuration: %w", err)
	}
	if cfg.Chart.Endpoints == nil {
		cfg.Chart.Endpoints = DefaultEndpoints()
	}
	return cfg, nil
}

// SourceType is SourceHTTPS, SourceOCI or SourceLocal.
func (c ChartConfig) SourceType() string {
	switch {
	case c.Repository == "":
		return SourceLocal
	case strings.HasPrefix(c.Repository, "oci://"):
		return SourceOCI
	default:
		return SourceHTTPS
	}
}

var (
	// chartNameRE is Helm's rule for chart names.
	chartNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$`)
	// endpointNameRE keeps endpoint names JSON- and shell-friendly.
	endpointNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)
)

// Validate reports every problem of the configuration at once.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if _, _, err := net.SplitHostPort(c.ListenAddress); err != nil {
		add("listenAddress %q: %v", c.ListenAddress, err)
	}
	for _, msg := range validation.IsDNS1123Label(c.Namespace) {
		add("namespace %q: %s", c.Namespace, msg)
	}
	if c.FieldManager == "" || len(c.FieldManager) > 128 {
		add("fieldManager must be 1 to 128 characters")
	}
	if c.KubeAPIQPS <= 0 || c.KubeAPIBurst <= 0 {
		add("kubeAPIQPS and kubeAPIBurst must be positive")
	}
	if c.MaxRequestBodyBytes < 1024 || c.MaxRequestBodyBytes > MaxRequestBodyLimit {
		add("maxRequestBodyBytes must be between 1024 and %d", MaxRequestBodyLimit)
	}
	if c.RequestTimeout.Duration <= 0 || c.ShutdownTimeout.Duration <= 0 {
		add("requestTimeout and shutdownTimeout must be positive")
	}
	if t := c.Troubleshoot; t.LogMaxBytes < 1024 || t.ExecMaxOutputBytes < 1024 || t.LogFollowMaxDuration.Duration <= 0 {
		add("troubleshoot: logMaxBytes and execMaxOutputBytes must be at least 1024, logFollowMaxDuration positive")
	}
	if w := c.Watch; w.Heartbeat.Duration < time.Second || w.MaxDuration.Duration < time.Minute || w.Heartbeat.Duration >= w.MaxDuration.Duration || w.MaxPerCaller < 1 || w.MaxTotal < w.MaxPerCaller {
		add("watch: heartbeat at least 1s and below maxDuration, maxDuration at least 1m, maxPerCaller at least 1 and at most maxTotal")
	}
	if t := c.Troubleshoot; t.DiagnosticsLogLines < 1 || t.DiagnosticsMaxBytes < 1<<20 {
		add("troubleshoot: diagnosticsLogLines must be positive, diagnosticsMaxBytes at least 1048576")
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		add("log.level %q: must be debug, info, warn or error", c.Log.Level)
	}
	switch c.Log.Format {
	case "json", "console":
	default:
		add("log.format %q: must be json or console", c.Log.Format)
	}
	errs = append(errs, c.Chart.validate()...)
	errs = append(errs, c.validateCatalog()...)
	if c.HasLocalCharts() {
		if _, _, err := net.SplitHostPort(c.LocalRepository.ListenAddress); err != nil {
			add("localRepository.listenAddress %q: %v", c.LocalRepository.ListenAddress, err)
		}
		if c.LocalRepository.URL != "" {
			if u, err := url.Parse(c.LocalRepository.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				add("localRepository.url %q: must be an http(s) URL", c.LocalRepository.URL)
			}
		}
	}
	f := c.Flux
	if f.ReleaseInterval.Duration < time.Second || f.SourceInterval.Duration < time.Second || f.Timeout.Duration < time.Second {
		add("flux.releaseInterval, flux.sourceInterval and flux.timeout must be at least 1s")
	}
	if f.InstallRetries < -1 || f.UpgradeRetries < -1 {
		add("flux.installRetries and flux.upgradeRetries must be -1 (unlimited) or more")
	}
	if f.MaxHistory < 0 {
		add("flux.maxHistory must not be negative")
	}
	if msgs := validation.IsValidLabelValue(f.Shard); len(msgs) > 0 {
		add("flux.shard %q: %s", f.Shard, strings.Join(msgs, "; "))
	}
	errs = append(errs, c.Backups.validate()...)
	if c.Auth.CacheTTL.Duration < 0 || c.Auth.CacheTTL.Duration > 10*time.Minute {
		add("auth.cacheTTL must be between 0 and 10m")
	}
	if c.Auth.RateLimitQPS < 0 {
		add("auth.rateLimitQPS must not be negative")
	}
	if c.Auth.RateLimitQPS > 0 && c.Auth.RateLimitBurst < 1 {
		add("auth.rateLimitBurst must be at least 1 when auth.rateLimitQPS is set")
	}
	if c.Auth.ClientRateLimitQPS < 0 {
		add("auth.clientRateLimitQPS must not be negative")
	}
	if c.Auth.ClientRateLimitQPS > 0 && c.Auth.ClientRateLimitBurst < 1 {
		add("auth.clientRateLimitBurst must be at least 1 when auth.clientRateLimitQPS is set")
	}
	if c.Auth.CacheMaxEntries < 1 || c.Auth.CacheMaxEntries > 1000000 {
		add("auth.cacheMaxEntries must be between 1 and 1000000")
	}
	for _, a := range c.Auth.TokenAudiences {
		if strings.TrimSpace(a) == "" {
			add("auth.tokenAudiences must not contain an empty audience")
		}
	}
	if c.Auth.InsecureDisableAuth && !IsLoopbackAddress(c.ListenAddress) {
		add("auth.insecureDisableAuth (--insecure-disable-auth) needs a loopback listenAddress (127.0.0.0/8, [::1] or localhost), not %q: "+
			"it would serve every route to anyone who can reach the address", c.ListenAddress)
	}
	if c.TLS.Enabled() && (c.TLS.CertFile == "" || c.TLS.PrivateKeyFile == "") {
		add("tls.certFile (--tls-cert-file) and tls.privateKeyFile (--tls-private-key-file) go together")
	}
	return errors.Join(errs...)
}

// IsLoopbackAddress reports whether the host of a host:port is a loopback
// address: an IP in 127.0.0.0/8, ::1, or localhost. An empty host (every
// interface) is not.
func IsLoopbackAddress(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (c ChartConfig) validate() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !chartNameRE.MatchString(c.Name) || len(c.Name) > 250 {
		add("chart.name %q: not a valid chart name", c.Name)
	}
	if c.Version != "" {
		if _, err := semver.StrictNewVersion(c.Version); err != nil {
			add("chart.version %q: not a semantic version: %v", c.Version, err)
		}
	}
	switch c.SourceType() {
	case SourceLocal:
		if c.LocalDir == "" {
			add("one of chart.repository and chart.localDir is required")
		}
	default:
		u, err := url.Parse(c.Repository)
		switch {
		case err != nil:
			add("chart.repository: not a URL: %v", err)
		case u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "oci":
			add("chart.repository %q: scheme must be https, http or oci", u.Redacted())
		case u.Host == "":
			add("chart.repository %q: host missing", u.Redacted())
		case u.User != nil:
			add("chart.repository: credentials do not belong in the URL; use chart.secretName")
		case u.RawQuery != "" || u.Fragment != "":
			add("chart.repository %q: query and fragment are not allowed", u.Redacted())
		}
		if c.Version == "" {
			add("chart.version is required with chart.repository")
		}
	}
	if c.Insecure && c.SourceType() != SourceOCI {
		add("chart.insecure only applies to oci:// repositories")
	}
	if c.SecretName != "" {
		for _, msg := range validation.IsDNS1123Subdomain(c.SecretName) {
			add("chart.secretName %q: %s", c.SecretName, msg)
		}
	}
	if _, err := c.EndpointTemplates(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// EndpointData are the fields an endpoint template can use.
type EndpointData struct {
	// Name is the vmcluster name.
	Name string
	// Release is the Helm release name.
	Release string
	// Namespace is the release namespace.
	Namespace string
	// Chart and Version are the chart name and the requested version.
	Chart   string
	Version string
}

// EndpointTemplates parses the endpoint templates, checks that each
// renders with sample data, and returns them by name.
func (c ChartConfig) EndpointTemplates() (map[string]*template.Template, error) {
	out := make(map[string]*template.Template, len(c.Endpoints))
	names := make([]string, 0, len(c.Endpoints))
	for name := range c.Endpoints {
		names = append(names, name)
	}
	sort.Strings(names)
	sample := EndpointData{Name: "sample", Release: "sample", Namespace: "observability", Chart: c.Name, Version: "0.1.0"}
	var errs []error
	for _, name := range names {
		if !endpointNameRE.MatchString(name) {
			errs = append(errs, fmt.Errorf("chart.endpoints: name %q must match %s", name, endpointNameRE))
			continue
		}
		t, err := template.New(name).Option("missingkey=error").Parse(c.Endpoints[name])
		if err != nil {
			errs = append(errs, fmt.Errorf("chart.endpoints[%s]: %w", name, err))
			continue
		}
		if err := t.Execute(&bytes.Buffer{}, sample); err != nil {
			errs = append(errs, fmt.Errorf("chart.endpoints[%s]: %w", name, err))
			continue
		}
		out[name] = t
	}
	return out, errors.Join(errs...)
}
