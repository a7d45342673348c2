package bootstrap

import (
	"fmt"
	"slices"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// Labels of every object a stack creates: the stack's name and, on a
// HelmRelease, the component's. The reconciler finds the HelmReleases of
// removed components by LabelStack.
const (
	LabelStack     = "ops.observability.tidbcloud.com/stack"
	LabelComponent = "ops.observability.tidbcloud.com/stack-component"
)

// Config is where the charts come from and the Flux settings of every
// HelmRelease (the same choices as the vmclusters of ops-apiserver,
// docs/apiserver.md).
type Config struct {
	// RepositoryURL is the Helm repository serving the charts (for the
	// charts baked into ops-apiserver's image, the repository it serves to
	// its source-controller sidecar).
	RepositoryURL string
	// ReleaseInterval, SourceInterval and Timeout: HelmRelease
	// spec.interval, its chart's (and the HelmRepository's) interval, and
	// spec.timeout.
	ReleaseInterval, SourceInterval, Timeout time.Duration
	// InstallRetries and UpgradeRetries: remediation retries.
	InstallRetries, UpgradeRetries int
	// FluxShard is the sharding.fluxcd.io/key label value of the Flux
	// objects (the HelmChart's too); empty: no label.
	FluxShard string
}

// DefaultConfig are the production defaults (RepositoryURL aside).
func DefaultConfig() Config {
	return Config{
		ReleaseInterval: 10 * time.Minute,
		SourceInterval:  10 * time.Minute,
		Timeout:         10 * time.Minute,
		InstallRetries:  3,
		UpgradeRetries:  3,
		FluxShard:       opsv1.DefaultFluxShard,
	}
}

// SourceName is the name of the HelmRepository of stack.
func SourceName(stack string) string { return stack + "-charts" }

// Plan is what one reconcile writes: the source and the HelmReleases to
// apply (declaration order), the HelmReleases to delete (removed
// components), and the components whose change is refused.
type Plan struct {
	Source *sourcev1.HelmRepository
	Apply  []*helmv2.HelmRelease
	Delete []string
	// Refused are components whose HelmRelease is kept as it is, by name,
	// with why.
	Refused map[string]string
	// Conflicts are declared components whose name is taken by a
	// HelmRelease this stack does not manage, by name, with why.
	Conflicts map[string]string
}

// Decide computes the plan of stack given the HelmReleases of its
// namespace (existing, by name). It is pure. An error means the
// declaration cannot be applied at all (a dependsOn cycle, a dependency
// that is not declared); nothing is written then.
func Decide(stack *opsv1.ObservabilityStack, existing map[string]*helmv2.HelmRelease, cfg Config) (Plan, error) {
	if err := validate(stack.Spec.Components); err != nil {
		return Plan{}, err
	}
	p := Plan{Source: source(stack, cfg), Refused: map[string]string{}, Conflicts: map[string]string{}}
	declared := map[string]bool{}
	for _, c := range stack.Spec.Components {
		declared[c.Name] = true
		hr := existing[c.Name]
		if hr != nil && hr.Labels[LabelStack] != stack.Name {
			p.Conflicts[c.Name] = fmt.Sprintf("HelmRelease %s/%s exists and is not managed by ObservabilityStack %s: rename the component or remove that HelmRelease", stack.Namespace, c.Name, stack.Name)
			continue
		}
		if hr != nil && chartOf(hr) == opsv1.DataBearingChart && c.Chart != opsv1.DataBearingChart && !stack.Spec.AllowDataRemoval {
			p.Refused[c.Name] = fmt.Sprintf("component %s runs chart %s, which holds data: changing its chart to %s replaces it; set allowDataRemoval to true to allow it", c.Name, opsv1.DataBearingChart, c.Chart)
			continue
		}
		p.Apply = append(p.Apply, release(stack, c, cfg))
	}
	names := make([]string, 0, len(existing))
	for name := range existing {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		hr := existing[name]
		if declared[name] || hr.Labels[LabelStack] != stack.Name {
			continue
		}
		if chartOf(hr) == opsv1.DataBearingChart && !stack.Spec.AllowDataRemoval {
			p.Refused[name] = fmt.Sprintf("component %s (chart %s) was removed from the declaration but holds data: its HelmRelease is kept; set allowDataRemoval to true to uninstall it, or declare it again", name, opsv1.DataBearingChart)
			continue
		}
		p.Delete = append(p.Delete, name)
	}
	return p, nil
}

func chartOf(hr *helmv2.HelmRelease) string {
	if hr.Spec.Chart == nil {
		return ""
	}
	return hr.Spec.Chart.Spec.Chart
}

// validate refuses what the CRD's schema cannot: a dependsOn cycle. (It
// also checks what the schema does check, for objects written before it.)
func validate(components []opsv1.StackComponent) error {
	index := map[string]int{}
	for i, c := range components {
		if _, dup := index[c.Name]; dup {
			return fmt.Errorf("spec.components[%d].name: %q is declared twice", i, c.Name)
		}
		index[c.Name] = i
	}
	for i, c := range components {
		for _, d := range c.DependsOn {
			if _, ok := index[d]; !ok || d == c.Name {
				return fmt.Errorf("spec.components[%d].dependsOn: %q is not another component of this stack", i, d)
			}
		}
	}
	// Depth-first search for a cycle; state 1: on the path, 2: done.
	state := make([]int, len(components))
	var path []string
	var visit func(i int) error
	visit = func(i int) error {
		switch state[i] {
		case 1:
			start := slices.Index(path, components[i].Name)
			return fmt.Errorf("spec.components: dependsOn cycle %s", strings.Join(append(path[start:], components[i].Name), " -> "))
		case 2:
			return nil
		}
		state[i] = 1
		path = append(path, components[i].Name)
		for _, d := range components[i].DependsOn {
			if err := visit(index[d]); err != nil {
				return err
			}
		}
		path = path[:len(path)-1]
		state[i] = 2
		return nil
	}
	for i := range components {
		if err := visit(i); err != nil {
			return err
		}
	}
	return nil
}

func labels(stack string) map[string]string {
	return map[string]string{LabelStack: stack}
}

// chartMeta carries the shard label to the HelmChart helm-controller
// creates from a HelmRelease.
func chartMeta(cfg Config) *helmv2.HelmChartTemplateObjectMeta {
	if cfg.FluxShard == "" {
		return nil
	}
	return &helmv2.HelmChartTemplateObjectMeta{Labels: opsv1.FluxShardLabels(cfg.FluxShard, nil)}
}

func source(stack *opsv1.ObservabilityStack, cfg Config) *sourcev1.HelmRepository {
	return &sourcev1.HelmRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.HelmRepositoryKind},
		ObjectMeta: metav1.ObjectMeta{Name: SourceName(stack.Name), Namespace: stack.Namespace, Labels: opsv1.FluxShardLabels(cfg.FluxShard, labels(stack.Name))},
		Spec: sourcev1.HelmRepositorySpec{
			URL:      cfg.RepositoryURL,
			Interval: metav1.Duration{Duration: cfg.SourceInterval},
		},
	}
}

// release is the HelmRelease of component c. Like a vmcluster's
// (apiserver/internal/vmclusters): a failed install is retried after an
// uninstall, a failed upgrade is rolled back, never uninstalled. CRDs in
// a chart's crds/ are created on install and replaced on upgrade, so that
// upgrading the vm-operator component upgrades its CRDs.
func release(stack *opsv1.ObservabilityStack, c opsv1.StackComponent, cfg Config) *helmv2.HelmRelease {
	l := labels(stack.Name)
	l[LabelComponent] = c.Name
	hr := &helmv2.HelmRelease{
		TypeMeta:   metav1.TypeMeta{APIVersion: helmv2.GroupVersion.String(), Kind: helmv2.HelmReleaseKind},
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: stack.Namespace, Labels: opsv1.FluxShardLabels(cfg.FluxShard, l)},
		Spec: helmv2.HelmReleaseSpec{
			Interval:    metav1.Duration{Duration: cfg.ReleaseInterval},
			ReleaseName: c.Name,
			Chart: &helmv2.HelmChartTemplate{ObjectMeta: chartMeta(cfg), Spec: helmv2.HelmChartTemplateSpec{
				Chart:             c.Chart,
				Version:           c.Version,
				ReconcileStrategy: sourcev1.ReconcileStrategyChartVersion,
				SourceRef:         helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: SourceName(stack.Name)},
				Interval:          &metav1.Duration{Duration: cfg.SourceInterval},
			}},
			Timeout: &metav1.Duration{Duration: cfg.Timeout},
			Install: &helmv2.Install{
				CRDs: helmv2.CreateReplace,
				Remediation: &helmv2.InstallRemediation{
					Retries:              cfg.InstallRetries,
					RemediateLastFailure: ptr.To(false),
				},
			},
			Upgrade: &helmv2.Upgrade{
				CRDs: helmv2.CreateReplace,
				Remediation: &helmv2.UpgradeRemediation{
					Retries:              cfg.UpgradeRetries,
					RemediateLastFailure: ptr.To(true),
					Strategy:             ptr.To(helmv2.RollbackRemediationStrategy),
				},
			},
		},
	}
	for _, d := range c.DependsOn {
		hr.Spec.DependsOn = append(hr.Spec.DependsOn, meta.DependencyReference{Name: d})
	}
	if c.Values != nil && len(c.Values.Raw) > 0 {
		hr.Spec.Values = &apiextensionsv1.JSON{Raw: slices.Clone(c.Values.Raw)}
	}
	return hr
}
