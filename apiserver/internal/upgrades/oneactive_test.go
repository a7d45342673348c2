package upgrades_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/idempotency"
	"github.com/tidbcloud/ops-server/apiserver/internal/upgrades"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

func clusterRequest(cluster string) string {
	return fmt.Sprintf(`{"k8sClusterName":%q,"region":"local","cloudProvider":"mock","targetVersion":"1.30"}`, cluster)
}

// TestOneActiveUpgradePerCluster: simultaneous POSTs for one cluster, sent
// to two replicas of ops-apiserver, create exactly one operation; the others
// answer 409 naming it. Once it is terminal a new POST is accepted.
func TestOneActiveUpgradePerCluster(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t)
	replicas := []*api{a, serveAPI(t, a.ns)}

	const n = 6
	type answer struct {
		code int
		body []byte
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			code, body := replicas[i%2].do(http.MethodPost, upgrades.BasePath, clusterRequest("race"), nil)
			answers[i] = answer{code, body}
		}()
	}
	close(start)
	wg.Wait()

	var created upgrades.Operation
	accepted := 0
	for _, ans := range answers {
		if ans.code == http.StatusAccepted {
			accepted++
			created = a.op(ans.body)
		}
	}
	g.Expect(accepted).To(Equal(1), "exactly one 202: %v", answers)
	for _, ans := range answers {
		if ans.code == http.StatusAccepted {
			continue
		}
		g.Expect(ans.code).To(Equal(http.StatusConflict), string(ans.body))
		g.Expect(string(ans.body)).To(ContainSubstring(`"status":"ABORTED"`))
		g.Expect(string(ans.body)).To(ContainSubstring(upgrades.ReasonUpgradeActive))
		g.Expect(string(ans.body)).To(ContainSubstring(created.ID), "the 409 names the active operation's id")
	}
	g.Expect(a.count()).To(Equal(1))

	// Another cluster (or region) is not affected.
	code, body := a.do(http.MethodPost, upgrades.BasePath, clusterRequest("other"), nil)
	g.Expect(code).To(Equal(http.StatusAccepted), string(body))

	// Still active while Running or Paused; free once terminal.
	for _, phase := range []opsv1.UpgradePhase{opsv1.UpgradePhaseRunning, opsv1.UpgradePhasePaused} {
		setStatus(g, a.ns, created.Name, func(st *opsv1.ClusterUpgradeOperationStatus) { st.Phase = phase })
		code, body = a.do(http.MethodPost, upgrades.BasePath, clusterRequest("race"), nil)
		g.Expect(code).To(Equal(http.StatusConflict), "phase %s: %s", phase, body)
		g.Expect(string(body)).To(ContainSubstring(created.ID))
	}
	setStatus(g, a.ns, created.Name, func(st *opsv1.ClusterUpgradeOperationStatus) { st.Phase = opsv1.UpgradePhaseSucceeded })
	code, body = replicas[1].do(http.MethodPost, upgrades.BasePath, clusterRequest("race"), nil)
	g.Expect(code).To(Equal(http.StatusAccepted), string(body))
	g.Expect(a.op(body).ID).NotTo(Equal(created.ID))
}

// TestIdempotentReplayOfTheActiveOperation: the retry of the request that
// created the active operation still answers 200 with it; any other
// request for the cluster is a 409 naming it.
func TestIdempotentReplayOfTheActiveOperation(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t)
	hdr := map[string]string{idempotency.Header: "replay-1"}
	code, body := a.do(http.MethodPost, upgrades.BasePath, clusterRequest("replayed"), hdr)
	g.Expect(code).To(Equal(http.StatusAccepted), string(body))
	first := a.op(body)

	code, body = a.do(http.MethodPost, upgrades.BasePath, clusterRequest("replayed"), hdr)
	g.Expect(code).To(Equal(http.StatusOK), string(body))
	g.Expect(a.op(body).ID).To(Equal(first.ID))

	code, body = a.do(http.MethodPost, upgrades.BasePath, clusterRequest("replayed"), map[string]string{idempotency.Header: "replay-2"})
	g.Expect(code).To(Equal(http.StatusConflict), string(body))
	g.Expect(string(body)).To(ContainSubstring(first.ID))
	g.Expect(a.count()).To(Equal(1))
}

// TestActiveOperationCreatedWithKubectl: an operation applied with kubectl
// (which takes no lock) also makes a POST for its cluster a 409.
func TestActiveOperationCreatedWithKubectl(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t)
	op := &opsv1.ClusterUpgradeOperation{
		ObjectMeta: metav1.ObjectMeta{Namespace: a.ns, Name: "gitops-upgrade"},
		Spec:       opsv1.ClusterUpgradeOperationSpec{K8sClusterName: "gitops", Region: "local", CloudProvider: opsv1.CloudProviderMock, TargetVersion: "1.30"},
	}
	g.Expect(env.Client.Create(context.Background(), op)).To(Succeed())
	code, body := a.do(http.MethodPost, upgrades.BasePath, clusterRequest("gitops"), nil)
	g.Expect(code).To(Equal(http.StatusConflict), string(body))
	g.Expect(string(body)).To(ContainSubstring(string(op.UID)))
	g.Expect(a.count()).To(Equal(1))

	// The refused request left the lock free: once the operation is
	// terminal, the next POST is accepted.
	setStatus(g, a.ns, op.Name, func(st *opsv1.ClusterUpgradeOperationStatus) { st.Phase = opsv1.UpgradePhaseCancelled })
	code, body = a.do(http.MethodPost, upgrades.BasePath, clusterRequest("gitops"), nil)
	g.Expect(code).To(Equal(http.StatusAccepted), string(body))

	leases := &coordinationv1.LeaseList{}
	g.Expect(env.Client.List(context.Background(), leases, client.InNamespace(a.ns))).To(Succeed())
	g.Expect(leases.Items).To(HaveLen(1))
	g.Expect(leases.Items[0].Name).To(HavePrefix("upgrade-lock-"))
	g.Expect(*leases.Items[0].Spec.HolderIdentity).To(HavePrefix("upgrade-"))
	g.Expect(leases.Items[0].Spec.RenewTime).NotTo(BeNil(), "the claim was confirmed")
	g.Expect(strings.Count(leases.Items[0].Annotations["ops.observability.tidbcloud.com/cluster"], "/")).To(Equal(2))
}

// staleReader answers lists with the operations of a moment ago, as an
// informer cache that has not caught up does.
type staleReader struct {
	client.Reader
	items []opsv1.ClusterUpgradeOperation
}

func (r staleReader) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	list.(*opsv1.ClusterUpgradeOperationList).Items = r.items
	return nil
}

// TestActiveOperationReadFromACache: the lock finds the operations of the
// cluster through Reader (ops-apiserver's informer cache) and reads each
// active one again from the API server: one the cache still shows
// running, though it has finished or is gone, refuses nothing.
func TestActiveOperationReadFromACache(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	ops := make([]opsv1.ClusterUpgradeOperation, 2)
	for i, name := range []string{"a-finished", "b-deleted"} {
		op := &opsv1.ClusterUpgradeOperation{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       opsv1.ClusterUpgradeOperationSpec{K8sClusterName: "cached", Region: "local", CloudProvider: opsv1.CloudProviderMock, TargetVersion: "1.30"},
		}
		g.Expect(env.Client.Create(ctx, op)).To(Succeed())
		ops[i] = *op
	}
	stale := &staleReader{Reader: env.Client, items: ops}
	a := serveAPI(t, ns, func(s *upgrades.Service) { s.Reader = stale })

	// As the cache shows them: both active, the older one is named.
	code, body := a.do(http.MethodPost, upgrades.BasePath, clusterRequest("cached"), nil)
	g.Expect(code).To(Equal(http.StatusConflict), string(body))
	g.Expect(string(body)).To(ContainSubstring(string(ops[0].UID)))

	// The API server has moved on; the cache has not.
	setStatus(g, ns, "a-finished", func(st *opsv1.ClusterUpgradeOperationStatus) { st.Phase = opsv1.UpgradePhaseSucceeded })
	g.Expect(env.Client.Delete(ctx, &ops[1])).To(Succeed())
	code, body = a.do(http.MethodPost, upgrades.BasePath, clusterRequest("cached"), nil)
	g.Expect(code).To(Equal(http.StatusAccepted), string(body))
}
