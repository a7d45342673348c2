// Package config holds the ops-apiserver configuration: defaults, command
// line flags (a pflag FlagSet of our own, never the global one) and an
// optional YAML file. Flags given on the command line override the file;
// the file overrides the defaults. docs/apiserver.md documents every key.
//
// The files follow the concerns: config.go the types and their defaults,
// endpoints.go the endpoint templates of a vmcluster, flags.go the command
// line, load.go reading flags and file, validate.go the checks run before
// ops-apiserver starts. The rules of a backup destination are the
// ClusterBackup CRD's and live next to its types, in operator/api/v1alpha1
// (BackupDestinationProblem).
package config

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	// PprofAddress is the host:port of Go's /debug/pprof/ endpoints
	// (profiling); empty (the default) serves none. Only a loopback
	// address is accepted: reach it with kubectl port-forward.
	PprofAddress string `json:"pprofAddress"`
	// Namespace is where vmclusters (HelmReleases and their sources) live.
	Namespace string `json:"namespace"`
	// FieldManager is the field manager of every write to Kubernetes.
	FieldManager string `json:"fieldManager"`
	// Kubeconfig is a kubeconfig path; empty means $KUBECONFIG, then the
	// in-cluster configuration.
	Kubeconfig string `json:"kubeconfig"`
	// KubeAPIQPS and KubeAPIBurst limit the requests to the Kubernetes API
	// on the client side; KubeAPIQPS -1 (the default) sets no limit, and
	// throttling is the API server's priority and fairness (see
	// docs/apiserver.md, "Client-side rate limits").
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
		KubeAPIQPS:          NoClientRateLimit,
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

// NoClientRateLimit as KubeAPIQPS sets no client-side rate limit: a
// negative QPS leaves client-go without a rate limiter, and the API
// server's priority and fairness throttles (429 with Retry-After, which
// client-go honours).
const NoClientRateLimit = -1
