package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"k8s.io/apimachinery/pkg/util/validation"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/loopback"
)

// chartNameRE is Helm's rule for chart names.
var chartNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$`)

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
	if c.KubeAPIQPS != NoClientRateLimit && c.KubeAPIQPS <= 0 {
		add("kubeAPIQPS must be -1 (no client-side limit) or positive")
	}
	if c.KubeAPIBurst <= 0 {
		add("kubeAPIBurst must be positive")
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
	if c.Auth.InsecureDisableAuth && !loopback.IsAddress(c.ListenAddress) {
		add("auth.insecureDisableAuth (--insecure-disable-auth) needs a loopback listenAddress (127.0.0.0/8, [::1] or localhost), not %q: "+
			"it would serve every route to anyone who can reach the address", c.ListenAddress)
	}
	if c.PprofAddress != "" && !loopback.IsAddress(c.PprofAddress) {
		add("pprofAddress (--pprof-bind-address) must be a loopback host:port (127.0.0.0/8, [::1] or localhost), not %q: "+
			"profiles are served without authentication", c.PprofAddress)
	}
	if c.TLS.Enabled() && (c.TLS.CertFile == "" || c.TLS.PrivateKeyFile == "") {
		add("tls.certFile (--tls-cert-file) and tls.privateKeyFile (--tls-private-key-file) go together")
	}
	return errors.Join(errs...)
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

func (c BackupsConfig) validate() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, msg := range validation.IsDNS1123Label(c.Namespace) {
		add("backups.namespace %q: %s", c.Namespace, msg)
	}
	if _, err := opsv1.CleanFSRoots(c.FSRoots); err != nil {
		add("backups.fsRoots: %v", err)
	} else if c.Destination != "" {
		if msg := opsv1.BackupDestinationProblem(c.Destination); msg != "" {
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
		} else if msg := opsv1.SecretKeyProblem(c.CredentialsSecretKey); msg != "" {
			add("backups.credentialsSecretKey: %s", msg)
		}
	}
	return errs
}
