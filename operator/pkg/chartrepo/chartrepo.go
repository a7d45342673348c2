// Package chartrepo packages Helm chart directories and serves them as a
// Helm chart repository (index.yaml plus .tgz archives), the form Flux's
// HelmRepository reads.
//
// ops-apiserver uses it for charts baked into its image: it packages every
// chart directory it finds at start-up and serves them on localhost to the
// source-controller sidecar. Tests use it to serve charts they build.
package chartrepo

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/provenance"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/yaml"
)

// Chart is one packaged chart version.
type Chart struct {
	Name    string
	Version string
	// File is the archive name inside the repository, <name>-<version>.tgz.
	File   string
	Digest string
	// Values are the chart's default values (values.yaml), shared: never
	// modified.
	Values map[string]any
	data   []byte
	meta   *chart.Metadata
	loaded *chart.Chart
}

// Loaded is the chart as Helm loaded it (templates, default values,
// values.schema.json). Callers read it and never modify it.
func (c *Chart) Loaded() *chart.Chart { return c.loaded }

// Repository is an in-memory Helm chart repository. It is safe for
// concurrent use; charts can be added while it serves.
type Repository struct {
	mu     sync.RWMutex
	charts map[string]*Chart // by File
	index  []byte
}

// New returns an empty repository.
func New() *Repository {
	r := &Repository{charts: map[string]*Chart{}}
	r.rebuildIndex()
	return r
}

// AddDir packages the chart directory dir (with Chart.yaml) and adds it.
func (r *Repository) AddDir(dir string) (*Chart, error) {
	c, err := loader.LoadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", dir, err)
	}
	return r.AddChart(c)
}

// AddChart packages a loaded chart and adds it.
func (r *Repository) AddChart(c *chart.Chart) (*Chart, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("invalid chart: %w", err)
	}
	tmp, err := os.MkdirTemp("", "chartrepo-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	archive, err := chartutil.Save(c, tmp)
	if err != nil {
		return nil, fmt.Errorf("packaging chart %s: %w", c.Name(), err)
	}
	data, err := os.ReadFile(archive)
	if err != nil {
		return nil, err
	}
	digest, err := provenance.Digest(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	pc := &Chart{
		Name:    c.Metadata.Name,
		Version: c.Metadata.Version,
		File:    filepath.Base(archive),
		Digest:  digest,
		Values:  c.Values,
		data:    data,
		meta:    c.Metadata,
		loaded:  c,
	}
	r.mu.Lock()
	r.charts[pc.File] = pc
	r.mu.Unlock()
	r.rebuildIndex()
	return pc, nil
}

// AddDirs adds every chart directory directly below root (a directory with
// a Chart.yaml), and root itself if it is a chart.
func (r *Repository) AddDirs(root string) ([]*Chart, error) {
	var dirs []string
	if _, err := os.Stat(filepath.Join(root, "Chart.yaml")); err == nil {
		dirs = append(dirs, root)
	} else {
		entries, err := os.ReadDir(root)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			if _, err := os.Stat(filepath.Join(root, e.Name(), "Chart.yaml")); err == nil {
				dirs = append(dirs, filepath.Join(root, e.Name()))
			}
		}
	}
	var out []*Chart
	for _, d := range dirs {
		c, err := r.AddDir(d)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Charts lists the packaged charts, sorted by name then version.
func (r *Repository) Charts() []*Chart {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Chart, 0, len(r.charts))
	for _, c := range r.charts {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Version < out[j].Version
	})
	return out
}

func (r *Repository) rebuildIndex() {
	idx := repo.NewIndexFile()
	for _, c := range r.Charts() {
		// Relative URLs: clients resolve them against the repository URL,
		// so the index does not depend on the address it is served on.
		if err := idx.MustAdd(c.meta, c.File, "", c.Digest); err != nil {
			continue
		}
	}
	idx.SortEntries()
	b, err := yaml.Marshal(idx)
	if err != nil {
		b = nil
	}
	r.mu.Lock()
	r.index = b
	r.mu.Unlock()
}

// ServeHTTP serves /index.yaml and /<chart>-<version>.tgz.
func (r *Repository) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := path.Base(path.Clean("/" + req.URL.Path))
	r.mu.RLock()
	defer r.mu.RUnlock()
	switch {
	case name == "index.yaml":
		w.Header().Set("Content-Type", "application/x-yaml")
		_, _ = w.Write(r.index)
	case strings.HasSuffix(name, ".tgz") && r.charts[name] != nil:
		w.Header().Set("Content-Type", "application/gzip")
		_, _ = w.Write(r.charts[name].data)
	default:
		http.NotFound(w, req)
	}
}
