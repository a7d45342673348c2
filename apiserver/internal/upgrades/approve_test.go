package upgrades_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/upgrades"
	"github.com/tidbcloud/ops-server/apiserver/internal/upgrades/upgradestest"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// TestApprove: PUT .../approve adds the gate the operation waits at (or
// the one named) to spec.approved, as a GitOps user would; it is
// idempotent, refuses a gate the operation does not have and a finished
// operation, and changes nothing when it refuses. (403 without the verb
// approve: apiserver/test/authz.)
func TestApprove(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	a := newAPI(t)
	body := upgradestest.Mutate(func(m map[string]any) {
		m["k8sClusterName"], m["region"], m["cloudProvider"] = "dev-cluster", "local", "mock"
		m["approvals"] = []any{"BeforeNodeGroups", "BeforeDrain"}
		m["maintenanceWindow"] = upgradestest.ValidWindow()
	})
	code, out := a.do(http.MethodPost, upgrades.BasePath, body, nil)
	g.Expect(code).To(Equal(http.StatusAccepted), string(out))
	created := a.op(out)
	g.Expect(created.Spec.Approvals).To(Equal([]string{"BeforeNodeGroups", "BeforeDrain"}))
	g.Expect(created.MaintenanceWindow).NotTo(BeNil())
	g.Expect(created.MaintenanceWindow.Source).To(Equal("spec"))
	g.Expect(created.MaintenanceWindow.TimeZone).To(Equal("Europe/Berlin"))
	path := upgrades.BasePath + "/" + created.ID + "/approve"
	obj := &opsv1.ClusterUpgradeOperation{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: a.ns, Name: created.Name}, obj)).To(Succeed())
	g.Expect(obj.Spec.MaintenanceWindow.Days).To(Equal([]opsv1.Weekday{"Saturday", "Sunday"}))
	approved := func() []string {
		cur := &opsv1.ClusterUpgradeOperation{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), cur)).To(Succeed())
		return cur.Spec.Approved
	}

	// Waiting at no gate and none named.
	code, out = a.do(http.MethodPut, path, "", nil)
	g.Expect(code).To(Equal(http.StatusBadRequest), string(out))
	g.Expect(string(out)).To(ContainSubstring("NOT_AWAITING_APPROVAL"))
	// A gate the operation does not have; an unknown field.
	code, out = a.do(http.MethodPut, path, `{"gate":"BeforeEachNodeGroup/vmstorage"}`, nil)
	g.Expect(code).To(Equal(http.StatusBadRequest), string(out))
	g.Expect(violations(out)).To(ContainElement("gate"))
	g.Expect(string(out)).To(ContainSubstring("BeforeNodeGroups, BeforeDrain/vmstorage"))
	code, out = a.do(http.MethodPut, path, `{"gaet":"BeforeNodeGroups"}`, nil)
	g.Expect(code).To(Equal(http.StatusBadRequest), string(out))
	g.Expect(approved()).To(BeEmpty())

	// The operator stopped at BeforeNodeGroups.
	waiting := obj.DeepCopy()
	now := metav1.Now()
	waiting.Status.Phase = opsv1.UpgradePhaseAwaitingApproval
	waiting.Status.AwaitingApproval = &opsv1.AwaitingApproval{Gate: "BeforeNodeGroups", NextStep: "nodegroup/observability-ng/UpgradeNodeGroup", Done: []string{"controlplane", "addon/vpc-cni"}, Since: &now}
	g.Expect(env.Client.Status().Patch(ctx, waiting, client.MergeFrom(obj))).To(Succeed())
	code, out = a.do(http.MethodGet, upgrades.BasePath+"/"+created.ID, "", nil)
	g.Expect(code).To(Equal(http.StatusOK))
	got := a.op(out)
	g.Expect(got.Phase).To(Equal("AwaitingApproval"))
	g.Expect(got.AwaitingApproval.Gate).To(Equal("BeforeNodeGroups"))
	g.Expect(got.AwaitingApproval.Done).To(Equal([]string{"controlplane", "addon/vpc-cni"}))

	code, out = a.do(http.MethodPut, path, "", nil)
	g.Expect(code).To(Equal(http.StatusOK), string(out))
	g.Expect(a.op(out).Approved).To(Equal([]string{"BeforeNodeGroups"}))
	g.Expect(approved()).To(Equal([]string{"BeforeNodeGroups"}))
	// Again: 200, nothing written twice.
	code, out = a.do(http.MethodPut, path, `{"gate":"BeforeNodeGroups"}`, nil)
	g.Expect(code).To(Equal(http.StatusOK), string(out))
	g.Expect(approved()).To(Equal([]string{"BeforeNodeGroups"}))
	// Ahead of time, by name.
	code, out = a.do(http.MethodPut, path, `{"gate":"BeforeDrain/vmstorage"}`, nil)
	g.Expect(code).To(Equal(http.StatusOK), string(out))
	g.Expect(approved()).To(Equal([]string{"BeforeNodeGroups", "BeforeDrain/vmstorage"}))

	// Finished: 409, nothing changes.
	cur := &opsv1.ClusterUpgradeOperation{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), cur)).To(Succeed())
	done := cur.DeepCopy()
	done.Status.Phase = opsv1.UpgradePhaseSucceeded
	g.Expect(env.Client.Status().Patch(ctx, done, client.MergeFrom(cur))).To(Succeed())
	code, out = a.do(http.MethodPut, path, `{"gate":"BeforeDrain/observability-ng"}`, nil)
	g.Expect(code).To(Equal(http.StatusConflict), string(out))
	g.Expect(approved()).To(Equal([]string{"BeforeNodeGroups", "BeforeDrain/vmstorage"}))

	var e errorBody
	g.Expect(json.Unmarshal(out, &e)).To(Succeed())
	g.Expect(e.Error.Message).To(ContainSubstring("cannot be approved"))
}

// TestUnknownTimeZoneCreatesNothing: the rule the CRD cannot check is a
// 400 naming the field, with the operator's words.
func TestUnknownTimeZoneCreatesNothing(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t)
	body := upgradestest.Mutate(func(m map[string]any) {
		m["k8sClusterName"], m["region"], m["cloudProvider"] = "dev-cluster", "local", "mock"
		w := upgradestest.ValidWindow()
		w["timeZone"] = "Mars/Olympus_Mons"
		m["maintenanceWindow"] = w
	})
	for _, path := range []string{upgrades.BasePath, upgrades.BasePath + "/dry-run"} {
		code, out := a.do(http.MethodPost, path, body, nil)
		g.Expect(code).To(Equal(http.StatusBadRequest), string(out))
		g.Expect(violations(out)).To(ContainElement("maintenanceWindow.timeZone"))
		g.Expect(string(out)).To(ContainSubstring(opsv1.MaintenanceWindowTimeZoneRule))
	}
	g.Expect(a.count()).To(Equal(0))
}
