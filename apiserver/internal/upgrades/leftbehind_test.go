package upgrades_test

import (
	"encoding/json"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidbcloud/ops-server/apiserver/internal/upgrades"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// TestViewCarriesLeftBehind: what the operator records in
// status.leftBehind of a cancelled operation is in the REST view, on GET
// and in the list.
func TestViewCarriesLeftBehind(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t)
	code, body := a.do(http.MethodPost, upgrades.BasePath, `{"k8sClusterName":"c","region":"r","cloudProvider":"mock","targetVersion":"1.30"}`, nil)
	g.Expect(code).To(Equal(http.StatusAccepted), string(body))
	op := a.op(body)
	g.Expect(op.LeftBehind).To(BeEmpty())

	now := metav1.Now()
	left := []opsv1.LeftBehind{
		{Kind: opsv1.LeftBehindControlPlane, Name: "c", StepID: opsv1.ControlPlaneStepID, Reason: "upgraded to 1.30; a control plane cannot be downgraded"},
		{Kind: opsv1.LeftBehindNodeGroup, Name: "vmstorage-130", StepID: "nodegroup/vmstorage/CreateNodeGroup", Reason: "created at 1.30; the old node group vmstorage still runs the workloads; both node groups are billed"},
		{Kind: opsv1.LeftBehindVMCluster, Namespace: "observability", Name: "vmcluster", StepID: "nodegroup/vmstorage/RolloutVMStorage", Reason: "patched with vmClusterHelmValues"},
	}
	setStatus(g, a.ns, op.Name, func(s *opsv1.ClusterUpgradeOperationStatus) {
		s.Phase, s.StartTime, s.CompletionTime = opsv1.UpgradePhaseCancelled, &now, &now
		s.LeftBehind = left
	})
	want := []upgrades.LeftBehind{
		{Kind: "ControlPlane", Name: "c", StepID: "controlplane", Reason: left[0].Reason},
		{Kind: "NodeGroup", Name: "vmstorage-130", StepID: "nodegroup/vmstorage/CreateNodeGroup", Reason: left[1].Reason},
		{Kind: "VMCluster", Namespace: "observability", Name: "vmcluster", StepID: "nodegroup/vmstorage/RolloutVMStorage", Reason: left[2].Reason},
	}
	g.Eventually(func(g Gomega) {
		code, body := a.do(http.MethodGet, upgrades.BasePath+"/"+op.ID, "", nil)
		g.Expect(code).To(Equal(http.StatusOK), string(body))
		got := a.op(body)
		g.Expect(got.Phase).To(Equal("Cancelled"))
		g.Expect(got.LeftBehind).To(Equal(want))
		// The JSON names of the OpenAPI document.
		var raw map[string]any
		g.Expect(json.Unmarshal(body, &raw)).To(Succeed())
		g.Expect(raw["leftBehind"]).To(ContainElement(HaveKeyWithValue("stepId", "controlplane")))
	}).Should(Succeed())

	code, body = a.do(http.MethodGet, upgrades.BasePath, "", nil)
	g.Expect(code).To(Equal(http.StatusOK), string(body))
	var list upgrades.ListResponse
	g.Expect(json.Unmarshal(body, &list)).To(Succeed())
	g.Expect(list.UpgradeOperations).To(HaveLen(1))
	g.Expect(list.UpgradeOperations[0].LeftBehind).To(Equal(want))
}
