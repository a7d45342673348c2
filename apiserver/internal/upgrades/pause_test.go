package upgrades_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/tidbcloud/ops-server/apiserver/internal/upgrades"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// TestPauseRetriesAConflictWithTheOperator: the operator patches an
// operation's status all the time, so a pause written with the
// resourceVersion it read can conflict on the real API server. The server
// reads the operation again and pauses it; the client never sees the
// conflict, and the operator's write is kept.
func TestPauseRetriesAConflictWithTheOperator(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	op := &opsv1.ClusterUpgradeOperation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "op"},
		Spec:       opsv1.ClusterUpgradeOperationSpec{K8sClusterName: "c", Region: "r", CloudProvider: "mock", TargetVersion: "1.30"},
	}
	g.Expect(env.Client.Create(ctx, op)).To(Succeed())

	base, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	patches := 0
	writer := interceptor.NewClient(base, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			patches++
			if patches == 1 {
				// The operator writes status between the read and the write.
				cur := &opsv1.ClusterUpgradeOperation{}
				if err := c.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
					return err
				}
				running := cur.DeepCopy()
				running.Status.Phase = opsv1.UpgradePhaseRunning
				if err := c.Status().Patch(ctx, running, client.MergeFrom(cur)); err != nil {
					return err
				}
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	svc := &upgrades.Service{Reader: env.Client, Writer: writer, Namespace: ns}

	out, err := svc.Pause(ctx, "op")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Paused).To(BeTrue())
	g.Expect(patches).To(Equal(2), "the first write conflicted and was retried once")
	got := &opsv1.ClusterUpgradeOperation{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(op), got)).To(Succeed())
	g.Expect(got.Spec.Paused).To(BeTrue())
	g.Expect(got.Status.Phase).To(Equal(opsv1.UpgradePhaseRunning), "the operator's write is kept")

	// Pausing again writes nothing.
	out, err = svc.Pause(ctx, "op")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Paused).To(BeTrue())
	g.Expect(patches).To(Equal(2))
}

// TestCancelRetriesAConflictWithTheOperator: the same for a cancel (DELETE
// of a started operation): the operator's status write between the read
// and the cancel patch is not the caller's problem (it was a 409 that made
// e2e story 3 fail).
func TestCancelRetriesAConflictWithTheOperator(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	op := &opsv1.ClusterUpgradeOperation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "op"},
		Spec:       opsv1.ClusterUpgradeOperationSpec{K8sClusterName: "c", Region: "r", CloudProvider: "mock", TargetVersion: "1.30"},
	}
	g.Expect(env.Client.Create(ctx, op)).To(Succeed())
	started := op.DeepCopy()
	now := metav1.Now()
	started.Status.Phase, started.Status.StartTime = opsv1.UpgradePhaseRunning, &now
	g.Expect(env.Client.Status().Patch(ctx, started, client.MergeFrom(op))).To(Succeed())

	base, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	patches := 0
	writer := interceptor.NewClient(base, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			patches++
			if patches == 1 {
				cur := &opsv1.ClusterUpgradeOperation{}
				if err := c.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
					return err
				}
				moved := cur.DeepCopy()
				moved.Status.CurrentStep = "the operator wrote this"
				if err := c.Status().Patch(ctx, moved, client.MergeFrom(cur)); err != nil {
					return err
				}
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	// Reader is the API server itself: the service reads what the test wrote.
	svc := &upgrades.Service{Reader: base, Writer: writer, Namespace: ns}
	g.Eventually(func(g Gomega) {
		got := &opsv1.ClusterUpgradeOperation{}
		g.Expect(base.Get(ctx, client.ObjectKeyFromObject(op), got)).To(Succeed())
		g.Expect(got.Status.StartTime).NotTo(BeNil())
	}).Should(Succeed())

	out, err := svc.Delete(ctx, "op")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Result).To(Equal("Cancelling"))
	g.Expect(patches).To(Equal(2), "the first write conflicted and was retried once")
	got := &opsv1.ClusterUpgradeOperation{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(op), got)).To(Succeed())
	g.Expect(got.Spec.Cancel).To(BeTrue())
	g.Expect(got.Status.CurrentStep).To(Equal("the operator wrote this"), "the operator's write is kept")
}
