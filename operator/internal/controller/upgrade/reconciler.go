// Package upgrade reconciles ClusterUpgradeOperations: it writes the plan,
// waits for the schedule, checks the cloud (preflight), then walks the
// steps — control plane, addons, node groups in place or blue-green with
// the VMStorage rollout — one action at a time, recording every cloud
// operation id in status before it waits, so a restarted operator resumes
// by polling and never starts a cloud call twice.
package upgrade

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrlruntime "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/outcome"
	"github.com/tidbcloud/ops-server/operator/internal/skeleton"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/maintenancewindows"
)

// FieldOwner is the field manager of every write of the operator.
const FieldOwner = skeleton.FieldOwner

// Options tune the reconciler.
type Options struct {
	// PollInterval is how often a running cloud operation or a
	// Kubernetes-side wait is checked.
	PollInterval time.Duration
	// RetryInterval is the wait after a retryable cloud error without a
	// Retry-After hint.
	RetryInterval time.Duration
	// NodesReadyTimeout bounds the wait for a new node group's Nodes.
	NodesReadyTimeout time.Duration
	// RolloutTimeout bounds the wait for the VMStorage rollout.
	RolloutTimeout time.Duration
	// DrainTimeout bounds the drain of an old node group; past it the
	// operation fails, naming what blocked the drain.
	DrainTimeout time.Duration
	// MaxConcurrentReconciles is the number of operations worked on at once.
	MaxConcurrentReconciles int
	// MaxRetryDelay bounds the backoff after transient errors
	// (skeleton.RateLimiter).
	MaxRetryDelay time.Duration
	// WindowRecheckInterval bounds the wait of an operation outside its
	// maintenance window before it looks again (gates.go).
	WindowRecheckInterval time.Duration
	// MaintenanceWindows are the default windows per provider, region and
	// cluster (--maintenance-windows); nil: none.
	MaintenanceWindows *maintenancewindows.Defaults
	// Now is the clock (time.Now if nil); tests inject one.
	Now func() time.Time
}

// DefaultOptions are the production defaults.
func DefaultOptions() Options {
	return Options{
		PollInterval:            10 * time.Second,
		RetryInterval:           5 * time.Second,
		NodesReadyTimeout:       30 * time.Minute,
		RolloutTimeout:          2 * time.Hour,
		DrainTimeout:            time.Hour,
		MaxConcurrentReconciles: 16,
		MaxRetryDelay:           skeleton.DefaultMaxRetryDelay,
		WindowRecheckInterval:   time.Minute,
	}
}

// Reconciler reconciles ClusterUpgradeOperations.
type Reconciler struct {
	Client ctrl.Client
	// APIReader reads without the cache (pods by node, fresh objects).
	APIReader ctrl.Reader
	Providers *cloud.Registry
	Recorder  events.EventRecorder
	Now       func() time.Time
	Options   Options
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrlruntime.Manager) error {
	if r.Now == nil {
		r.Now = r.Options.Now
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	return ctrlruntime.NewControllerManagedBy(mgr).
		For(&opsv1.ClusterUpgradeOperation{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Options.MaxConcurrentReconciles,
			RateLimiter: skeleton.RateLimiter(r.Options.MaxRetryDelay)}).
		Named("clusterupgradeoperation").
		Complete(r)
}

// scope is what one reconcile saw and did; status is derived from it.
type scope struct {
	op       *opsv1.ClusterUpgradeOperation
	provider cloud.Provider
	ref      cloud.ClusterRef
	requeue  time.Duration
	// blocked is what keeps the current step from progressing, if anything.
	blocked *opsv1.BlockedBy
	// observedOnly says the action changed nothing outside the operation
	// (see Reconcile).
	observedOnly bool
	// waitingFor is the operation of the same cluster this one waits for
	// before it starts (one active upgrade per cluster).
	waitingFor *opsv1.ClusterUpgradeOperation
	// holds is what holds the next step (gates.go).
	holds holdState
}

// maxActionsPerReconcile bounds the actions one reconcile takes in a row,
// so that one operation does not hold a worker while others wait.
const maxActionsPerReconcile = 16

// Reconcile reads the operation once, then takes actions in a row on the
// object the status patches return (never on a cache that may not have
// seen the last patch yet) until one has to wait — for a cloud operation,
// Nodes, a rollout, the schedule — or the operation ends. Status is
// patched after every action that changed something outside the
// operation (a cloud operation started, Nodes cordoned, pods evicted, the
// VMCluster patched), so its record is stored before anything waits on
// it, and once before returning; actions that only observed (the plan,
// the preflight, a poll) share the next patch: after a crash they are
// simply observed again.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	op := &opsv1.ClusterUpgradeOperation{}
	if found, err := skeleton.Get(ctx, r.Client, req.NamespacedName, op); !found || err != nil {
		return reconcile.Result{}, err
	}
	original := op.DeepCopy()
	result, err := func() (reconcile.Result, error) {
		for range maxActionsPerReconcile {
			// No finalizer: a cloud operation cannot be undone, so
			// deleting the object only stops the operator; nothing can
			// be left to clean up.
			if !op.DeletionTimestamp.IsZero() || op.Status.Phase.IsTerminal() {
				return reconcile.Result{}, nil
			}
			requeue, again, record, err := r.act(ctx, op)
			if err != nil || !again {
				return reconcile.Result{RequeueAfter: requeue}, err
			}
			if record {
				if err := r.patchStatus(ctx, original, op); err != nil {
					return reconcile.Result{}, err
				}
				original = op.DeepCopy()
			}
		}
		return reconcile.Result{RequeueAfter: time.Millisecond}, nil
	}()
	if perr := r.patchStatus(ctx, original, op); perr != nil {
		err = errors.Join(err, perr)
	}
	// A conflict: the object changed since it was read (a spec change, or
	// a cache behind an earlier patch): start over from a fresh read;
	// nothing of the last actions was recorded.
	return skeleton.Result(result, err)
}

// act decides one action, performs it on op and derives the rest of status
// (summarize). It returns when to look again, or again=true when the next
// action can follow at once, and record=true when the action changed
// something outside the operation that status must record before the next
// one.
func (r *Reconciler) act(ctx context.Context, op *opsv1.ClusterUpgradeOperation) (requeue time.Duration, again, record bool, retErr error) {
	logger := log.FromContext(ctx)
	s := &scope{op: op}
	defer func() {
		if retErr != nil {
			// Transient (package outcome): the step keeps running with
			// the error in its message, and the conditions say so; what
			// blocked it before still does.
			s.blocked = op.Status.BlockedBy
			r.summarize(s)
			return
		}
		r.summarize(s)
		record = !s.observedOnly
		if !op.Status.Phase.IsTerminal() && op.Status.Phase != opsv1.UpgradePhasePaused && op.Status.Phase != opsv1.UpgradePhaseAwaitingApproval {
			requeue, again = s.requeue, s.requeue <= 0
		}
	}()

	act := decide(op, r.Now())
	s.holds.window = r.effectiveWindow(op)
	logger.V(1).Info("Deciding", "action", act.kind, "step", act.step, "phase", op.Status.Phase)
	switch act.kind {
	case actNone: // terminal: nothing to do
		return
	case actWritePlan:
		s.observedOnly = true
		op.Status.Steps = buildPlan(&op.Spec)
		op.Status.Phase = opsv1.UpgradePhasePending
		r.event(op, "Normal", "Planned", "Planned %d steps", len(op.Status.Steps))
		return
	case actWaitSchedule:
		op.Status.Phase = opsv1.UpgradePhaseScheduled
		s.requeue = op.Spec.Schedule.Sub(r.Now())
		return
	case actPause:
		op.Status.Phase = opsv1.UpgradePhasePaused
		return
	case actCancel:
		r.cancelOperation(ctx, s, act.step)
		return
	case actSucceed:
		r.finish(op, opsv1.UpgradePhaseSucceeded, "All steps finished")
		return
	case actFail:
		step := &op.Status.Steps[act.step]
		r.fail(op, fmt.Sprintf("Step %s failed: %s", step.ID, step.Message))
		return
	}

	// An approval gate or a closed maintenance window holds a step that
	// has not started (gates.go).
	if r.hold(s, act) {
		return
	}
	// The remaining actions talk to the cloud: an operation that is
	// invalid, or waits for another one of its cluster, does not.
	if act.kind == actPreflight {
		if msg := validateSpec(&op.Spec); msg != "" {
			r.failInvalid(op, "Invalid spec: "+msg)
			return
		}
		if msg := validateTargets(op); msg != "" {
			r.failInvalid(op, "Invalid spec: "+msg)
			return
		}
		msg, err := r.checkRolloutTargets(ctx, &op.Spec)
		if err != nil {
			return 0, false, false, err
		}
		if msg != "" {
			r.failWith(op, opsv1.VMClusterNotFoundReason, "Preflight: "+msg)
			return
		}
		if wait, err := r.waitForCluster(ctx, s); wait || err != nil {
			return 0, false, false, err
		}
	}
	if act.kind == actRunStep && !anyStepStarted(op.Status.Steps) {
		// Started a moment ago: step back if another operation of the
		// cluster started too (see package exclusion).
		if wait, err := r.waitForCluster(ctx, s); wait || err != nil {
			return 0, false, false, err
		}
	}
	if err := r.resolveProvider(s); err != nil {
		return 0, false, false, r.handleError(s, nil, err)
	}
	switch act.kind {
	case actPreflight:
		s.observedOnly = true
		return 0, false, false, r.preflight(ctx, s)
	case actPoll:
		s.observedOnly = true
		return 0, false, false, r.poll(ctx, s, &op.Status.Steps[act.step])
	case actRunStep:
		return 0, false, false, r.runStep(ctx, s, &op.Status.Steps[act.step])
	}
	return 0, false, false, fmt.Errorf("unknown action %q", act.kind)
}

func (r *Reconciler) resolveProvider(s *scope) error {
	p, ref, err := r.Providers.Resolve(string(s.op.Spec.CloudProvider), s.op.Spec.K8sClusterName, s.op.Spec.Region)
	if err != nil {
		return err
	}
	s.provider, s.ref = p, ref
	return nil
}

// token is the idempotency token of a step's cloud call: stable for the
// operation and step, so a call repeated after a crash is recognised.
func token(op *opsv1.ClusterUpgradeOperation, stepID string) string {
	sum := sha256.Sum256([]byte(string(op.UID) + "/" + stepID))
	return "ops-" + hex.EncodeToString(sum[:])[:32]
}

// handleError applies the error policy (package outcome) to an error of
// step (nil: before any step): a terminal error fails the step and the
// operation; a retryable cloud error waits for its Retry-After hint (or
// RetryInterval); anything else — Kubernetes API errors, timeouts,
// unknown errors — is returned, so the operation goes back to the queue
// with its backoff. Either way a step that is retried says why in its
// message.
func (r *Reconciler) handleError(s *scope, step *opsv1.UpgradeStep, err error) error {
	o := outcome.Classify(err)
	if o.Terminal {
		if step != nil {
			r.failStep(s.op, step, err.Error())
		}
		r.fail(s.op, err.Error())
		return nil
	}
	if o.Cloud {
		s.requeue = o.RequeueAfter
		if s.requeue <= 0 {
			s.requeue = r.Options.RetryInterval
		}
		if step != nil {
			step.Message = "Retrying after a transient cloud error: " + err.Error()
		}
		return nil
	}
	if step != nil {
		step.Message = "Retrying after an error: " + err.Error()
	}
	return err
}

func (r *Reconciler) now() *metav1.Time {
	t := metav1.NewTime(r.Now())
	return &t
}

func (r *Reconciler) startStep(op *opsv1.ClusterUpgradeOperation, step *opsv1.UpgradeStep) {
	if step.Phase == opsv1.StepPhaseRunning {
		return
	}
	step.Phase = opsv1.StepPhaseRunning
	step.StartTime = r.now()
	step.Attempts++
	step.Message = ""
	r.event(op, "Normal", "StepStarted", "Step %s started", step.ID)
}

func (r *Reconciler) succeedStep(op *opsv1.ClusterUpgradeOperation, step *opsv1.UpgradeStep, msg string) {
	step.Phase = opsv1.StepPhaseSucceeded
	step.CompletionTime = r.now()
	step.Message = msg
	r.event(op, "Normal", "StepSucceeded", "Step %s succeeded: %s", step.ID, msg)
}

func (r *Reconciler) skipStep(op *opsv1.ClusterUpgradeOperation, step *opsv1.UpgradeStep, msg string) {
	step.Phase = opsv1.StepPhaseSkipped
	step.CompletionTime = r.now()
	step.Message = msg
}

func (r *Reconciler) failStep(op *opsv1.ClusterUpgradeOperation, step *opsv1.UpgradeStep, msg string) {
	step.Phase = opsv1.StepPhaseFailed
	step.CompletionTime = r.now()
	step.Message = msg
	r.event(op, "Warning", "StepFailed", "Step %s failed: %s", step.ID, msg)
}

// fail ends the operation Failed; steps not run are skipped.
func (r *Reconciler) fail(op *opsv1.ClusterUpgradeOperation, msg string) {
	for i := range op.Status.Steps {
		if st := &op.Status.Steps[i]; !st.Phase.IsTerminal() {
			if st.Phase == opsv1.StepPhaseRunning {
				r.failStep(op, st, msg)
				continue
			}
			r.skipStep(op, st, "Not run: the operation failed")
		}
	}
	r.finish(op, opsv1.UpgradePhaseFailed, msg)
}

// failInvalid ends the operation Failed with reason InvalidSpec: its spec
// asks for something the operator refuses to do, whatever the CRD let
// through.
func (r *Reconciler) failInvalid(op *opsv1.ClusterUpgradeOperation, msg string) {
	r.failWith(op, opsv1.InvalidSpecReason, msg)
}

// failWith ends the operation Failed with the given reason on Ready and
// Stalled (InvalidSpec, VMClusterNotFound) instead of Failed.
func (r *Reconciler) failWith(op *opsv1.ClusterUpgradeOperation, reason, msg string) {
	r.fail(op, msg)
	skeleton.MarkFailed(&op.Status.Conditions, op.Generation, reason, msg)
}

// cancel ends the operation Cancelled at a safe point (nothing in flight).
func (r *Reconciler) cancel(op *opsv1.ClusterUpgradeOperation) {
	for i := range op.Status.Steps {
		st := &op.Status.Steps[i]
		switch {
		case st.Phase == opsv1.StepPhaseRunning:
			r.skipStep(op, st, "Stopped: the operation was cancelled")
		case !st.Phase.IsTerminal():
			r.skipStep(op, st, "Not run: the operation was cancelled")
		}
	}
	r.finish(op, opsv1.UpgradePhaseCancelled, "Cancelled on request")
}

func (r *Reconciler) finish(op *opsv1.ClusterUpgradeOperation, phase opsv1.UpgradePhase, msg string) {
	op.Status.Phase = phase
	op.Status.BlockedBy = nil
	end := skeleton.End{Phase: string(phase), Ready: metav1.ConditionTrue, Reason: opsv1.SucceededReason, Message: msg}
	switch phase {
	case opsv1.UpgradePhaseFailed:
		end.Ready, end.Reason, end.Warning = metav1.ConditionFalse, opsv1.FailedReason, true
	case opsv1.UpgradePhaseCancelled:
		end.Ready, end.Reason = metav1.ConditionFalse, opsv1.CancelledReason
	}
	if phase != opsv1.UpgradePhaseSucceeded {
		op.Status.LeftBehind = leftBehind(op)
	}
	skeleton.Finish(r.Recorder, op, &op.Status.Conditions, &op.Status.CompletionTime, r.Now(), end)
}

func (r *Reconciler) event(op *opsv1.ClusterUpgradeOperation, kind, reason, format string, args ...any) {
	skeleton.Event(r.Recorder, op, kind, reason, format, args...)
}

// patchStatus writes status (package skeleton: a merge patch from
// original, the object as read or as the last patch returned it, with
// optimistic locking), and not at all when nothing changed (a poll that
// found the cloud operation still running). Only the operator writes
// status.
func (r *Reconciler) patchStatus(ctx context.Context, original, op *opsv1.ClusterUpgradeOperation) error {
	if err := skeleton.PatchStatus(ctx, r.Client, original, op, func(o *opsv1.ClusterUpgradeOperation) any { return o.Status }); err != nil {
		return err
	}
	recordStepMetrics(original, op)
	return nil
}
