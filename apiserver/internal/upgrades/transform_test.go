package upgrades

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// operatorOperation is a ClusterUpgradeOperation as the cache receives it
// mid-upgrade: every status field the operator writes.
func operatorOperation() *opsv1.ClusterUpgradeOperation {
	t0 := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	return &opsv1.ClusterUpgradeOperation{
		ObjectMeta: metav1.ObjectMeta{
			Name: "upgrade-x", Namespace: "obs", UID: "u-1", Generation: 2, ResourceVersion: "9", CreationTimestamp: t0,
			Labels:      map[string]string{LabelCluster: "c1"},
			Annotations: map[string]string{opsv1.AnnotationInitiatedBy: "alice", opsv1.AnnotationIdempotencyKey: "k1"},
		},
		Spec: opsv1.ClusterUpgradeOperationSpec{
			K8sClusterName: "c1", Region: "local", CloudProvider: "mock", TargetVersion: "1.30",
			NodeGroupUpgrades: []opsv1.NodeGroupUpgrade{{NodeGroupName: "ng", Strategy: "blue-green", NewNodeGroupName: "ng-130"}},
			Approvals:         []opsv1.ApprovalGate{"BeforeDrain"},
			Approved:          []string{"BeforeDrain"},
		},
		Status: opsv1.ClusterUpgradeOperationStatus{
			ObservedGeneration: 2, Phase: opsv1.UpgradePhaseRunning, Progress: "2/5", ResolvedTargetVersion: "1.30.4",
			Conditions: []metav1.Condition{
				{Type: opsv1.ReadyCondition, Status: metav1.ConditionFalse, Reason: "Progressing", Message: "step 2 of 5: create node group ng-130", ObservedGeneration: 2, LastTransitionTime: t0},
				{Type: opsv1.ReconcilingCondition, Status: metav1.ConditionTrue, Reason: "Progressing", Message: "step 2 of 5: create node group ng-130", ObservedGeneration: 2, LastTransitionTime: t0},
				{Type: opsv1.StalledCondition, Status: metav1.ConditionFalse, Reason: "Progressing", ObservedGeneration: 2, LastTransitionTime: t0},
			},
			Steps: []opsv1.UpgradeStep{
				{ID: "control-plane", Type: "ControlPlane", Action: "Upgrade", Phase: "Succeeded", OperationID: "op-1", Attempts: 1, StartTime: &t0, CompletionTime: &t1},
				{ID: "ng/create", Type: "NodeGroup", Action: "Create", Target: "ng-130", Phase: "Running", Attempts: 2, StartTime: &t1, Message: "waiting for 3 nodes"},
			},
			CurrentStep: "ng/create", StartTime: &t0, NextWindowStart: &t1,
			BlockedBy:  &opsv1.BlockedBy{StepID: "ng/create", Reason: "PDB", Message: "eviction refused", Since: &t1, Node: "n1", Pod: &opsv1.NamespacedObjectReference{Namespace: "a", Name: "p"}},
			LeftBehind: []opsv1.LeftBehind{{Kind: "NodeGroup", Name: "ng", StepID: "ng/delete", Reason: "kept"}},
		},
	}
}

// TestTrimOperationChangesNoAnswer: the API's view of a cached operation
// (GET, the lists and the watch streams answer toOperation) is the same
// before and after TrimOperation, as is what the rules read.
func TestTrimOperationChangesNoAnswer(t *testing.T) {
	cases := map[string]func(*opsv1.ClusterUpgradeOperation){
		"running":            nil,
		"pending, no status": func(o *opsv1.ClusterUpgradeOperation) { o.Status = opsv1.ClusterUpgradeOperationStatus{} },
		"no Ready condition": func(o *opsv1.ClusterUpgradeOperation) { o.Status.Conditions = o.Status.Conditions[1:] },
		"succeeded": func(o *opsv1.ClusterUpgradeOperation) {
			o.Status.Phase, o.Status.CompletionTime, o.Status.BlockedBy = opsv1.UpgradePhaseSucceeded, o.Status.StartTime, nil
		},
	}
	for name, mod := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			before := operatorOperation()
			if mod != nil {
				mod(before)
			}
			trimmed := before.DeepCopy()
			TrimOperation(trimmed)
			answers := func(o *opsv1.ClusterUpgradeOperation) []byte {
				b, err := json.Marshal(map[string]any{
					"view": toOperation(o), "cluster": clusterKey(o), "terminal": o.Status.Phase.IsTerminal(),
					"started": o.Status.StartTime != nil, "deleting": o.DeletionTimestamp != nil,
				})
				g.Expect(err).NotTo(HaveOccurred())
				return b
			}
			g.Expect(string(answers(trimmed))).To(MatchJSON(answers(before)))
		})
	}
}

// TestTrimOperation: what TrimOperation drops, and that it is idempotent.
func TestTrimOperation(t *testing.T) {
	g := NewWithT(t)
	o := operatorOperation()
	want := operatorOperation()
	want.Status.Conditions = want.Status.Conditions[:1]
	want.Status.ObservedGeneration, want.Status.Progress, want.Status.ResolvedTargetVersion = 0, "", ""
	TrimOperation(o)
	g.Expect(o).To(Equal(want))
	TrimOperation(o)
	g.Expect(o).To(Equal(want))

	none := operatorOperation()
	none.Status.Conditions = none.Status.Conditions[1:]
	TrimOperation(none)
	g.Expect(none.Status.Conditions).To(BeNil())
}
