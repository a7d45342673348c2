package vmclusters

import (
	"encoding/json"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

func testTranslator(t *testing.T, src ChartSource) Translator {
	t.Helper()
	cfg := config.Default()
	eps, err := cfg.Chart.EndpointTemplates()
	if err != nil {
		t.Fatal(err)
	}
	return Translator{Namespace: "obs", Chart: src, Flux: cfg.Flux, Endpoints: eps}
}

var now = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func TestRelease(t *testing.T) {
	g := NewWithT(t)
	tr := testTranslator(t, ChartSource{Name: "vmcluster", DefaultVersion: "0.1.0", URL: "https://charts.example/vm"})

	hr := tr.Release(CreateRequest{Name: "c1", Values: []byte(`{"a":1}`)}, now)
	g.Expect(hr.Name).To(Equal("c1"))
	g.Expect(hr.Namespace).To(Equal("obs"))
	// The Flux shard label (docs/install.md, "Installing next to an
	// existing Flux") on the HelmRelease, its HelmChart and its source.
	shard := map[string]string{opsv1.FluxShardLabel: opsv1.DefaultFluxShard}
	g.Expect(hr.Labels).To(Equal(map[string]string{LabelManagedBy: ManagedBy, LabelVMCluster: "c1", opsv1.FluxShardLabel: opsv1.DefaultFluxShard}))
	g.Expect(hr.Spec.Chart.ObjectMeta).NotTo(BeNil())
	g.Expect(hr.Spec.Chart.ObjectMeta.Labels).To(Equal(shard))
	g.Expect(tr.Source(hr, now).Labels).To(HaveKeyWithValue(opsv1.FluxShardLabel, opsv1.DefaultFluxShard))
	g.Expect(hr.Annotations).To(HaveKeyWithValue(meta.ReconcileRequestAnnotation, "2026-12-01T10:00:00Z"))
	g.Expect(hr.Spec.ReleaseName).To(Equal("c1"))
	g.Expect(hr.Spec.Chart.Spec.Chart).To(Equal("vmcluster"))
	g.Expect(hr.Spec.Chart.Spec.Version).To(Equal("0.1.0"))
	g.Expect(hr.Spec.Chart.Spec.SourceRef).To(Equal(helmv2.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "c1"}))
	g.Expect(string(hr.Spec.Values.Raw)).To(Equal(`{"a":1}`))
	g.Expect(hr.Spec.Interval.Duration).To(Equal(10 * time.Minute))
	// Stateful-cluster remediation: never uninstall after a failed upgrade.
	g.Expect(hr.Spec.Upgrade.Remediation.GetStrategy()).To(Equal(helmv2.RollbackRemediationStrategy))
	g.Expect(hr.Spec.Upgrade.Remediation.MustRemediateLastFailure()).To(BeTrue())
	g.Expect(hr.Spec.Install.Remediation.Retries).To(Equal(3))
	g.Expect(hr.Spec.Install.Remediation.MustRemediateLastFailure()).To(BeFalse())
	g.Expect(IsManaged(hr)).To(BeTrue())

	hr = tr.Release(CreateRequest{Name: "c2", Values: []byte(`{}`), Version: "0.2.0"}, now)
	g.Expect(hr.Spec.Chart.Spec.Version).To(Equal("0.2.0"))
	g.Expect(hr.Spec.PostRenderers).To(BeEmpty())
	g.Expect(HoldsForRestore(hr)).To(BeFalse())

	// Without a shard (flux.shard: ""): no label anywhere.
	tr.Flux.Shard = ""
	hr = tr.Release(CreateRequest{Name: "c3", Values: []byte(`{}`)}, now)
	g.Expect(hr.Labels).To(Equal(Labels("c3")))
	g.Expect(hr.Spec.Chart.ObjectMeta).To(BeNil())
	g.Expect(tr.Source(hr, now).Labels).To(Equal(Labels("c3")))
}

// A vmcluster created from a backup is held by its hold ConfigMap
// (Seeder.EnsureHold), not by its HelmRelease: the release has no
// post-renderer. A release of an earlier version, held by the
// annotation post-renderer, still counts as held (HoldsForRestore), and a
// create without restore_from does not match it.
func TestReleaseRestoreFrom(t *testing.T) {
	g := NewWithT(t)
	tr := testTranslator(t, ChartSource{Name: "vmcluster", DefaultVersion: "0.1.0", URL: "https://charts.example/vm"})
	req := CreateRequest{Name: "c1", Values: []byte(`{}`), RestoreFrom: &RestoreFrom{Backup: "b1"}}
	hr := tr.Release(req, now)
	g.Expect(hr.Spec.PostRenderers).To(BeEmpty())
	g.Expect(HoldsForRestore(hr)).To(BeFalse())
	g.Expect(tr.SameAsRequest(hr, req)).To(BeTrue())

	old := hr.DeepCopy()
	raw, err := json.Marshal(opsv1.RestoreHoldPostRenderer("c1", "obs/seed-c1"))
	g.Expect(err).NotTo(HaveOccurred())
	var pr helmv2.PostRenderer
	g.Expect(json.Unmarshal(raw, &pr)).To(Succeed())
	old.Spec.PostRenderers = []helmv2.PostRenderer{pr}
	g.Expect(HoldsForRestore(old)).To(BeTrue())
	g.Expect(tr.SameAsRequest(old, req)).To(BeTrue())
	g.Expect(tr.SameAsRequest(old, CreateRequest{Name: "c1", Values: []byte(`{}`)})).To(BeFalse())
	old.Name = "c2"
	g.Expect(HoldsForRestore(old)).To(BeFalse(), "the hold of another VMCluster")
}

func TestStorageReplicas(t *testing.T) {
	g := NewWithT(t)
	s := &Service{Translator: testTranslator(t, ChartSource{Name: "vmcluster", DefaultVersion: "0.1.0"})}
	g.Expect(s.storageReplicas("", []byte(`{"vmstorage":{"replicaCount":3}}`))).To(Equal(3))
	def := s.storageReplicas("", []byte(`{}`))
	g.Expect(def).To(BeNumerically(">=", 1))
	g.Expect(s.storageReplicas("", []byte(`{"vmstorage":{}}`))).To(Equal(def))
}

func TestSource(t *testing.T) {
	g := NewWithT(t)
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: "obs", UID: types.UID("u-1")}}

	https := testTranslator(t, ChartSource{Name: "vmcluster", URL: "https://charts.example/vm", SecretName: "creds"}).Source(hr, now)
	g.Expect(https.Name).To(Equal("c1"))
	g.Expect(https.Spec.URL).To(Equal("https://charts.example/vm"))
	g.Expect(https.Spec.Type).To(BeEmpty())
	g.Expect(https.Spec.SecretRef.Name).To(Equal("creds"))
	g.Expect(https.OwnerReferences).To(HaveLen(1))
	g.Expect(https.OwnerReferences[0].UID).To(Equal(types.UID("u-1")))
	g.Expect(https.OwnerReferences[0].Kind).To(Equal("HelmRelease"))
	g.Expect(https.Labels).To(HaveKeyWithValue(LabelVMCluster, "c1"))
	g.Expect(https.Annotations).To(HaveKey(meta.ReconcileRequestAnnotation))

	oci := testTranslator(t, ChartSource{Name: "vmcluster", URL: "oci://127.0.0.1:5000/charts", OCI: true, Insecure: true}).Source(hr, now)
	g.Expect(oci.Spec.Type).To(Equal(sourcev1.HelmRepositoryTypeOCI))
	g.Expect(oci.Spec.Insecure).To(BeTrue())
	g.Expect(oci.Spec.SecretRef).To(BeNil())
}

func TestSameAsRequest(t *testing.T) {
	g := NewWithT(t)
	tr := testTranslator(t, ChartSource{Name: "vmcluster", DefaultVersion: "0.1.0"})
	hr := tr.Release(CreateRequest{Name: "c1", Values: []byte(`{"a":1,"b":{"c":[1,2]}}`)}, now)
	// The API server may re-encode numbers; values compare as values.
	hr.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"b":{"c":[1.0,2]},"a":1}`)}

	g.Expect(tr.SameAsRequest(hr, CreateRequest{Name: "c1", Values: []byte(`{"a":1,"b":{"c":[1,2]}}`)})).To(BeTrue())
	g.Expect(tr.SameAsRequest(hr, CreateRequest{Name: "c1", Values: []byte(`{"a":1,"b":{"c":[1,2]}}`), Version: "0.1.0"})).To(BeTrue())
	g.Expect(tr.SameAsRequest(hr, CreateRequest{Name: "c1", Values: []byte(`{"a":2,"b":{"c":[1,2]}}`)})).To(BeFalse())
	g.Expect(tr.SameAsRequest(hr, CreateRequest{Name: "c1", Values: []byte(`{"a":1,"b":{"c":[1,2]}}`), Version: "0.2.0"})).To(BeFalse())
	g.Expect(tr.SameAsRequest(hr, CreateRequest{Name: "c1", Values: []byte(`{}`)})).To(BeFalse())

	empty := tr.Release(CreateRequest{Name: "c2"}, now)
	empty.Spec.Values = nil
	g.Expect(tr.SameAsRequest(empty, CreateRequest{Name: "c2", Values: []byte(`{}`)})).To(BeTrue())
}

func TestUpdatePatch(t *testing.T) {
	g := NewWithT(t)
	tr := testTranslator(t, ChartSource{Name: "vmcluster", DefaultVersion: "0.1.0"})
	hr := tr.Release(CreateRequest{Name: "c1", Values: []byte(`{"a":1}`)}, now)
	hr.UID = "u-1"

	decode := func(b []byte) []map[string]any {
		var ops []map[string]any
		g.Expect(json.Unmarshal(b, &ops)).To(Succeed())
		return ops
	}
	p, err := tr.UpdatePatch(hr, []byte(`{"b":2}`), "", false, now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(decode(p)).To(Equal([]map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": "u-1"},
		{"op": "add", "path": "/spec/values", "value": map[string]any{"b": float64(2)}},
		{"op": "add", "path": "/metadata/annotations/reconcile.fluxcd.io~1requestedAt", "value": "2026-12-01T10:00:00Z"},
	}))

	// A version change; an object without annotations gets the map.
	hr.Annotations = nil
	p, err = tr.UpdatePatch(hr, []byte(`{}`), "0.2.0", true, now)
	g.Expect(err).NotTo(HaveOccurred())
	ops := decode(p)
	g.Expect(ops).To(ContainElement(map[string]any{"op": "replace", "path": "/spec/chart/spec/version", "value": "0.2.0"}))
	g.Expect(ops).To(ContainElement(map[string]any{"op": "add", "path": "/metadata/annotations",
		"value": map[string]any{meta.ReconcileRequestAnnotation: "2026-12-01T10:00:00Z", AnnotationAllowDataLoss: "2026-12-01T10:00:00Z"}}))

	// The same version is no change.
	p, err = tr.UpdatePatch(hr, []byte(`{}`), "0.1.0", false, now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(p)).NotTo(ContainSubstring("/spec/chart/spec/version"))
	g.Expect(string(p)).NotTo(ContainSubstring("allow-data-loss"))

	// allow_data_loss with annotations present, and a resourceVersion.
	hr.Annotations = map[string]string{"x": "y"}
	hr.ResourceVersion = "42"
	p, err = tr.UpdatePatch(hr, []byte(`{}`), "", true, now)
	g.Expect(err).NotTo(HaveOccurred())
	ops = decode(p)
	g.Expect(ops[1]).To(Equal(map[string]any{"op": "replace", "path": "/metadata/resourceVersion", "value": "42"}))
	g.Expect(ops).To(ContainElement(map[string]any{"op": "add", "path": "/metadata/annotations/ops.observability.tidbcloud.com~1allow-data-loss", "value": "2026-12-01T10:00:00Z"}))
}

func TestView(t *testing.T) {
	g := NewWithT(t)
	tr := testTranslator(t, ChartSource{Name: "vmcluster", DefaultVersion: "0.1.0"})
	hr := tr.Release(CreateRequest{Name: "c1", Values: []byte(`{"a":1}`)}, now)
	hr.UID = "u-1"
	hr.Generation = 1
	hr.CreationTimestamp = metav1.NewTime(now)

	v := tr.View(hr, true)
	g.Expect(v.Name).To(Equal("vmclusters/c1"))
	g.Expect(v.ID).To(Equal("u-1"))
	g.Expect(v.Status).To(Equal(StatusCreating))
	g.Expect(v.Endpoints).To(BeEmpty())
	g.Expect(string(v.Values)).To(Equal(`{"a":1}`))
	g.Expect(v.HelmReleaseInfo).To(Equal(HelmReleaseInfo{ReleaseName: "c1", ReleaseNamespace: "obs", Chart: "vmcluster", Version: "0.1.0"}))
	g.Expect(v.CreateTime).To(Equal("2026-12-01T10:00:00Z"))

	hr.Status.History = helmv2.Snapshots{{Version: 1, Status: "deployed"}}
	hr.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, metav1.ConditionTrue, helmv2.InstallSucceededReason, "ok", 1)}
	v = tr.View(hr, false)
	g.Expect(v.Status).To(Equal(StatusRunning))
	g.Expect(v.Values).To(BeNil())
	g.Expect(v.Endpoints).To(Equal(map[string]string{
		"prometheus":   "http://vmselect-c1.obs.svc:8481/select/0/prometheus",
		"remote_write": "http://vminsert-c1.obs.svc:8480/insert/0/prometheus/api/v1/write",
	}))

	b, err := json.Marshal(v)
	g.Expect(err).NotTo(HaveOccurred())
	var m map[string]any
	g.Expect(json.Unmarshal(b, &m)).To(Succeed())
	g.Expect(m).To(HaveKey("helm_release_info"))
	g.Expect(m).NotTo(HaveKey("values"))
	g.Expect(m["helm_release_info"]).To(HaveKeyWithValue("release_namespace", "obs"))
}

func TestCheckVersion(t *testing.T) {
	g := NewWithT(t)
	local := ChartSource{Name: "vmcluster", Versions: []string{"0.1.0", "0.2.0"}}
	g.Expect(local.CheckVersion("")).To(BeEmpty())
	g.Expect(local.CheckVersion("0.2.0")).To(BeEmpty())
	g.Expect(local.CheckVersion("0.3.0")).To(Equal("chart vmcluster has no version 0.3.0 (available: 0.1.0, 0.2.0)"))
	remote := ChartSource{Name: "vmcluster"}
	g.Expect(remote.CheckVersion("0.3.0")).To(BeEmpty(), "a remote repository is not asked")
}

// recordingValidator refuses every value and records what it was asked.
type recordingValidator struct{ got [][]byte }

func (r *recordingValidator) Validate(values []byte) []apierror.FieldViolation {
	r.got = append(r.got, values)
	return []apierror.FieldViolation{apierror.Violation("values.x", "refused")}
}

func TestCheckValues(t *testing.T) {
	g := NewWithT(t)
	v1, v2 := &recordingValidator{}, &recordingValidator{}
	src := ChartSource{Name: "vmcluster", DefaultVersion: "0.2.0", Validators: map[string]ValuesValidator{"0.1.0": v1, "0.2.0": v2}}
	g.Expect(src.CheckValues("", []byte(`{"a":1}`))).To(HaveLen(1), "the default version's chart")
	g.Expect(v2.got).To(Equal([][]byte{[]byte(`{"a":1}`)}))
	g.Expect(src.CheckValues("0.1.0", []byte(`{}`))).To(HaveLen(1), "the requested version's chart")
	g.Expect(v1.got).To(HaveLen(1))
	g.Expect(src.CheckValues("9.9.9", []byte(`{}`))).To(BeEmpty(), "no chart in hand: Helm checks at install")
	g.Expect(ChartSource{Name: "remote", DefaultVersion: "1.0.0"}.CheckValues("", []byte(`{}`))).To(BeEmpty())
}
