package authz

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// TestUpgradeOperationLookups checks the informer-cache indexes behind the
// upgrade operation reads of the assembled server (the same app as every
// route test here): a get by id finds the operation, a list filtered by
// k8sClusterName returns that cluster's operations and no other.
func TestUpgradeOperationLookups(t *testing.T) {
	f := start(t)
	g := NewWithT(t)
	ctx := context.Background()

	ids := map[string]bool{}
	for range 3 {
		ids[f.upgrade(false)] = true
	}
	// An operation of another cluster, written directly (GitOps): the
	// mock cloud of this fixture knows only dev-cluster.
	other := &opsv1.ClusterUpgradeOperation{
		ObjectMeta: metav1.ObjectMeta{Name: "other-cluster-upgrade", Namespace: f.ns},
		Spec: opsv1.ClusterUpgradeOperationSpec{
			K8sClusterName: "other-cluster", Region: "local", CloudProvider: "mock", TargetVersion: "1.30",
			NodeGroupUpgrades: []opsv1.NodeGroupUpgrade{{NodeGroupName: "observability-ng", Strategy: opsv1.StrategyInPlace}},
		},
	}
	g.Expect(f.kube.Create(ctx, other)).To(Succeed())

	type list struct {
		UpgradeOperations []struct {
			ID   string `json:"id"`
			Spec struct {
				K8sClusterName string `json:"k8sClusterName"`
			} `json:"spec"`
		} `json:"upgradeOperations"`
	}
	listed := func(cluster string) map[string]bool {
		var l list
		g.Expect(json.Unmarshal(f.admin(http.MethodGet, "/ops/api/v1/upgradeOperations?k8sClusterName="+cluster, ""), &l)).To(Succeed())
		out := map[string]bool{}
		for _, o := range l.UpgradeOperations {
			g.Expect(o.Spec.K8sClusterName).To(Equal(cluster))
			out[o.ID] = true
		}
		return out
	}
	g.Eventually(func() map[string]bool { return listed("dev-cluster") }, 10*time.Second, 50*time.Millisecond).Should(Equal(ids))
	g.Eventually(func() map[string]bool { return listed("other-cluster") }, 10*time.Second, 50*time.Millisecond).Should(Equal(map[string]bool{string(other.UID): true}))
	g.Expect(listed("no-such-cluster")).To(BeEmpty())

	for id := range ids {
		var op struct {
			ID string `json:"id"`
		}
		g.Expect(json.Unmarshal(f.admin(http.MethodGet, "/ops/api/v1/upgradeOperations/"+id, ""), &op)).To(Succeed())
		g.Expect(op.ID).To(Equal(id))
	}
	// By name too, and an unknown id is a 404.
	var byName struct {
		ID string `json:"id"`
	}
	g.Expect(json.Unmarshal(f.admin(http.MethodGet, "/ops/api/v1/upgradeOperations/"+other.Name, ""), &byName)).To(Succeed())
	g.Expect(byName.ID).To(Equal(string(other.UID)))
	code, _ := f.do(http.MethodGet, "/ops/api/v1/upgradeOperations/00000000-0000-0000-0000-000000000000", "", adminToken)
	g.Expect(code).To(Equal(http.StatusNotFound))
}
