package vmclusters

import (
	"encoding/json"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// fluxRelease is a HelmRelease as the cache receives it after helm-controller
// installed (and maybe upgraded) it: every status field helm-controller
// writes, inventory and full snapshots included.
func fluxRelease(mod func(*helmv2.HelmRelease)) *helmv2.HelmRelease {
	deployed := metav1.NewTime(now.Add(-time.Hour))
	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{
			Name: "c1", Namespace: "obs", UID: "u-1", Generation: 3, ResourceVersion: "42",
			CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Hour)),
			Labels:            Labels("c1"),
			Annotations:       map[string]string{meta.ReconcileRequestAnnotation: "2026-12-01T09:00:00Z", AnnotationAllowDataLoss: "2026-12-01T09:00:00Z"},
		},
		Spec: helmv2.HelmReleaseSpec{
			ReleaseName: "c1",
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart: "vmcluster", Version: "0.2.0", SourceRef: helmv2.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "c1"},
			}},
			MaxHistory: ptr.To(5),
			Values:     &apiextensionsv1.JSON{Raw: []byte(`{"vmstorage":{"replicaCount":3},"retentionPeriod":"30d"}`)},
		},
		Status: helmv2.HelmReleaseStatus{
			ObservedGeneration:           3,
			ObservedPostRenderersDigest:  "sha256:aa",
			ObservedCommonMetadataDigest: "sha256:bb",
			LastAttemptedGeneration:      3,
			Conditions: []metav1.Condition{
				{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: "UpgradeSucceeded", Message: "Helm upgrade succeeded for release obs/c1.v2 with chart vmcluster@0.2.0", ObservedGeneration: 3, LastTransitionTime: deployed},
				{Type: helmv2.ReleasedCondition, Status: metav1.ConditionTrue, Reason: "UpgradeSucceeded", Message: "Helm upgrade succeeded for release obs/c1.v2 with chart vmcluster@0.2.0", ObservedGeneration: 3, LastTransitionTime: deployed},
			},
			HelmChart:        "obs/obs-c1",
			StorageNamespace: "obs",
			History: helmv2.Snapshots{
				{APIVersion: "helm.toolkit.fluxcd.io/v2", Digest: "sha256:1", Name: "c1", Namespace: "obs", Version: 2, Status: "deployed", Action: "upgrade",
					ChartName: "vmcluster", ChartVersion: "0.2.0", AppVersion: "v1.100.0", ConfigDigest: "sha256:2", FirstDeployed: deployed, LastDeployed: deployed,
					TestHooks: &map[string]*helmv2.TestHookStatus{}},
				{APIVersion: "helm.toolkit.fluxcd.io/v2", Digest: "sha256:3", Name: "c1", Namespace: "obs", Version: 1, Status: "superseded", Action: "install",
					ChartName: "vmcluster", ChartVersion: "0.1.0", AppVersion: "v1.100.0", ConfigDigest: "sha256:4", FirstDeployed: deployed, LastDeployed: deployed},
			},
			Inventory: &helmv2.ResourceInventory{Entries: []helmv2.ResourceRef{
				{ID: "obs_c1_operator.victoriametrics.com_VMCluster", Version: "v1beta1"},
				{ID: "obs_ops-hold-c1__ConfigMap", Version: "v1"},
			}},
			LastAttemptedReleaseAction:         helmv2.ReleaseActionUpgrade,
			LastAttemptedReleaseActionDuration: &metav1.Duration{Duration: 3 * time.Second},
			Failures:                           1,
			UpgradeFailures:                    1,
			LastAttemptedRevision:              "0.2.0",
			LastAttemptedRevisionDigest:        "sha256:5",
			LastAttemptedValuesChecksum:        "sha1:6",
			LastReleaseRevision:                2,
			LastAttemptedConfigDigest:          "sha256:7",
			LastHandledResetAt:                 "2026-12-01T08:00:00Z",
		},
	}
	if mod != nil {
		mod(hr)
	}
	return hr
}

// TestTrimReleaseChangesNoAnswer: every reader of a cached HelmRelease
// (vmclusters and components: the view with and without values, the
// status, the etag, the idempotent-create check, the PUT patch, the
// restore hold) answers the same for the release before and after
// TrimRelease. A trim that dropped something the API shows fails here.
func TestTrimReleaseChangesNoAnswer(t *testing.T) {
	tr := testTranslator(t, ChartSource{Name: "vmcluster", DefaultVersion: "0.1.0",
		Defaults: map[string]map[string]any{"0.2.0": {"retentionPeriod": "1", "vmstorage": map[string]any{"replicaCount": 1}}}})
	failed := metav1.Condition{Type: helmv2.ReleasedCondition, Status: metav1.ConditionFalse, Reason: "UpgradeFailed", Message: "context deadline exceeded", ObservedGeneration: 4}
	cases := map[string]func(*helmv2.HelmRelease){
		"installed and ready": nil,
		"no status yet":       func(hr *helmv2.HelmRelease) { hr.Status = helmv2.HelmReleaseStatus{} },
		"upgrading": func(hr *helmv2.HelmRelease) {
			hr.Generation = 4
		},
		"failed upgrade, stalled": func(hr *helmv2.HelmRelease) {
			hr.Generation = 4
			hr.Status.LastAttemptedGeneration = 4
			hr.Status.Conditions = append(hr.Status.Conditions[:1:1], failed,
				metav1.Condition{Type: meta.StalledCondition, Status: metav1.ConditionTrue, Reason: "RetriesExceeded", Message: "retries exhausted", ObservedGeneration: 4})
		},
		"deleting": func(hr *helmv2.HelmRelease) { hr.DeletionTimestamp = ptr.To(metav1.NewTime(now)) },
		"in another namespace, no annotations": func(hr *helmv2.HelmRelease) {
			hr.Spec.TargetNamespace, hr.Annotations = "tenant", nil
		},
		"a nil snapshot": func(hr *helmv2.HelmRelease) {
			hr.Status.History = append(helmv2.Snapshots{nil}, hr.Status.History...)
		},
		"held for a restore": func(hr *helmv2.HelmRelease) {
			hr.Spec.PostRenderers = []helmv2.PostRenderer{{Kustomize: &helmv2.Kustomize{}}}
		},
	}
	for name, mod := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			answers := func(hr *helmv2.HelmRelease) map[string]any {
				patch, err := tr.UpdatePatch(hr, []byte(`{"a":1}`), "0.3.0", true, now)
				g.Expect(err).NotTo(HaveOccurred())
				return map[string]any{
					"view":        tr.View(hr, true),
					"list view":   tr.View(hr, false),
					"status":      StatusOf(hr),
					"etag":        ETagOf(hr),
					"managed":     IsManaged(hr),
					"same":        tr.SameAsRequest(hr, CreateRequest{Name: "c1", Version: "0.2.0", Values: []byte(`{"retentionPeriod":"30d","vmstorage":{"replicaCount":3}}`)}),
					"patch":       string(patch),
					"held":        HoldsForRestore(hr),
					"release":     hr.GetReleaseName() + " " + hr.GetReleaseNamespace(),
					"values":      string(hr.Spec.Values.Raw),
					"deployed":    deployedVersion(hr),
					"last action": lastAction(hr),
				}
			}
			before := fluxRelease(mod)
			trimmed := before.DeepCopy()
			TrimRelease(trimmed)
			want, err := json.Marshal(answers(before))
			g.Expect(err).NotTo(HaveOccurred())
			got, err := json.Marshal(answers(trimmed))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(got)).To(MatchJSON(want))
		})
	}
}

// TestTrimRelease: what TrimRelease keeps and drops, and that it is
// idempotent (client-go asks it of a transform).
func TestTrimRelease(t *testing.T) {
	g := NewWithT(t)
	hr := fluxRelease(nil)
	spec, meta := *hr.Spec.DeepCopy(), *hr.ObjectMeta.DeepCopy()
	TrimRelease(hr)
	g.Expect(hr.Spec).To(Equal(spec), "the spec stays whole")
	g.Expect(hr.ObjectMeta).To(Equal(meta), "the metadata stays whole")
	g.Expect(hr.Status).To(Equal(helmv2.HelmReleaseStatus{
		Conditions:                 fluxRelease(nil).Status.Conditions,
		LastAttemptedReleaseAction: helmv2.ReleaseActionUpgrade,
		LastAttemptedGeneration:    3,
		History:                    helmv2.Snapshots{{Status: "deployed", ChartVersion: "0.2.0"}, {Status: "superseded", ChartVersion: "0.1.0"}},
	}))
	again := hr.DeepCopy()
	TrimRelease(again)
	g.Expect(again).To(Equal(hr))

	empty := &helmv2.HelmRelease{}
	TrimRelease(empty)
	g.Expect(empty.Status).To(Equal(helmv2.HelmReleaseStatus{}))
}
