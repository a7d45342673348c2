// Package maintenancewindows holds ops-operator's default maintenance
// windows of upgrades per provider, region and cluster
// (--maintenance-windows; the chart's operator.maintenanceWindows).
package maintenancewindows

import (
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// Defaults are the operator's default maintenance windows
// (--maintenance-windows, a YAML file, usually mounted from a ConfigMap):
// an operation without spec.maintenanceWindow gets the window of the most
// specific rule matching its cluster, so that automation creating
// operations does not repeat the window in every one.
//
//	windows:
//	- cloudProvider: eks                 # any selector may be omitted
//	  region: us-west-2
//	  window: {days: [Saturday, Sunday], start: "02:00", duration: 4h, timeZone: America/Los_Angeles}
//	- cloudProvider: eks
//	  region: us-west-2
//	  k8sClusterName: prod-1             # more specific: wins for prod-1
//	  window: {days: [Tuesday], start: "22:00", duration: 2h, timeZone: UTC}
//
// A rule naming the cluster beats one naming the region, which beats one
// naming only the provider; among equally specific rules the first wins.
type Defaults struct {
	Windows []Rule `json:"windows"`
}

// Rule is one default window and the clusters it applies to.
type Rule struct {
	CloudProvider  string                  `json:"cloudProvider,omitempty"`
	Region         string                  `json:"region,omitempty"`
	K8sClusterName string                  `json:"k8sClusterName,omitempty"`
	Window         opsv1.MaintenanceWindow `json:"window"`
}

// Load reads and validates the file; an invalid rule is an
// error naming it (the operator does not start with it).
func Load(path string) (*Defaults, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading maintenance windows: %w", err)
	}
	return Parse(raw)
}

// Parse parses and validates the YAML of --maintenance-windows.
func Parse(raw []byte) (*Defaults, error) {
	d := &Defaults{}
	if err := yaml.UnmarshalStrict(raw, d); err != nil {
		return nil, fmt.Errorf("parsing maintenance windows: %w", err)
	}
	for i := range d.Windows {
		rule := &d.Windows[i]
		if rule.CloudProvider != "" {
			switch opsv1.CloudProvider(rule.CloudProvider) {
			case opsv1.CloudProviderEKS, opsv1.CloudProviderGKE, opsv1.CloudProviderAKS, opsv1.CloudProviderACK, opsv1.CloudProviderMock:
			default:
				return nil, fmt.Errorf("maintenance windows: windows[%d].cloudProvider %q is not one of eks, gke, aks, ack, mock", i, rule.CloudProvider)
			}
		}
		if v := rule.Window.Validate(); len(v) > 0 {
			msgs := make([]string, 0, len(v))
			for _, x := range v {
				msgs = append(msgs, x.Message)
			}
			return nil, fmt.Errorf("maintenance windows: windows[%d]: %s", i, strings.Join(msgs, "; "))
		}
	}
	return d, nil
}

// For returns the window of the most specific rule matching the cluster
// with its source, or nil (also for a nil Defaults).
func (d *Defaults) For(provider, region, cluster string) *opsv1.EffectiveMaintenanceWindow {
	if d == nil {
		return nil
	}
	best, bestScore := -1, -1
	for i, rule := range d.Windows {
		if rule.CloudProvider != "" && rule.CloudProvider != provider ||
			rule.Region != "" && rule.Region != region ||
			rule.K8sClusterName != "" && rule.K8sClusterName != cluster {
			continue
		}
		score := 0
		if rule.K8sClusterName != "" {
			score += 4
		}
		if rule.Region != "" {
			score += 2
		}
		if rule.CloudProvider != "" {
			score++
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	if best < 0 {
		return nil
	}
	rule := d.Windows[best]
	var sel []string
	for _, kv := range [][2]string{{"cloudProvider", rule.CloudProvider}, {"region", rule.Region}, {"k8sClusterName", rule.K8sClusterName}} {
		if kv[1] != "" {
			sel = append(sel, kv[0]+"="+kv[1])
		}
	}
	source := fmt.Sprintf("default: windows[%d]", best)
	if len(sel) > 0 {
		source += " (" + strings.Join(sel, ", ") + ")"
	}
	w := rule.Window
	w.Days = append([]opsv1.Weekday(nil), w.Days...)
	return &opsv1.EffectiveMaintenanceWindow{MaintenanceWindow: w, Source: source}
}
