package stories

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/e2e/stack"
	"github.com/tidbcloud/ops-server/e2e/suite"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
)

// stepNamed returns the step of an operation (REST view) with the id.
func stepNamed(g Gomega, op map[string]any, id string) map[string]any {
	for _, s := range op["steps"].([]any) {
		if m := s.(map[string]any); m["id"] == id {
			return m
		}
	}
	g.Expect(id).To(BeEmpty(), "no step %s in %v", id, op["steps"])
	return nil
}

// storyBackupGate: a blue-green upgrade of the node group running a
// vmcluster's vmstorage, with backupBeforeRollout. To a destination that
// fails, the upgrade fails at its backup step and no new node group is
// created; to one that works, the backup Succeeded — recorded in the
// operation's status — before the new node group's creation started.
func storyBackupGate(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ref := cloud.ClusterRef{Provider: cloud.Mock, Name: "gate-cluster", Region: "local"}
	p := &mock.Provider{Client: st.Env.Client}
	g.Expect(p.Seed(ctx, ref, mock.ClusterState{
		Version: "1.30",
		NodeGroups: map[string]*mock.NodeGroupState{"gate-old": {Size: 1, Version: "1.29", InstanceTypes: []string{"r5.xlarge"},
			Labels: map[string]string{"node-role.observability/gate": "true"}}},
	})).To(Succeed())
	code, body := suite.Call(t, http.MethodPost, suite.VMClusters, map[string]any{
		"name": "gatevm",
		"values": map[string]any{"vmstorage": map[string]any{"replicaCount": 1,
			"nodeSelector": map[string]any{"node-role.observability/gate": "true"}}},
	})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	t.Cleanup(func() { suite.Call(t, http.MethodDelete, suite.VMClusters+"/gatevm", nil) })
	suite.WaitVMCluster(t, "gatevm", "RUNNING", 3*time.Minute)
	g.Eventually(func(g Gomega) { stsReady(g, "vmstorage-gatevm", 1) }, 3*time.Minute, time.Second).Should(Succeed())

	request := func(url string) map[string]any {
		return map[string]any{
			"k8sClusterName": ref.Name, "region": ref.Region, "cloudProvider": "mock", "targetVersion": "1.30",
			"nodeGroupUpgrades": []any{map[string]any{
				"nodeGroupName": "gate-old", "strategy": "blue-green", "newNodeGroupName": "gate-new",
				"requiresVMStorageRollout": true, "vmCluster": "gatevm",
				"vmClusterHelmValues": map[string]any{"vmstorage": map[string]any{"nodeSelector": map[string]any{stack.NodeGroupLabel: "gate-new"}}},
				"backupBeforeRollout": map[string]any{"destination": map[string]any{"url": url}},
			}},
		}
	}
	gateID, createID := opsv1.NodeGroupStepID("gate-old", opsv1.ActionBackupVMStorage), opsv1.NodeGroupStepID("gate-old", opsv1.ActionCreateNodeGroup)

	// A destination the operator refuses (outside --backup-fs-roots): the
	// backup fails, and so does the upgrade, before the new node group.
	code, body = suite.Call(t, http.MethodPost, suite.Upgrades, request("fs:///not-a-backup-root/gate"))
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	failed := suite.WaitUpgrade(t, body["id"].(string), "Failed", 3*time.Minute)
	gate := stepNamed(g, failed, gateID)
	g.Expect(gate["phase"]).To(Equal("Failed"), "%v", gate)
	g.Expect(gate["message"]).To(ContainSubstring("nothing of node group gate-old was changed"))
	g.Expect(gate["backup"]).To(HavePrefix("observability/"))
	create := stepNamed(g, failed, createID)
	g.Expect(create["phase"]).NotTo(Equal("Succeeded"))
	g.Expect(create["operationId"]).To(BeNil(), "no node group creation started")
	state, err := p.State(ctx, ref)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(state.NodeGroups).NotTo(HaveKey("gate-new"))

	// The stack's backup root: the backup Succeeds first, then the node
	// group moves.
	code, body = suite.Call(t, http.MethodPost, suite.Upgrades, request("fs://"+st.BackupRoot()+"/gate"))
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	done := suite.WaitUpgrade(t, body["id"].(string), "Succeeded", 6*time.Minute)
	gate, create = stepNamed(g, done, gateID), stepNamed(g, done, createID)
	g.Expect(gate["phase"]).To(Equal("Succeeded"), "%v", gate)
	recorded := fmt.Sprint(gate["backup"])
	ns, name, _ := strings.Cut(recorded, "/")
	b := &opsv1.ClusterBackup{}
	g.Expect(st.Env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, b)).To(Succeed(), "the backup recorded in the operation's status: %s", recorded)
	g.Expect(b.Status.Phase).To(Equal(opsv1.BackupPhaseSucceeded))
	createStart, err := time.Parse(time.RFC3339, fmt.Sprint(create["startTime"]))
	g.Expect(err).NotTo(HaveOccurred(), "%v", create)
	g.Expect(b.Status.CompletionTime.Time.After(createStart)).To(BeFalse(), "the backup completed (%s) before the new node group's creation started (%s)", b.Status.CompletionTime, createStart)
	gateDone, err := time.Parse(time.RFC3339, fmt.Sprint(gate["completionTime"]))
	g.Expect(err).NotTo(HaveOccurred(), "%v", gate)
	g.Expect(gateDone.After(createStart)).To(BeFalse())
	state, err = p.State(ctx, ref)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(state.NodeGroups).To(HaveKey("gate-new"))
	g.Expect(state.NodeGroups).NotTo(HaveKey("gate-old"))
}
