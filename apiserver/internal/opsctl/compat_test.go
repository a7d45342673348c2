package opsctl

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidbcloud/ops-server/apiserver/internal/upgrades"
	"github.com/tidbcloud/ops-server/apiserver/pkg/client"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// The operation ops-apiserver renders decodes into the generated client's
// type with every field `upgrades watch` reads: the watch does not break on
// a field the server fills and the document describes differently.
func TestServerOperationDecodesIntoTheClientType(t *testing.T) {
	g := NewWithT(t)
	ts := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	mt := metav1.NewTime(ts)
	op := upgrades.Operation{
		ID: "uid", Name: "upgrade-x", Namespace: "observability", Phase: "Failed", Message: "step failed",
		CurrentStep: "nodegroup/ng/Upgrade", InitiatedBy: "alice", Paused: true, CancelRequest: true,
		CreateTime: &ts, StartTime: &ts, CompletionTime: &ts, NextWindowStart: &ts,
		Spec: upgrades.Request{
			K8sClusterName: "c", Region: "r", CloudProvider: "mock", TargetVersion: "1.30", Schedule: ts.Format(time.RFC3339),
			ClusterAddons: []upgrades.Addon{{Name: "vpc-cni", Version: "v1", ResolveConflicts: "PRESERVE"}},
			NodeGroupUpgrades: []upgrades.NodeGroupUpgrade{{
				NodeGroupName: "ng", Strategy: "blue-green", RequiresVMStorageRollout: true, NewNodeGroupName: "ng-2",
				VMClusterHelmValues: json.RawMessage(`{"vmstorage":{"nodeSelector":{"a":"b"}}}`), VMCluster: "vmc",
			}},
			Approvals: []string{"BeforeNodeGroups"},
		},
		Steps: []upgrades.Step{{
			ID: "nodegroup/ng/Upgrade", Type: "NodeGroup", Action: "UpgradeNodeGroup", Target: "ng", Phase: "Failed",
			OperationID: "op-1", Message: "refused", StartTime: &ts, CompletionTime: &ts,
		}},
		BlockedBy:        &upgrades.BlockedBy{StepID: "s", Reason: "PodDisruptionBudget", Message: "m", Node: "n", Pod: "p", PodDisruptionBudget: "pdb", Since: &ts},
		LeftBehind:       []upgrades.LeftBehind{{Kind: "NodeGroup", Name: "ng-2", StepID: "s", Reason: "created"}},
		AwaitingApproval: &upgrades.AwaitingApproval{Gate: "BeforeNodeGroups", NextStep: "s", Done: []string{"a"}, Since: &ts},
		Approved:         []string{"BeforeNodeGroups"},
		Preflight: &opsv1.PreflightReport{Result: "fail", Time: &mt, TargetVersion: "1.30", Checks: []opsv1.PreflightCheck{
			{Name: "VersionSkew", Result: "fail"},
		}},
	}
	raw, err := json.Marshal(op)
	g.Expect(err).NotTo(HaveOccurred())
	var got client.UpgradeOperation
	g.Expect(json.Unmarshal(raw, &got)).To(Succeed(), string(raw))
	g.Expect(got.Phase).To(Equal(client.UpgradeOperationPhaseFailed))
	g.Expect(got.Steps).To(HaveLen(1))
	g.Expect(got.Steps[0].Id).To(Equal("nodegroup/ng/Upgrade"))
	g.Expect(got.Steps[0].Phase).To(Equal(client.UpgradeStepPhaseFailed))
	g.Expect(got.Steps[0].StartTime).To(BeTemporally("==", ts))
	g.Expect(got.BlockedBy.Reason).To(Equal("PodDisruptionBudget"))
	g.Expect(failure(&got)).To(Equal("step nodegroup/ng/Upgrade: refused"))
	g.Expect(blocker(&got)).To(Equal("PodDisruptionBudget: m"))
}
