package config

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"text/template"
)

// endpointNameRE keeps endpoint names JSON- and shell-friendly.
var endpointNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// DefaultEndpoints are the endpoints of a VMCluster managed by the
// VictoriaMetrics operator, whose Services are named vmselect-<name> and
// vminsert-<name> (the chart names its VMCluster after the release).
func DefaultEndpoints() map[string]string {
	return map[string]string{
		"prometheus":   "http://vmselect-{{.Release}}.{{.Namespace}}.svc:8481/select/0/prometheus",
		"remote_write": "http://vminsert-{{.Release}}.{{.Namespace}}.svc:8480/insert/0/prometheus/api/v1/write",
	}
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
