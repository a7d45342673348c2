package cachetrim

import (
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

func managed() []metav1.ManagedFieldsEntry {
	return []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
}

func TestTransforms(t *testing.T) {
	cases := map[string]struct {
		transform toolscache.TransformFunc
		in, want  any
	}{
		"default: managedFields and last-applied go, other annotations stay": {
			transform: Others(),
			in: &opsv1.ClusterBackup{ObjectMeta: metav1.ObjectMeta{Name: "b", ManagedFields: managed(),
				Annotations: map[string]string{AnnotationLastApplied: `{"big":"copy"}`, opsv1.AnnotationInitiatedBy: "alice"}}},
			want: &opsv1.ClusterBackup{ObjectMeta: metav1.ObjectMeta{Name: "b", Annotations: map[string]string{opsv1.AnnotationInitiatedBy: "alice"}}},
		},
		"an emptied annotations map stays a map": {
			transform: Others(),
			in:        &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationLastApplied: "{}"}}},
			want:      &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}},
		},
		"no annotations stay none": {
			transform: Others(),
			in:        &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}},
			want:      &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}},
		},
		"a tombstone passes unchanged": {
			transform: Releases(),
			in:        toolscache.DeletedFinalStateUnknown{Key: "ns/a"},
			want:      toolscache.DeletedFinalStateUnknown{Key: "ns/a"},
		},
		"releases: metadata stripped, status trimmed": {
			transform: Releases(),
			in: &helmv2.HelmRelease{
				ObjectMeta: metav1.ObjectMeta{Name: "r", ManagedFields: managed(), Annotations: map[string]string{AnnotationLastApplied: "{}", "k": "v"}},
				Status: helmv2.HelmReleaseStatus{HelmChart: "ns/ns-r", Inventory: &helmv2.ResourceInventory{Entries: []helmv2.ResourceRef{{ID: "a", Version: "v1"}}},
					History: helmv2.Snapshots{{Status: "deployed", ChartVersion: "1.0.0", Digest: "sha256:x", ChartName: "c"}}},
			},
			want: &helmv2.HelmRelease{
				ObjectMeta: metav1.ObjectMeta{Name: "r", Annotations: map[string]string{"k": "v"}},
				Status:     helmv2.HelmReleaseStatus{History: helmv2.Snapshots{{Status: "deployed", ChartVersion: "1.0.0"}}},
			},
		},
		"operations: metadata stripped, status trimmed": {
			transform: Operations(),
			in: &opsv1.ClusterUpgradeOperation{
				ObjectMeta: metav1.ObjectMeta{Name: "o", ManagedFields: managed()},
				Status: opsv1.ClusterUpgradeOperationStatus{Phase: opsv1.UpgradePhaseRunning, Progress: "1/2", Conditions: []metav1.Condition{
					{Type: opsv1.ReconcilingCondition, Status: metav1.ConditionTrue}, {Type: opsv1.ReadyCondition, Status: metav1.ConditionFalse, Message: "m"}}},
			},
			want: &opsv1.ClusterUpgradeOperation{
				ObjectMeta: metav1.ObjectMeta{Name: "o"},
				Status: opsv1.ClusterUpgradeOperationStatus{Phase: opsv1.UpgradePhaseRunning, Conditions: []metav1.Condition{
					{Type: opsv1.ReadyCondition, Status: metav1.ConditionFalse, Message: "m"}}},
			},
		},
		"a kind's own transform leaves other kinds to the metadata strip": {
			transform: Operations(),
			in:        &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{ManagedFields: managed()}, Status: helmv2.HelmReleaseStatus{HelmChart: "x"}},
			want:      &helmv2.HelmRelease{Status: helmv2.HelmReleaseStatus{HelmChart: "x"}},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			out, err := c.transform(c.in)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out).To(Equal(c.want))
			// Idempotent, as client-go asks of a transform.
			again, err := c.transform(out)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(again).To(Equal(c.want))
		})
	}
}
