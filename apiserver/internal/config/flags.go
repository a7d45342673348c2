package config

import "github.com/spf13/pflag"

// BindFlags registers every setting on fs, writing into c.
func (c *Config) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.ConfigFile, "config", c.ConfigFile, "Optional YAML configuration file; flags given on the command line override it.")
	fs.StringVar(&c.ListenAddress, "listen-address", c.ListenAddress, "host:port of the REST API.")
	fs.StringVar(&c.PprofAddress, "pprof-bind-address", c.PprofAddress, "Loopback host:port of Go's /debug/pprof/ profiling endpoints (e.g. 127.0.0.1:6060, reached with kubectl port-forward); empty: none.")
	fs.StringVar(&c.Namespace, "namespace", c.Namespace, "Namespace of the vmclusters (Flux HelmReleases and their sources).")
	fs.StringVar(&c.FieldManager, "field-manager", c.FieldManager, "Field manager of every write to Kubernetes.")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", c.Kubeconfig, "Path of a kubeconfig; empty means $KUBECONFIG, then in-cluster.")
	fs.Float32Var(&c.KubeAPIQPS, "kube-api-qps", c.KubeAPIQPS, "Client-side limit of requests per second to the Kubernetes API; -1: none, the API server's priority and fairness throttles.")
	fs.IntVar(&c.KubeAPIBurst, "kube-api-burst", c.KubeAPIBurst, "Burst of requests to the Kubernetes API (with a client-side limit).")
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
