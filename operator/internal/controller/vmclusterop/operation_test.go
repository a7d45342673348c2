package vmclusterop_test

import (
	"context"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

func scaleOp(ns, name string, storage int32, mut func(*opsv1.VMClusterOperation)) *opsv1.VMClusterOperation {
	op := &opsv1.VMClusterOperation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: opsv1.VMClusterOperationSpec{VMCluster: opsv1.VMClusterReference{Name: vmcName}, Type: opsv1.OperationHorizontalScaling,
			HorizontalScaling: &opsv1.HorizontalScaling{VMStorage: ptr.To(storage)}},
	}
	if mut != nil {
		mut(op)
	}
	return op
}

// A scale-up is planned before anything changes, then carried out one
// vmstorage replica per step, in order, through the HelmRelease's values.
func TestScaleUpInOrder(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := newCluster(t, 3, 2)
	op := scaleOp(c.ns, "up", 5, func(o *opsv1.VMClusterOperation) { o.Spec.HorizontalScaling.VMInsert = ptr.To[int32](2) })
	// Paused from the start: the plan is written, no step starts.
	op.Spec.Paused = true
	g.Expect(env.Client.Create(ctx, op)).To(Succeed())
	startOperator(t, c.ns)
	g.Eventually(func(g Gomega) {
		got := getOp(g, c.ns, "up")
		g.Expect(got.Status.Phase).To(Equal(opsv1.OperationPhasePaused))
		g.Expect(got.Status.Progress).To(Equal("0/3"))
		ids := []string{}
		for _, s := range got.Status.Steps {
			ids = append(ids, s.ID+" "+s.From+">"+s.To+" "+string(s.Phase))
		}
		g.Expect(ids).To(Equal([]string{"01-vmstorage-Scale 3>4 Pending", "02-vmstorage-Scale 4>5 Pending", "03-vminsert-Scale 1>2 Pending"}))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	hr := &helmv2.HelmRelease{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: vmcName}, hr)).To(Succeed())
	g.Expect(string(hr.Spec.Values.Raw)).To(ContainSubstring(`"replicaCount":3`), "planning changed nothing")

	c.play(t)
	g.Expect(env.Client.Patch(ctx, op, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"paused":false}}`)))).To(Succeed())
	var got *opsv1.VMClusterOperation
	g.Eventually(func(g Gomega) {
		got = getOp(g, c.ns, "up")
		g.Expect(got.Status.Phase).To(Equal(opsv1.OperationPhaseSucceeded), "status: %+v", got.Status)
	}, 60*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(got.Status.Progress).To(Equal("3/3"))
	for i, s := range got.Status.Steps {
		g.Expect(s.Phase).To(Equal(opsv1.StepPhaseSucceeded))
		g.Expect(s.HelmReleaseGeneration).To(BeNumerically(">", 1))
		if i > 0 {
			prev := got.Status.Steps[i-1]
			g.Expect(s.StartTime.Time).NotTo(BeTemporally("<", prev.CompletionTime.Time), "step %s started before %s finished", s.ID, prev.ID)
		}
	}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: vmcName}, hr)).To(Succeed())
	g.Expect(string(hr.Spec.Values.Raw)).To(And(ContainSubstring(`"vmstorage":{"replicaCount":5}`), ContainSubstring(`"vminsert":{"replicaCount":2}`),
		ContainSubstring(`"replicationFactor":2`)))
}

// A vmstorage scale-down below replicationFactor, or one removing
// replicationFactor or more replicas at once, is refused by the preflight
// (the same words as the REST API's 400), unless acknowledged; a second
// operation of the same VMCluster waits for the first.
func TestReplicationRiskAndOneAtATime(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := newCluster(t, 4, 2)
	g.Expect(env.Client.Create(ctx, scaleOp(c.ns, "too-few", 1, nil))).To(Succeed())
	g.Expect(env.Client.Create(ctx, scaleOp(c.ns, "too-many-at-once", 2, nil))).To(Succeed())
	startOperator(t, c.ns)
	for name, target := range map[string]int32{"too-few": 1, "too-many-at-once": 2} {
		g.Eventually(func(g Gomega) {
			got := getOp(g, c.ns, name)
			g.Expect(got.Status.Phase).To(Equal(opsv1.OperationPhaseFailed))
			g.Expect(got.Status.Conditions).To(ContainElement(And(
				HaveField("Type", opsv1.ReadyCondition), HaveField("Reason", opsv1.InvalidSpecReason),
				HaveField("Message", "spec.horizontalScaling.vmstorage: "+opsv1.ReplicationRiskProblem(4, target, 2, false)))))
			g.Expect(got.Status.Steps).To(BeEmpty())
		}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	}
	g.Expect(opsv1.ReplicationRiskProblem(4, 2, 2, false)).To(ContainSubstring("removes 2 replicas in one operation"))

	first := scaleOp(c.ns, "first", 5, func(o *opsv1.VMClusterOperation) { o.Spec.Paused = true })
	g.Expect(env.Client.Create(ctx, first)).To(Succeed())
	g.Eventually(func(g Gomega) { g.Expect(getOp(g, c.ns, "first").Status.Phase).To(Equal(opsv1.OperationPhasePaused)) }, 30*time.Second).Should(Succeed())
	second := scaleOp(c.ns, "second", 2, func(o *opsv1.VMClusterOperation) { o.Spec.AcknowledgeReplicationRisk = true })
	g.Expect(env.Client.Create(ctx, second)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := getOp(g, c.ns, "second")
		g.Expect(got.Status.Phase).To(Equal(opsv1.OperationPhasePending))
		g.Expect(got.Status.WaitingFor).To(ContainSubstring("VMClusterOperation " + c.ns + "/first"))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())

	// Cancelling the paused first one ends it (nothing was done), and the
	// second goes.
	c.play(t)
	g.Expect(env.Client.Patch(ctx, first, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"cancel":true}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := getOp(g, c.ns, "first")
		g.Expect(got.Status.Phase).To(Equal(opsv1.OperationPhaseCancelled))
		g.Expect(got.Status.Steps).To(HaveEach(HaveField("Phase", opsv1.StepPhaseSkipped)))
		g.Expect(got.Status.Conditions).To(ContainElement(HaveField("Message", "Cancelled on request; done: none")))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		got := getOp(g, c.ns, "second")
		g.Expect(got.Status.Phase).To(Equal(opsv1.OperationPhaseSucceeded), "status: %+v", got.Status)
		g.Expect(got.Status.Steps).To(HaveLen(2), "4 > 3 > 2, acknowledged")
	}, 60*time.Second, 100*time.Millisecond).Should(Succeed())
}

// A rolling restart evicts each Pod exactly once, one at a time: the next
// Pod only after the replacement of the previous one is Ready.
func TestRestartEvictsEachPodOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := newCluster(t, 2, 1)
	c.play(t)
	op := &opsv1.VMClusterOperation{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: "restart"},
		Spec: opsv1.VMClusterOperationSpec{VMCluster: opsv1.VMClusterReference{Name: vmcName}, Type: opsv1.OperationRestart,
			Restart: &opsv1.Restart{Components: []opsv1.VMClusterComponent{opsv1.ComponentVMStorage}}},
	}
	g.Expect(env.Client.Create(ctx, op)).To(Succeed())
	startOperator(t, c.ns)
	// Play the StatefulSet controller: a Pod evicted (gone) is re-created
	// under its name, with a new UID, Ready.
	recreated := map[string]int{}
	g.Eventually(func(g Gomega) {
		for _, name := range []string{"vmstorage-vmc-0", "vmstorage-vmc-1"} {
			p := &corev1.Pod{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: name}, p); err != nil {
				c.createPod(t, name)
				recreated[name]++
			}
		}
		got := getOp(g, c.ns, "restart")
		g.Expect(got.Status.Phase).To(Equal(opsv1.OperationPhaseSucceeded), "status: %+v", got.Status)
	}, 60*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(recreated).To(Equal(map[string]int{"vmstorage-vmc-0": 1, "vmstorage-vmc-1": 1}))
	got := getOp(g, c.ns, "restart")
	g.Expect(got.Status.Steps).To(HaveLen(2))
	s0, s1 := got.Status.Steps[0], got.Status.Steps[1]
	g.Expect(s0.Pod).To(Equal("vmstorage-vmc-0"))
	g.Expect(s1.StartTime.Time).NotTo(BeTemporally("<", s0.CompletionTime.Time))
	for _, s := range got.Status.Steps {
		g.Expect(s.PodUID).NotTo(BeEmpty())
		g.Expect(s.To).NotTo(Equal(s.PodUID))
		g.Expect(strings.Contains(s.Message, "restarted")).To(BeTrue(), s.Message)
	}
}

// Applied with kubectl where the chart's admission policy is not
// installed, an operation on a VMCluster of another namespace is failed by
// the preflight with the policy's words, before anything changes.
func TestPreflightRefusesAnotherNamespace(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := newCluster(t, 1, 1)
	other := env.NewNamespace(t)
	op := scaleOp(other, "elsewhere", 2, func(o *opsv1.VMClusterOperation) { o.Spec.VMCluster.Namespace = c.ns })
	g.Expect(env.Client.Create(ctx, op)).To(Succeed())
	startOperator(t, other)
	g.Eventually(func(g Gomega) {
		got := getOp(g, other, "elsewhere")
		g.Expect(got.Status.Phase).To(Equal(opsv1.OperationPhaseFailed))
		g.Expect(got.Status.Conditions).To(ContainElement(And(HaveField("Reason", opsv1.InvalidSpecReason),
			HaveField("Message", "spec.vmCluster.namespace "+c.ns+": a VMClusterOperation may only operate on a VMCluster in its own namespace "+other))))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}

// ops-operator stopped in the middle of an operation and started again
// finishes it with each step done once: the HelmRelease's values are
// written once per step (its generation moves once per step).
func TestOperatorRestartedMidway(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := newCluster(t, 2, 1)
	hr := &helmv2.HelmRelease{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: vmcName}, hr)).To(Succeed())
	gen0 := hr.Generation
	g.Expect(env.Client.Create(ctx, scaleOp(c.ns, "crash", 4, nil))).To(Succeed())
	stop := startOperator(t, c.ns)
	// Stopped as soon as the first step wrote the values, before Flux
	// (play, not running yet) made the HelmRelease Ready.
	g.Eventually(func(g Gomega) {
		st := getOp(g, c.ns, "crash").Status
		g.Expect(st.Steps).NotTo(BeEmpty())
		g.Expect(st.Steps[0].HelmReleaseGeneration).NotTo(BeZero())
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
	stop()
	c.play(t)
	startOperator(t, c.ns)
	g.Eventually(func(g Gomega) {
		g.Expect(getOp(g, c.ns, "crash").Status.Phase).To(Equal(opsv1.OperationPhaseSucceeded))
	}, 60*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: vmcName}, hr)).To(Succeed())
	g.Expect(hr.Generation).To(Equal(gen0+2), "one values write per step")
	got := getOp(g, c.ns, "crash")
	g.Expect(got.Status.Steps[0].HelmReleaseGeneration).To(Equal(gen0 + 1))
	g.Expect(got.Status.Steps[1].HelmReleaseGeneration).To(Equal(gen0 + 2))
}
