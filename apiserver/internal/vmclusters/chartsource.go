package vmclusters

import (
	"fmt"
	"slices"

	"github.com/Masterminds/semver/v3"

	"github.com/tidbcloud/ops-server/apiserver/internal/chartvalues"
	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/operator/pkg/chartrepo"
)

// NewChartSource works out where the vmcluster chart comes from (the chart
// section of the configuration): a remote repository as configured, a
// chart baked into the image among the packaged local charts, served at
// localURL.
func NewChartSource(c config.ChartConfig, local []*chartrepo.Chart, localURL string) (ChartSource, error) {
	src := ChartSource{Name: c.Name, DefaultVersion: c.Version, URL: c.Repository, SecretName: c.SecretName}
	switch c.SourceType() {
	case config.SourceOCI:
		src.OCI, src.Insecure = true, c.Insecure
		return src, nil
	case config.SourceHTTPS:
		return src, nil
	}
	return localChartSource(src, nil, local, c.LocalDir, localURL)
}

// NewCatalogChartSource works out where a catalog chart comes from: a
// remote repository, whose allowed versions are the configured ones (it
// cannot be asked), or a chart baked into the image among the packaged
// local charts of localDir (only its allowed versions), served at
// localURL.
func NewCatalogChartSource(c config.CatalogChart, local []*chartrepo.Chart, localDir, localURL string) (ChartSource, error) {
	src := ChartSource{Name: c.Name, DefaultVersion: c.Version, URL: c.Repository, SecretName: c.SecretName}
	switch c.SourceType() {
	case config.SourceOCI:
		src.OCI, src.Insecure = true, c.Insecure
		fallthrough
	case config.SourceHTTPS:
		src.Versions = c.Versions
		if len(src.Versions) == 0 {
			src.Versions = []string{c.Version}
		}
		return src, nil
	}
	return localChartSource(src, c.Versions, local, localDir, localURL)
}

// localChartSource fills src (Name and DefaultVersion set) from the
// packaged charts: the default version (the highest when unset), the
// known versions (only those of allowed, when not empty), their defaults
// and values validators.
func localChartSource(src ChartSource, allowed []string, charts []*chartrepo.Chart, dir, url string) (ChartSource, error) {
	var best *semver.Version
	for _, ch := range charts {
		if ch.Name != src.Name || (len(allowed) > 0 && !slices.Contains(allowed, ch.Version)) {
			continue
		}
		v, err := semver.NewVersion(ch.Version)
		if err != nil {
			continue
		}
		if src.DefaultVersion != "" && ch.Version == src.DefaultVersion {
			best = v
			break
		}
		if src.DefaultVersion == "" && (best == nil || v.GreaterThan(best)) {
			best = v
		}
	}
	if best == nil {
		if src.DefaultVersion != "" {
			return src, fmt.Errorf("no chart %q version %s in %s", src.Name, src.DefaultVersion, dir)
		}
		return src, fmt.Errorf("no chart %q in %s", src.Name, dir)
	}
	src.DefaultVersion = best.Original()
	src.Validators = map[string]ValuesValidator{}
	src.Defaults = map[string]map[string]any{}
	for _, ch := range charts {
		if ch.Name != src.Name || (len(allowed) > 0 && !slices.Contains(allowed, ch.Version)) {
			continue
		}
		src.Versions = append(src.Versions, ch.Version)
		src.Defaults[ch.Version] = ch.Values
		v, err := chartvalues.New(ch.Loaded())
		if err != nil {
			return src, fmt.Errorf("the values schema of chart %s %s: %w", ch.Name, ch.Version, err)
		}
		src.Validators[ch.Version] = v
	}
	src.URL = url
	return src, nil
}
