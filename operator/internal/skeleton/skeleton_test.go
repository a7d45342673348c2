package skeleton_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/skeleton"
	"github.com/tidbcloud/ops-server/operator/internal/skeleton/kstatustest"
)

func TestResult(t *testing.T) {
	g := NewWithT(t)
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "x"}, "n", errors.New("modified"))
	res, err := skeleton.Result(reconcile.Result{}, errors.Join(errors.New("other"), conflict))
	g.Expect(err).NotTo(HaveOccurred(), "a conflict is not an error")
	g.Expect(res.RequeueAfter).To(Equal(skeleton.ConflictRequeue))
	res, err = skeleton.Result(reconcile.Result{RequeueAfter: time.Hour}, errors.New("boom"))
	g.Expect(err).To(MatchError("boom"))
	g.Expect(res).To(Equal(reconcile.Result{}))
	res, err = skeleton.Result(reconcile.Result{RequeueAfter: time.Minute}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(Equal(time.Minute))
}

// TestConditionsKstatus: the three marks read, through kstatus, as
// InProgress, Current and Failed, on either kind.
func TestConditionsKstatus(t *testing.T) {
	for _, tc := range []struct {
		name string
		mark func(*[]metav1.Condition, int64)
		gen  int64
		want status.Status
	}{
		{"running", func(c *[]metav1.Condition, g int64) { skeleton.MarkRunning(c, g, opsv1.ProgressingReason, "working") }, 0, status.InProgressStatus},
		{"running, generation handled before", func(c *[]metav1.Condition, g int64) { skeleton.MarkRunning(c, g, opsv1.ProgressingReason, "working") }, 1, status.InProgressStatus},
		{"succeeded", func(c *[]metav1.Condition, g int64) { skeleton.MarkSucceeded(c, g, opsv1.SucceededReason, "done") }, 1, status.CurrentStatus},
		{"failed", func(c *[]metav1.Condition, g int64) { skeleton.MarkFailed(c, g, opsv1.FailedReason, "no") }, 1, status.FailedStatus},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			op := &opsv1.ClusterUpgradeOperation{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n", Generation: 1}}
			op.Status.ObservedGeneration = tc.gen
			tc.mark(&op.Status.Conditions, 1)
			got, msg, err := kstatustest.Compute(op, opsv1.GroupVersion.WithKind("ClusterUpgradeOperation"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want), msg)

			b := &opsv1.ClusterBackup{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n", Generation: 1}}
			b.Status.ObservedGeneration = tc.gen
			tc.mark(&b.Status.Conditions, 1)
			got, msg, err = kstatustest.Compute(b, opsv1.GroupVersion.WithKind("ClusterBackup"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want), msg)
		})
	}
}

func TestFinish(t *testing.T) {
	g := NewWithT(t)
	rec := events.NewFakeRecorder(2)
	b := &opsv1.ClusterBackup{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n", Generation: 3}}
	now := time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)
	long := strings.Repeat("x", 2000)
	skeleton.Finish(rec, b, &b.Status.Conditions, &b.Status.CompletionTime, now,
		skeleton.End{Phase: "Failed", Ready: metav1.ConditionFalse, Reason: opsv1.FailedReason, Message: long, Warning: true})
	g.Expect(b.Status.CompletionTime.Time).To(Equal(now))
	ready := apimeta.FindStatusCondition(b.Status.Conditions, opsv1.ReadyCondition)
	g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(ready.Reason).To(Equal(opsv1.FailedReason))
	g.Expect(ready.ObservedGeneration).To(BeEquivalentTo(3))
	g.Expect(ready.Message).To(HaveLen(skeleton.MaxMessage))
	g.Expect(<-rec.Events).To(HavePrefix("Warning Failed xxx"))
}
