// Package skeleton holds what the ClusterUpgradeOperation and the
// ClusterBackup reconcilers share, so the two keep one shape (STYLE.md,
// rule 1) instead of two drifting copies:
//
//   - read: Get the object; not found means deleted, nothing to do
//     (Get).
//   - patch: status is written as a JSON merge patch from the object as
//     read (or as the last patch returned it), with optimistic locking
//     (PatchStatus). A merge patch replaces lists whole — status.steps,
//     status.replicas — so a patch computed from a stale read must be
//     refused, not applied over newer entries; the resourceVersion in the
//     patch does that. Server-side apply would merge list entries by key
//     but needs listMapKeys on every list and still lets a stale writer
//     win field by field. Only the operator writes status, so conflicts
//     are rare: one per spec change or cache lag.
//   - conflict: a 409 from any write means the object changed since it was
//     read; the reconcile starts over from a fresh read after
//     ConflictRequeue, without an error (and without an error log)
//     (Result).
//   - requeue: a transient error goes back to the work queue with its
//     backoff (returned as the error; RateLimiter bounds it); waiting (a
//     cloud operation, Nodes, a rollout) is a RequeueAfter; the error
//     policy is package outcome.
//   - conditions: Ready, Reconciling and Stalled mean the same in both
//     kinds, kstatus-compatible (MarkRunning, MarkSucceeded, MarkFailed):
//     while work runs Reconciling=True and Ready=Unknown; finished well
//     Ready=True; failed Stalled=True and Ready=False; observedGeneration
//     is set once a generation is fully handled (success or terminal
//     failure).
package skeleton

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// FieldOwner is the field manager of every write of the operator.
const FieldOwner = "ops-operator"

// ConflictRequeue is how soon a reconcile that hit a conflict starts over:
// at once, give or take the moment the cache needs to see the write that
// conflicted.
const ConflictRequeue = 100 * time.Millisecond

// DefaultMaxRetryDelay is the longest wait between two retries of a
// transient error (the work queue's backoff, RateLimiter).
const DefaultMaxRetryDelay = time.Minute

// RateLimiter is the one requeue backoff for errors of both controllers:
// per object exponential from 50 ms up to maxDelay, and at most 10 retries
// a second overall (burst 100), as controller-runtime's default. The
// default's 16-minute ceiling would leave an hours-long upgrade idle for
// a quarter of an hour after an API outage that produced a few dozen
// errors; maxDelay bounds it (DefaultMaxRetryDelay when 0).
func RateLimiter(maxDelay time.Duration) workqueue.TypedRateLimiter[reconcile.Request] {
	if maxDelay <= 0 {
		maxDelay = DefaultMaxRetryDelay
	}
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](50*time.Millisecond, maxDelay),
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}

// MaxMessage bounds a condition message (the API allows 32768; a longer
// one is unreadable in kubectl anyway).
const MaxMessage = 1024

// Get reads the object; found=false (and no error) when it does not exist.
func Get(ctx context.Context, r client.Reader, key types.NamespacedName, obj client.Object) (found bool, err error) {
	if err := r.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// PatchStatus writes obj's status as a merge patch from original, with
// optimistic locking, and not at all when status did not change
// (statusOf returns the status of either). A deleted object is not an
// error; a conflict is returned as is (apierrors.IsConflict holds).
func PatchStatus[T client.Object](ctx context.Context, c client.Client, original, obj T, statusOf func(T) any) error {
	if equality.Semantic.DeepEqual(statusOf(original), statusOf(obj)) {
		return nil
	}
	patch := client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})
	if err := c.Status().Patch(ctx, obj, patch, client.FieldOwner(FieldOwner)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		if apierrors.IsConflict(err) {
			return err
		}
		return fmt.Errorf("patching status of %s: %w", klog.KObj(obj), err)
	}
	return nil
}

// Result is the one conflict and requeue policy: a conflict starts over
// after ConflictRequeue without an error; any other error goes back to the
// queue with its backoff; otherwise result stands.
func Result(result reconcile.Result, err error) (reconcile.Result, error) {
	if apierrors.IsConflict(err) {
		return reconcile.Result{RequeueAfter: ConflictRequeue}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	return result, nil
}

// Event records an event about obj, if there is a recorder.
func Event(rec events.EventRecorder, obj client.Object, kind, reason, format string, args ...any) {
	if rec == nil {
		return
	}
	rec.Eventf(obj, nil, kind, reason, "Reconcile", format, args...)
}

// SetCondition sets one condition at generation gen, the message bounded
// by MaxMessage.
func SetCondition(conds *[]metav1.Condition, gen int64, t string, status metav1.ConditionStatus, reason, msg string) {
	if len(msg) > MaxMessage {
		msg = msg[:MaxMessage-3] + "..."
	}
	apimeta.SetStatusCondition(conds, metav1.Condition{
		Type: t, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen,
	})
}

// MarkRunning: work runs (or waits its turn): Reconciling=True and
// Ready=Unknown with the same reason and message, no Stalled.
func MarkRunning(conds *[]metav1.Condition, gen int64, reason, msg string) {
	SetCondition(conds, gen, opsv1.ReadyCondition, metav1.ConditionUnknown, reason, msg)
	SetCondition(conds, gen, opsv1.ReconcilingCondition, metav1.ConditionTrue, reason, msg)
	apimeta.RemoveStatusCondition(conds, opsv1.StalledCondition)
}

// MarkSucceeded: finished well: Ready=True, neither Reconciling nor
// Stalled.
func MarkSucceeded(conds *[]metav1.Condition, gen int64, reason, msg string) {
	SetCondition(conds, gen, opsv1.ReadyCondition, metav1.ConditionTrue, reason, msg)
	apimeta.RemoveStatusCondition(conds, opsv1.ReconcilingCondition)
	apimeta.RemoveStatusCondition(conds, opsv1.StalledCondition)
}

// MarkFailed: failed for good: Ready=False and Stalled=True with the same
// reason and message, no Reconciling.
func MarkFailed(conds *[]metav1.Condition, gen int64, reason, msg string) {
	SetCondition(conds, gen, opsv1.ReadyCondition, metav1.ConditionFalse, reason, msg)
	SetCondition(conds, gen, opsv1.StalledCondition, metav1.ConditionTrue, reason, msg)
	apimeta.RemoveStatusCondition(conds, opsv1.ReconcilingCondition)
}

// End is how the work of an object ended.
type End struct {
	// Phase names the event (Succeeded, Failed, Cancelled, ...).
	Phase string
	// Ready is the Ready condition's status; Reason and Message its reason
	// and message (the status's summary keeps them).
	Ready           metav1.ConditionStatus
	Reason, Message string
	// Warning makes the event a Warning.
	Warning bool
}

// Finish records the end of the work on obj: its completion time, the
// Ready condition that says why, and one event named after the phase.
func Finish(rec events.EventRecorder, obj client.Object, conds *[]metav1.Condition, completion **metav1.Time, now time.Time, e End) {
	t := metav1.NewTime(now)
	*completion = &t
	SetCondition(conds, obj.GetGeneration(), opsv1.ReadyCondition, e.Ready, e.Reason, e.Message)
	kind := corev1.EventTypeNormal
	if e.Warning {
		kind = corev1.EventTypeWarning
	}
	msg := e.Message
	if len(msg) > MaxMessage {
		msg = msg[:MaxMessage-3] + "..."
	}
	Event(rec, obj, kind, e.Phase, "%s", msg)
}
