package stories

import (
	"context"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/e2e/suite"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
)

// storyApprovalGate: an upgrade with the gate BeforeNodeGroups stops after
// the control plane in phase AwaitingApproval, saying what was done and
// what comes next; it stays there across an operator restart; a PUT
// .../approve lets it finish, and the approval is in the operation.
func storyApprovalGate(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ref := cloud.ClusterRef{Provider: cloud.Mock, Name: "approval-cluster", Region: "local"}
	g.Expect((&mock.Provider{Client: st.Env.Client}).Seed(ctx, ref, mock.ClusterState{
		Version:    "1.29",
		NodeGroups: map[string]*mock.NodeGroupState{"approval-ng": {Size: 1, InstanceTypes: []string{"m5.large"}}},
	})).To(Succeed())

	code, body := suite.Call(t, http.MethodPost, suite.Upgrades, map[string]any{
		"k8sClusterName": ref.Name, "region": "local", "cloudProvider": "mock", "targetVersion": "1.30",
		"approvals":         []any{"BeforeNodeGroups"},
		"nodeGroupUpgrades": []any{map[string]any{"nodeGroupName": "approval-ng", "strategy": "in-place"}},
	})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	id := body["id"].(string)

	waiting := suite.WaitUpgrade(t, id, "AwaitingApproval", 3*time.Minute)
	g.Expect(suite.Field(waiting, "awaitingApproval.gate")).To(Equal("BeforeNodeGroups"))
	g.Expect(suite.Field(waiting, "awaitingApproval.nextStep")).To(Equal("nodegroup/approval-ng/UpgradeNodeGroup"))
	g.Expect(suite.Field(waiting, "awaitingApproval.done")).To(Equal([]any{"controlplane"}))

	// The gate holds across an operator restart.
	st.StopOperator()
	g.Expect(st.StartOperator(ctx)).To(Succeed())
	g.Consistently(func(g Gomega) {
		_, body := suite.Call(t, http.MethodGet, suite.Upgrades+"/"+id, nil)
		g.Expect(body["phase"]).To(Equal("AwaitingApproval"))
		state, err := (&mock.Provider{Client: st.Env.Client}).State(ctx, ref)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(state.NodeGroups["approval-ng"].Version).To(Equal("1.29"))
	}, 3*time.Second, 500*time.Millisecond).Should(Succeed())

	code, body = suite.Call(t, http.MethodPut, suite.Upgrades+"/"+id+"/approve", nil)
	g.Expect(code).To(Equal(http.StatusOK), "%v", body)
	g.Expect(body["approved"]).To(Equal([]any{"BeforeNodeGroups"}))
	done := suite.WaitUpgrade(t, id, "Succeeded", 3*time.Minute)
	g.Expect(done["awaitingApproval"]).To(BeNil())
	state, err := (&mock.Provider{Client: st.Env.Client}).State(ctx, ref)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(state.NodeGroups["approval-ng"].Version).To(Equal("1.30"))
}
