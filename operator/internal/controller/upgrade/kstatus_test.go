package upgrade

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/skeleton/kstatustest"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// kstatusOf is the kstatus of an operation as the API server would serve it.
func kstatusOf(g Gomega, op *opsv1.ClusterUpgradeOperation) status.Status {
	st, msg, err := kstatustest.Compute(op, opsv1.GroupVersion.WithKind("ClusterUpgradeOperation"))
	g.Expect(err).NotTo(HaveOccurred(), msg)
	return st
}

// TestConditionsAreKstatusCompatible: the conditions summarize derives in
// each phase read, through cli-utils' kstatus, as InProgress while work
// runs or waits (also while a transient error is retried), Current once
// Succeeded and Failed once Failed. The envtest tests check the same on
// objects read back from the API server (TestInPlaceOnly, TestCloudFaults).
func TestConditionsAreKstatusCompatible(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   func(t *testing.T) *opsv1.ClusterUpgradeOperation
		want status.Status
	}{
		{"pending", func(*testing.T) *opsv1.ClusterUpgradeOperation {
			op, _ := policyOp(opsv1.ActionUpgradeControlPlane, false)
			op.Status.StartTime, op.Status.Phase = nil, opsv1.UpgradePhasePending
			return op
		}, status.InProgressStatus},
		{"scheduled", func(*testing.T) *opsv1.ClusterUpgradeOperation {
			op, _ := policyOp(opsv1.ActionUpgradeControlPlane, false)
			op.Status.StartTime, op.Status.Phase = nil, opsv1.UpgradePhaseScheduled
			op.Spec.Schedule = &metav1.Time{Time: t0.Add(3600e9)}
			return op
		}, status.InProgressStatus},
		{"running, waiting on a cloud operation", func(*testing.T) *opsv1.ClusterUpgradeOperation {
			op, _ := policyOp(opsv1.ActionCreateNodeGroup, true)
			return op
		}, status.InProgressStatus},
		{"running, a Kubernetes API error retried", func(t *testing.T) *opsv1.ClusterUpgradeOperation {
			op, _ := policyOp(opsv1.ActionDrainNodes, false)
			r := policyReconciler(t, &policyProvider{}, apierrors.NewServiceUnavailable("etcd is down"))
			_, _, _, err := r.act(context.Background(), op)
			NewWithT(t).Expect(err).To(HaveOccurred())
			return op
		}, status.InProgressStatus},
		{"succeeded", func(*testing.T) *opsv1.ClusterUpgradeOperation {
			op, _ := policyOp(opsv1.StepAction("none"), false)
			op.Status.Phase = opsv1.UpgradePhaseSucceeded
			return op
		}, status.CurrentStatus},
		{"failed on a permanent cloud error", func(t *testing.T) *opsv1.ClusterUpgradeOperation {
			op, _ := policyOp(opsv1.ActionUpgradeNodeGroup, false)
			r := policyReconciler(t, &policyProvider{err: cloud.Errorf(cloud.Permanent, cloud.Mock, "Op", "no")}, nil)
			_, _, _, err := r.act(context.Background(), op)
			NewWithT(t).Expect(err).NotTo(HaveOccurred())
			return op
		}, status.FailedStatus},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			op := tc.op(t)
			(&Reconciler{Now: func() time.Time { return t0 }}).summarize(&scope{op: op})
			g.Expect(kstatusOf(g, op)).To(Equal(tc.want), "%+v", op.Status.Conditions)
		})
	}
}
