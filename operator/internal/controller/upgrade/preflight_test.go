package upgrade_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

func preflightCheck(rep *opsv1.PreflightReport, name string) opsv1.PreflightCheck {
	for _, c := range rep.Checks {
		if c.Name == name {
			return c
		}
	}
	return opsv1.PreflightCheck{}
}

// TestPreflightFailStopsBeforeAnyCloudChange: a PodDisruptionBudget with
// maxUnavailable 0 over a Pod on the node group being replaced fails the
// preflight (package preflight, the checks POST …/preflight answers
// with): the operation ends Failed naming the budget and the Pod, the
// report is in status.preflight, and the cloud saw no mutating call.
func TestPreflightFailStopsBeforeAnyCloudChange(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	f := newCloud(t, "pfail", 0, seed("pfail-old"))
	workload(t, ns, "pfail-old", 1, map[string]string{"app": "vmstorage"})
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vmstorage"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptrIntStr(intstr.FromInt32(0)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "vmstorage"}}},
	}
	g.Expect(env.Client.Create(ctx, pdb)).To(Succeed())
	startOperator(t, ns, f, nil)

	op := newOp(ns, "pfail", f, func(s *opsv1.ClusterUpgradeOperationSpec) {
		s.NodeGroupUpgrades = []opsv1.NodeGroupUpgrade{{NodeGroupName: "pfail-old", Strategy: opsv1.StrategyBlueGreen, NewNodeGroupName: "pfail-new"}}
	})
	g.Expect(env.Client.Create(ctx, op)).To(Succeed())
	done := waitPhase(t, op, opsv1.UpgradePhaseFailed, time.Minute)
	msg := apimeta.FindStatusCondition(done.Status.Conditions, opsv1.ReadyCondition).Message
	g.Expect(msg).To(HavePrefix("Preflight: PodDisruptionBudget " + ns + "/vmstorage (maxUnavailable 0"))
	g.Expect(msg).To(ContainSubstring(ns + "/pfail-old-pod-0 on node "))
	g.Expect(f.log.Mutations()).To(BeEmpty(), "a failed preflight changes nothing in the cloud")
	g.Expect(done.Status.StartTime).To(BeNil())

	rep := done.Status.Preflight
	g.Expect(rep).NotTo(BeNil())
	g.Expect(rep.Result).To(Equal(opsv1.PreflightFail))
	g.Expect(rep.TargetVersion).To(Equal("1.30"))
	g.Expect(preflightCheck(rep, opsv1.PreflightCheckDisruptionBudgets).Result).To(Equal(opsv1.PreflightFail))
	g.Expect(preflightCheck(rep, opsv1.PreflightCheckVersionSkew).Result).To(Equal(opsv1.PreflightPass))
	g.Expect(preflightCheck(rep, opsv1.PreflightCheckCapacity).Result).To(Equal(opsv1.PreflightWarn))
}

// TestPreflightWarningsAreRecorded: warnings do not stop an operation and
// stay in status.preflight.
func TestPreflightWarningsAreRecorded(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	f := newCloud(t, "pwarn", 0, seed("pwarn-a"))
	startOperator(t, ns, f, nil)
	op := newOp(ns, "pwarn", f, func(s *opsv1.ClusterUpgradeOperationSpec) {
		s.ClusterAddons = []opsv1.ClusterAddon{{Name: "coredns", Version: "v1.11.3"}}
		s.NodeGroupUpgrades = []opsv1.NodeGroupUpgrade{{NodeGroupName: "pwarn-a", Strategy: opsv1.StrategyInPlace}}
	})
	g.Expect(env.Client.Create(ctx, op)).To(Succeed())
	done := waitPhase(t, op, opsv1.UpgradePhaseSucceeded, time.Minute)
	rep := done.Status.Preflight
	g.Expect(rep).NotTo(BeNil())
	g.Expect(rep.Result).To(Equal(opsv1.PreflightWarn))
	compat := preflightCheck(rep, opsv1.PreflightCheckAddonCompatibility)
	g.Expect(compat.Result).To(Equal(opsv1.PreflightWarn))
	g.Expect(compat.Evidence).To(ConsistOf("not checked: mock does not expose which addon versions run on Kubernetes 1.30"))
}
