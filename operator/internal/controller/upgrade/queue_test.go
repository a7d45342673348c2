package upgrade_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

func inPlace(groups ...string) func(*opsv1.ClusterUpgradeOperationSpec) {
	return func(s *opsv1.ClusterUpgradeOperationSpec) {
		for _, g := range groups {
			s.NodeGroupUpgrades = append(s.NodeGroupUpgrades, opsv1.NodeGroupUpgrade{NodeGroupName: g, Strategy: opsv1.StrategyInPlace})
		}
	}
}

// TestSecondOperationWaits: a second operation of a cluster, applied while
// the first runs, waits in phase Pending with a condition naming the
// first, calls no cloud API, and runs once the first Succeeded.
func TestSecondOperationWaits(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	f := newCloud(t, "queue", 300*time.Millisecond, seed("qu-a", "qu-b"))
	startOperator(t, ns, f, nil)

	first := newOp(ns, "first", f, inPlace("qu-a"))
	g.Expect(env.Client.Create(ctx, first)).To(Succeed())
	waitPhase(t, first, opsv1.UpgradePhaseRunning, time.Minute)

	second := newOp(ns, "second", f, inPlace("qu-b"))
	g.Expect(env.Client.Create(ctx, second)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur := get(g, second)
		g.Expect(cur.Status.Phase).To(Equal(opsv1.UpgradePhasePending))
		c := apimeta.FindStatusCondition(cur.Status.Conditions, opsv1.ReadyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(opsv1.WaitingForOperationReason))
		g.Expect(c.Message).To(ContainSubstring("ClusterUpgradeOperation " + ns + "/first"))
		g.Expect(apimeta.FindStatusCondition(cur.Status.Conditions, opsv1.ReconcilingCondition).Reason).To(Equal(opsv1.WaitingForOperationReason))
	}, time.Minute, 50*time.Millisecond).Should(Succeed())
	g.Expect(get(g, second).Status.StartTime).To(BeNil())

	done := waitPhase(t, first, opsv1.UpgradePhaseSucceeded, time.Minute)
	after := waitPhase(t, second, opsv1.UpgradePhaseSucceeded, time.Minute)
	g.Expect(after.Status.StartTime.Before(done.Status.CompletionTime)).To(BeFalse(), "the second started after the first finished")
	g.Expect(mutationCounts(f)).To(Equal(map[string]int{
		"StartControlPlaneUpgrade cluster/queue": 1,
		"StartNodeGroupUpgrade nodegroup/qu-a":   1,
		"StartNodeGroupUpgrade nodegroup/qu-b":   1,
	}))
}

// TestSimultaneousOperationsRunOneAtATime: operations of one cluster
// applied together (one GitOps commit) run one after the other, oldest
// first; never do two have a step under way at once.
func TestSimultaneousOperationsRunOneAtATime(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.NewNamespace(t)
	f := newCloud(t, "together", 100*time.Millisecond, seed("to-a", "to-b", "to-c"))
	startOperator(t, ns, f, nil)

	var mu sync.Mutex
	overlaps := 0
	go func() {
		for ctx.Err() == nil {
			list := &opsv1.ClusterUpgradeOperationList{}
			if err := env.Client.List(ctx, list, client.InNamespace(ns)); err == nil {
				busy := 0
				for _, o := range list.Items {
					for _, st := range o.Status.Steps {
						if st.Phase == opsv1.StepPhaseRunning {
							busy++
							break
						}
					}
				}
				if busy > 1 {
					mu.Lock()
					overlaps++
					mu.Unlock()
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()

	ops := []*opsv1.ClusterUpgradeOperation{newOp(ns, "op-a", f, inPlace("to-a")), newOp(ns, "op-b", f, inPlace("to-b")), newOp(ns, "op-c", f, inPlace("to-c"))}
	for _, op := range ops {
		g.Expect(env.Client.Create(ctx, op)).To(Succeed())
	}
	for _, op := range ops {
		waitPhase(t, op, opsv1.UpgradePhaseSucceeded, 2*time.Minute)
	}
	cancel()
	mu.Lock()
	defer mu.Unlock()
	g.Expect(overlaps).To(BeZero(), "two operations of one cluster had a step running at once")
	for k, n := range mutationCounts(f) {
		g.Expect(n).To(Equal(1), k)
	}
}
