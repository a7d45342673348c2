package vmclusters

import (
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAppliedValues(t *testing.T) {
	g := NewWithT(t)
	tr := Translator{Chart: ChartSource{Defaults: map[string]map[string]any{
		"0.1.0": {"retentionPeriod": "1", "vmstorage": map[string]any{"replicaCount": 3, "storage": map[string]any{"size": "10Gi"}}, "vmselect": map[string]any{"replicaCount": 2}},
	}}}
	// Helm's coalescing: overrides win, nested maps merge, null removes a
	// default.
	got := tr.appliedValues([]byte(`{"retentionPeriod":"7","vmstorage":{"replicaCount":1},"vmselect":null}`), "0.1.0")
	g.Expect(got).To(MatchJSON(`{"retentionPeriod":"7","vmstorage":{"replicaCount":1,"storage":{"size":"10Gi"}}}`))
	// The defaults map is not modified.
	g.Expect(tr.Chart.Defaults["0.1.0"]["vmselect"]).To(Equal(map[string]any{"replicaCount": 2}))
	// Unknown version (a remote chart): the overrides.
	g.Expect(tr.appliedValues([]byte(`{"a":1}`), "9.9.9")).To(MatchJSON(`{"a":1}`))
}

func TestDeployedVersionAndLastAction(t *testing.T) {
	g := NewWithT(t)
	hr := &helmv2.HelmRelease{}
	g.Expect(deployedVersion(hr)).To(BeEmpty())
	g.Expect(lastAction(hr)).To(BeNil())
	hr.Status.History = helmv2.Snapshots{{ChartVersion: "0.2.0", Status: "failed"}, {ChartVersion: "0.1.0", Status: "deployed"}}
	g.Expect(deployedVersion(hr)).To(Equal("0.1.0"), "the newest deployed entry, not the newest attempt")
	when := metav1.Date(2026, 1, 2, 3, 4, 5, 0, metav1.Now().Location())
	hr.Status.LastAttemptedReleaseAction = helmv2.ReleaseActionUpgrade
	hr.Status.LastAttemptedGeneration = 2
	hr.Status.Conditions = []metav1.Condition{{Type: helmv2.ReleasedCondition, Status: metav1.ConditionFalse, Reason: "UpgradeFailed", Message: "boom", ObservedGeneration: 2, LastTransitionTime: when}}
	g.Expect(lastAction(hr)).To(Equal(&HelmAction{Action: "upgrade", Result: "Failed", Reason: "UpgradeFailed", Message: "boom", Time: when.UTC().Format("2006-01-02T15:04:05Z")}))
	hr.Status.LastAttemptedGeneration = 3
	g.Expect(lastAction(hr).Result).To(Equal("InProgress"), "a Released condition of an older attempt")
}
