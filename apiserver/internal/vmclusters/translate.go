package vmclusters

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"text/template"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// Labels of every object ops-server manages for a vmcluster.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "ops-server"
	LabelVMCluster = "observability.tidbcloud.com/vmcluster"
	// AnnotationAllowDataLoss records on the HelmRelease the time of the
	// last PUT that acknowledged a change losing data (allow_data_loss).
	AnnotationAllowDataLoss = "ops.observability.tidbcloud.com/allow-data-loss"
)

// ChartSource is where the chart of every vmcluster comes from.
type ChartSource struct {
	// Name and DefaultVersion of the chart.
	Name           string
	DefaultVersion string
	// URL of the repository: https://, http:// or oci://. For a local
	// chart, the URL of the apiserver's own chart repository.
	URL string
	// OCI makes the HelmRepository of type oci.
	OCI      bool
	Insecure bool
	// SecretName is the Secret with the repository credentials.
	SecretName string
	// Versions are the versions known to exist (the packaged local
	// charts); empty when the repository is remote and cannot be asked.
	Versions []string
	// Validators check request values against the chart of a version, by
	// version: the charts in hand (the packaged local charts). A version
	// without one (a remote repository) is checked by Helm at install.
	Validators map[string]ValuesValidator
	// Defaults are the default values (values.yaml) of the known chart
	// versions, by version; the data-loss guards of PUT compare values
	// over them.
	Defaults map[string]map[string]any
}

// ValuesValidator checks request values (a JSON object) merged over the
// defaults of one chart version against its values.schema.json and its
// templates; one violation per bad field, none if the chart accepts them.
type ValuesValidator interface {
	Validate(values []byte) []apierror.FieldViolation
}

// CheckValues returns the problems of values for the chart version the
// request will install (empty: the default version).
func (c ChartSource) CheckValues(version string, values []byte) []apierror.FieldViolation {
	if version == "" {
		version = c.DefaultVersion
	}
	v := c.Validators[version]
	if v == nil {
		return nil
	}
	return v.Validate(values)
}

// DefaultsFor returns the default values of a chart version: the chart's
// own when known, else FallbackDefaults (the baked-in chart's). The map is
// shared: callers never modify it.
func (c ChartSource) DefaultsFor(version string) map[string]any {
	if d, ok := c.Defaults[version]; ok && d != nil {
		return d
	}
	return FallbackDefaults()
}

// CheckVersion returns the problem of a requested chart version against
// the known versions (empty if fine or unknowable).
func (c ChartSource) CheckVersion(version string) string {
	if version == "" || len(c.Versions) == 0 || slices.Contains(c.Versions, version) {
		return ""
	}
	return fmt.Sprintf("chart %s has no version %s (available: %s)", c.Name, version, strings.Join(c.Versions, ", "))
}

// Translator converts between the REST resource and the Flux objects.
// All of its methods are pure.
type Translator struct {
	Namespace string
	Chart     ChartSource
	Flux      config.FluxConfig
	Endpoints map[string]*template.Template
}

// Labels returns the labels of the objects of vmcluster name.
func Labels(name string) map[string]string {
	return map[string]string{LabelManagedBy: ManagedBy, LabelVMCluster: name}
}

// ObjectLabels are l with the Flux shard label of t's configuration:
// the labels of every Flux object ops-server creates, so that its own Flux
// controllers reconcile them and a customer's Flux does not.
func (t Translator) ObjectLabels(l map[string]string) map[string]string {
	return opsv1.FluxShardLabels(t.Flux.Shard, l)
}

// IsManaged reports whether hr was created by ops-server.
func IsManaged(hr *helmv2.HelmRelease) bool {
	return hr.Labels[LabelManagedBy] == ManagedBy && hr.Labels[LabelVMCluster] == hr.Name
}

// requestedAt formats the reconcile request annotation value.
func requestedAt(now time.Time) string { return now.UTC().Format(time.RFC3339Nano) }

// Release builds the HelmRelease of a new vmcluster. Flux settings for a
// stateful cluster (docs/apiserver.md): installs are retried with an
// uninstall of the failed attempt in between (nothing holds data yet);
// upgrades are retried with a rollback in between, and the last failure
// is rolled back too, so a bad change leaves the last good release
// running and the vmcluster FAILED with Helm's message; never an
// uninstall after a failed upgrade.
func (t Translator) Release(req CreateRequest, now time.Time) *helmv2.HelmRelease {
	version := req.Version
	if version == "" {
		version = t.Chart.DefaultVersion
	}
	hr := &helmv2.HelmRelease{
		TypeMeta: metav1.TypeMeta{APIVersion: helmv2.GroupVersion.String(), Kind: helmv2.HelmReleaseKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:        req.Name,
			Namespace:   t.Namespace,
			Labels:      t.ObjectLabels(Labels(req.Name)),
			Annotations: map[string]string{meta.ReconcileRequestAnnotation: requestedAt(now)},
		},
		Spec: helmv2.HelmReleaseSpec{
			Interval:    t.Flux.ReleaseInterval,
			ReleaseName: req.Name,
			Chart: &helmv2.HelmChartTemplate{ObjectMeta: t.chartMeta(), Spec: helmv2.HelmChartTemplateSpec{
				Chart:             t.Chart.Name,
				Version:           version,
				ReconcileStrategy: sourcev1.ReconcileStrategyChartVersion,
				SourceRef:         helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: req.Name},
				Interval:          ptr.To(t.Flux.SourceInterval),
			}},
			Timeout:    ptr.To(t.Flux.Timeout),
			MaxHistory: ptr.To(t.Flux.MaxHistory),
			Install: &helmv2.Install{
				DisableWait: t.Flux.DisableWait,
				Remediation: &helmv2.InstallRemediation{
					Retries:              t.Flux.InstallRetries,
					RemediateLastFailure: ptr.To(false),
				},
			},
			Upgrade: &helmv2.Upgrade{
				DisableWait: t.Flux.DisableWait,
				Remediation: &helmv2.UpgradeRemediation{
					Retries:              t.Flux.UpgradeRetries,
					RemediateLastFailure: ptr.To(true),
					Strategy:             ptr.To(helmv2.RollbackRemediationStrategy),
				},
			},
			Values: &apiextensionsv1.JSON{Raw: req.Values},
		},
	}
	return hr
}

// chartMeta carries the shard label to the HelmChart helm-controller
// creates from the HelmRelease (source-controller watches HelmCharts with
// the same selector).
func (t Translator) chartMeta() *helmv2.HelmChartTemplateObjectMeta {
	if t.Flux.Shard == "" {
		return nil
	}
	return &helmv2.HelmChartTemplateObjectMeta{Labels: t.ObjectLabels(nil)}
}

// HoldsForRestore reports whether hr still carries the restore-hold
// post-renderer an earlier release gave a vmcluster created from a backup
// (its seeding ClusterRestore has not finished). New vmclusters are held
// by their hold ConfigMap instead (Seeder.EnsureHold).
func HoldsForRestore(hr *helmv2.HelmRelease) bool {
	for _, pr := range hr.Spec.PostRenderers {
		raw, _ := json.Marshal(pr)
		var m any
		_ = json.Unmarshal(raw, &m)
		if opsv1.IsRestoreHoldPostRenderer(m, hr.Name) {
			return true
		}
	}
	return false
}

// Source builds the HelmRepository of the vmcluster of hr, owned by hr.
func (t Translator) Source(hr *helmv2.HelmRelease, now time.Time) *sourcev1.HelmRepository {
	repo := &sourcev1.HelmRepository{
		TypeMeta: metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.HelmRepositoryKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:        hr.Name,
			Namespace:   hr.Namespace,
			Labels:      t.ObjectLabels(Labels(hr.Name)),
			Annotations: map[string]string{meta.ReconcileRequestAnnotation: requestedAt(now)},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: helmv2.GroupVersion.String(),
				Kind:       helmv2.HelmReleaseKind,
				Name:       hr.Name,
				UID:        hr.UID,
				Controller: ptr.To(true),
			}},
		},
		Spec: sourcev1.HelmRepositorySpec{
			URL:      t.Chart.URL,
			Interval: t.Flux.SourceInterval,
		},
	}
	if t.Chart.OCI {
		repo.Spec.Type = sourcev1.HelmRepositoryTypeOCI
		repo.Spec.Insecure = t.Chart.Insecure
	}
	if t.Chart.SecretName != "" {
		repo.Spec.SecretRef = &meta.LocalObjectReference{Name: t.Chart.SecretName}
	}
	return repo
}

// SameAsRequest reports whether hr is what req would create, so that an
// identical repeat of a create is answered with the existing vmcluster.
// Values compare as JSON values (1.0 equals 1).
func (t Translator) SameAsRequest(hr *helmv2.HelmRelease, req CreateRequest) bool {
	version := req.Version
	if version == "" {
		version = t.Chart.DefaultVersion
	}
	if hr.Spec.Chart == nil || hr.Spec.Chart.Spec.Chart != t.Chart.Name || hr.Spec.Chart.Spec.Version != version {
		return false
	}
	if req.RestoreFrom == nil && HoldsForRestore(hr) {
		return false
	}
	var stored []byte
	if hr.Spec.Values != nil {
		stored = hr.Spec.Values.Raw
	}
	return EqualValues(stored, req.Values)
}

// EqualValues compares two JSON objects as values; absent equals {}.
func EqualValues(a, b []byte) bool {
	decode := func(raw []byte) (map[string]any, bool) {
		m := map[string]any{}
		if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			return m, true
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, false
		}
		if m == nil {
			m = map[string]any{}
		}
		return m, true
	}
	ma, okA := decode(a)
	mb, okB := decode(b)
	return okA && okB && reflect.DeepEqual(ma, mb)
}

// jsonPatchOp is one RFC 6902 operation.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// UpdatePatch is the JSON patch of a PUT: it checks the UID (the object
// was not recreated meanwhile), carries the resourceVersion of hr (so the
// API server refuses it with a Conflict if hr is not the current object:
// the etag and data-loss checks made on hr hold for the write), replaces
// spec.values as a whole (a merge patch would merge maps), changes the
// chart version when asked, and asks Flux to reconcile now. It touches
// nothing else, so it never fights the Flux controllers over status or
// finalizers.
//
// With allowDataLoss it also sets AnnotationAllowDataLoss to the request
// time, a record on the object of the acknowledged data loss.
func (t Translator) UpdatePatch(hr *helmv2.HelmRelease, values []byte, version string, allowDataLoss bool, now time.Time) ([]byte, error) {
	ops := []jsonPatchOp{
		{Op: "test", Path: "/metadata/uid", Value: string(hr.UID)},
	}
	if hr.ResourceVersion != "" {
		ops = append(ops, jsonPatchOp{Op: "replace", Path: "/metadata/resourceVersion", Value: hr.ResourceVersion})
	}
	ops = append(ops, jsonPatchOp{Op: "add", Path: "/spec/values", Value: json.RawMessage(values)})
	if version != "" && (hr.Spec.Chart == nil || version != hr.Spec.Chart.Spec.Version) {
		ops = append(ops, jsonPatchOp{Op: "replace", Path: "/spec/chart/spec/version", Value: version})
	}
	annotations := map[string]string{meta.ReconcileRequestAnnotation: requestedAt(now)}
	if allowDataLoss {
		annotations[AnnotationAllowDataLoss] = requestedAt(now)
	}
	if hr.Annotations == nil {
		ops = append(ops, jsonPatchOp{Op: "add", Path: "/metadata/annotations", Value: annotations})
	} else {
		for _, k := range []string{meta.ReconcileRequestAnnotation, AnnotationAllowDataLoss} {
			if v, ok := annotations[k]; ok {
				ops = append(ops, jsonPatchOp{Op: "add", Path: "/metadata/annotations/" + escapePointer(k), Value: v})
			}
		}
	}
	b, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encoding JSON patch: %w", err)
	}
	return b, nil
}

// escapePointer escapes a JSON pointer token (RFC 6901).
func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// View is the REST representation of hr; full adds the values.
func (t Translator) View(hr *helmv2.HelmRelease, full bool) VMCluster {
	st := StatusOf(hr)
	v := VMCluster{
		Name:          CollectionPrefix + hr.Name,
		ID:            string(hr.UID),
		Status:        st.Status,
		StatusReason:  st.Reason,
		StatusMessage: st.Message,
		Endpoints:     map[string]string{},
		ETag:          ETagOf(hr),
		HelmReleaseInfo: HelmReleaseInfo{
			ReleaseName:      hr.GetReleaseName(),
			ReleaseNamespace: hr.GetReleaseNamespace(),
		},
	}
	if !hr.CreationTimestamp.IsZero() {
		v.CreateTime = hr.CreationTimestamp.UTC().Format(time.RFC3339)
	}
	if hr.Spec.Chart != nil {
		v.HelmReleaseInfo.Chart = hr.Spec.Chart.Spec.Chart
		v.HelmReleaseInfo.Version = hr.Spec.Chart.Spec.Version
	}
	v.HelmReleaseInfo.DeployedVersion = deployedVersion(hr)
	v.HelmReleaseInfo.LastAction = lastAction(hr)
	if st.Installed && st.Status != StatusDeleting {
		v.Endpoints = t.RenderEndpoints(config.EndpointData{
			Name:      hr.Name,
			Release:   v.HelmReleaseInfo.ReleaseName,
			Namespace: v.HelmReleaseInfo.ReleaseNamespace,
			Chart:     v.HelmReleaseInfo.Chart,
			Version:   v.HelmReleaseInfo.Version,
		})
	}
	if full {
		v.ValuesOverrides = json.RawMessage("{}")
		if hr.Spec.Values != nil && len(hr.Spec.Values.Raw) > 0 {
			v.ValuesOverrides = json.RawMessage(hr.Spec.Values.Raw)
		}
		applied := v.HelmReleaseInfo.DeployedVersion
		if applied == "" {
			applied = v.HelmReleaseInfo.Version
		}
		v.Values = t.appliedValues(v.ValuesOverrides, applied)
	}
	return v
}

// RenderEndpoints renders every endpoint template; one that fails to
// render is left out.
func (t Translator) RenderEndpoints(data config.EndpointData) map[string]string {
	out := make(map[string]string, len(t.Endpoints))
	names := make([]string, 0, len(t.Endpoints))
	for name := range t.Endpoints {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		var b strings.Builder
		if err := t.Endpoints[name].Execute(&b, data); err != nil {
			continue
		}
		out[name] = b.String()
	}
	return out
}
