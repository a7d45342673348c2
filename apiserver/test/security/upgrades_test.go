package security

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

const upgradesPath = "/ops/api/v1/upgradeOperations"

// upgradeBody is a blue-green upgrade of dev-cluster's vmstorage node group
// with the given vmClusterHelmValues.
func upgradeBody(values string) string {
	return `{"k8sClusterName":"dev-cluster","region":"local","cloudProvider":"mock","targetVersion":"1.30",
	  "nodeGroupUpgrades":[{"nodeGroupName":"vmstorage","strategy":"blue-green","newNodeGroupName":"vmstorage-130",
	    "requiresVMStorageRollout":true,"vmClusterHelmValues":` + values + `}]}`
}

func (f *fixture) upgrades() []opsv1.ClusterUpgradeOperation {
	f.t.Helper()
	list := &opsv1.ClusterUpgradeOperationList{}
	NewWithT(f.t).Expect(f.kube.List(context.Background(), list, client.InNamespace(f.ns))).To(Succeed())
	return list.Items
}

func fieldViolations(body []byte) []string {
	var e struct {
		Error struct {
			Details []struct {
				FieldViolations []struct {
					Field string `json:"field"`
				} `json:"fieldViolations"`
			} `json:"details"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	var out []string
	for _, d := range e.Error.Details {
		for _, v := range d.FieldViolations {
			out = append(out, v.Field)
		}
	}
	return out
}

// TestUpgradeHelmValuesAllowlist (issue #18 item 2): vmClusterHelmValues
// reaching beyond the vmstorage placement and size is a 400 naming each
// key, creates nothing, and the same object applied with kubectl is refused
// by the CRD naming the key.
func TestUpgradeHelmValuesAllowlist(t *testing.T) {
	f := start(t, nil)
	const path = "nodeGroupUpgrades[0].vmClusterHelmValues"
	cases := map[string]struct {
		values string
		want   []string
	}{
		"service account":        {`{"vmstorage":{"serviceAccountName":"ops-operator"}}`, []string{path + ".vmstorage.serviceAccountName"}},
		"host network":           {`{"vmstorage":{"hostNetwork":true,"replicaCount":3}}`, []string{path + ".vmstorage.hostNetwork"}},
		"extra containers":       {`{"vmstorage":{"containers":[{"name":"x","image":"evil"}],"volumes":[{"name":"root","hostPath":{"path":"/"}}]}}`, []string{path + ".vmstorage.containers", path + ".vmstorage.volumes"}},
		"another component":      {`{"vminsert":{"serviceAccountName":"ops-operator"}}`, []string{path + ".vminsert"}},
		"injection in a scalar":  {`{"vmstorage":{"replicaCount":"1\nhostNetwork: true"}}`, []string{path + ".vmstorage.replicaCount"}},
		"vmstorage not a map":    {`{"vmstorage":"hostNetwork: true"}`, []string{path + ".vmstorage"}},
		"storage is not movable": {`{"vmstorage":{"storage":{"emptyDir":{}}}}`, []string{path + ".vmstorage.storage"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			code, body := f.do(http.MethodPost, upgradesPath, upgradeBody(tc.values))
			g.Expect(code).To(Equal(http.StatusBadRequest), string(body))
			g.Expect(fieldViolations(body)).To(ConsistOf(tc.want), string(body))
			g.Expect(f.upgrades()).To(BeEmpty())
		})
	}

	// GitOps parity: the same overlay applied as kubectl does (strict field
	// validation) is refused, naming the key; another component is refused
	// by the CRD's CEL rule whatever the client asks.
	g := NewWithT(t)
	var spec map[string]any
	g.Expect(json.Unmarshal([]byte(upgradeBody(`{"vmstorage":{"serviceAccountName":"ops-operator"}}`)), &spec)).To(Succeed())
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(opsv1.GroupVersion.WithKind(opsv1.ClusterUpgradeOperationKind))
	u.SetNamespace(f.ns)
	u.SetName("gitops-overlay")
	err := f.kube.Create(context.Background(), u, client.FieldValidation("Strict"))
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("vmClusterHelmValues.vmstorage.serviceAccountName"))
	g.Expect(json.Unmarshal([]byte(upgradeBody(`{"vminsert":{"replicaCount":1}}`)), &spec)).To(Succeed())
	u = &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(opsv1.GroupVersion.WithKind(opsv1.ClusterUpgradeOperationKind))
	u.SetNamespace(f.ns)
	u.SetName("gitops-overlay-2")
	err = f.kube.Create(context.Background(), u)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("may only set vmstorage"))
	g.Expect(f.upgrades()).To(BeEmpty())

	// The allowlist itself is accepted.
	code, body := f.do(http.MethodPost, upgradesPath, upgradeBody(`{"vmstorage":{"nodeSelector":{"mock.ops.observability.tidbcloud.com/nodegroup":"vmstorage-130"},"replicaCount":3}}`))
	g.Expect(code).To(Equal(http.StatusAccepted), string(body))
}

// TestOneActiveUpgradePerCluster (issue #18 item 5): two simultaneous
// POSTs for one cluster give exactly one 202 and one 409 naming the
// created operation; once it is terminal a new POST is accepted.
func TestOneActiveUpgradePerCluster(t *testing.T) {
	g := NewWithT(t)
	f := start(t, nil)
	const req = `{"k8sClusterName":"dev-cluster","region":"local","cloudProvider":"mock","targetVersion":"1.30"}`
	codes := make([]int, 2)
	bodies := make([][]byte, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], bodies[i] = f.do(http.MethodPost, upgradesPath, req)
		}()
	}
	wg.Wait()
	g.Expect(codes).To(ConsistOf(http.StatusAccepted, http.StatusConflict), "%s | %s", bodies[0], bodies[1])
	won, lost := 0, 1
	if codes[1] == http.StatusAccepted {
		won, lost = 1, 0
	}
	var op struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	g.Expect(json.Unmarshal(bodies[won], &op)).To(Succeed())
	g.Expect(string(bodies[lost])).To(ContainSubstring(op.ID))
	g.Expect(string(bodies[lost])).To(ContainSubstring(`"status":"ABORTED"`))
	g.Expect(f.upgrades()).To(HaveLen(1))

	// Terminal: the cluster is free again.
	cur := &opsv1.ClusterUpgradeOperation{}
	g.Expect(f.kube.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: op.Name}, cur)).To(Succeed())
	cur.Status.Phase = opsv1.UpgradePhaseFailed
	g.Expect(f.kube.Status().Update(context.Background(), cur)).To(Succeed())
	code, body := f.do(http.MethodPost, upgradesPath, req)
	g.Expect(code).To(Equal(http.StatusAccepted), string(body))
	g.Expect(strings.Contains(string(body), op.ID)).To(BeFalse())
}

// TestUpgradeRolloutTargetStaysInNamespace (#19 item 2): a node-group
// upgrade names its rollout target by a vmcluster of this API; a
// HelmRelease of the same name in another namespace is not one, so the
// request is a 400 on nodeGroupUpgrades[0].vmCluster and creates nothing.
// The same target written into a CR is refused by the chart's admission
// policy (e2e/deploy TestUpgradeRolloutNamespacePolicy) or, without it, by
// ops-operator's preflight (InvalidSpec, TestRolloutTargetOutsideNamespaces).
func TestUpgradeRolloutTargetStaysInNamespace(t *testing.T) {
	g := NewWithT(t)
	f := start(t, nil)
	other := env.NewNamespace(t)
	theirs := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "theirs", Labels: vmclusters.Labels("theirs")},
		Spec: helmv2.HelmReleaseSpec{Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
			Chart: "vmcluster", SourceRef: helmv2.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "theirs"},
		}}},
	}
	g.Expect(f.kube.Create(context.Background(), theirs)).To(Succeed())
	body := strings.Replace(upgradeBody(`{}`), `"vmClusterHelmValues"`, `"vmCluster":"theirs","vmClusterHelmValues"`, 1)
	code, resp := f.do(http.MethodPost, upgradesPath, body)
	g.Expect(code).To(Equal(http.StatusBadRequest), string(resp))
	g.Expect(fieldViolations(resp)).To(ConsistOf("nodeGroupUpgrades[0].vmCluster"))
	g.Expect(f.upgrades()).To(BeEmpty())
	cur := &helmv2.HelmRelease{}
	g.Expect(f.kube.Get(context.Background(), client.ObjectKeyFromObject(theirs), cur)).To(Succeed())
	g.Expect(cur.Spec.PostRenderers).To(BeEmpty())
}
