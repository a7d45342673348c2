// Package vmclusterop reconciles VMClusterOperations: ordered Day-2
// operations on one VMCluster (horizontal scaling, vertical scaling, a
// rolling restart), planned into steps (Plan, a pure function) that are
// written to status before anything changes and then carried out one at a
// time.
//
// The shape is the ClusterUpgradeOperation reconciler's (package skeleton):
// read fresh from the API server, patch status once in a defer, one action
// per reconcile, every error through package outcome. Crash safety: every
// side effect is recorded in status before it happens, and is idempotent or
// observable afterwards:
//
//   - Scale and Resize write one value into the HelmRelease's spec.values;
//     writing it again is a no-op (the generation it produced is recorded
//     on the step, a repeat finds the value in place and records the
//     HelmRelease's current generation).
//   - RestartPod records the Pod's UID when the step starts, and deletes
//     the Pod with that UID as a precondition, only while a Pod of that
//     name has that UID: a restarted operator sees the replacement (another
//     UID) and never deletes twice.
package vmclusterop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrlruntime "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/exclusion"
	"github.com/tidbcloud/ops-server/operator/internal/outcome"
	"github.com/tidbcloud/ops-server/operator/internal/skeleton"
)

// Options tune the reconciler.
type Options struct {
	// PollInterval is how often a step in flight (a HelmRelease, a
	// rollout, a restarted Pod) and a waiting operation are checked.
	PollInterval time.Duration
	// MaxConcurrentReconciles is the number of operations worked on at once.
	MaxConcurrentReconciles int
	// MaxRetryDelay bounds the backoff after transient errors.
	MaxRetryDelay time.Duration
}

// DefaultOptions are the production defaults.
func DefaultOptions() Options {
	return Options{PollInterval: 5 * time.Second, MaxConcurrentReconciles: 2, MaxRetryDelay: skeleton.DefaultMaxRetryDelay}
}

// Reconciler reconciles VMClusterOperations.
type Reconciler struct {
	Client client.Client
	// APIReader reads without the cache: the operation itself, the
	// VMCluster, its HelmRelease, workloads and Pods, and the other work
	// the exclusion rules ask about.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Now       func() time.Time
	Options   Options
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrlruntime.Manager) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.Options.PollInterval <= 0 {
		r.Options.PollInterval = DefaultOptions().PollInterval
	}
	return ctrlruntime.NewControllerManagedBy(mgr).
		For(&opsv1.VMClusterOperation{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Options.MaxConcurrentReconciles, 1),
			RateLimiter: skeleton.RateLimiter(r.Options.MaxRetryDelay)}).
		Named("vmclusteroperation").
		Complete(r)
}

// scope is what one reconcile saw and decided; status is derived from it.
type scope struct {
	op *opsv1.VMClusterOperation
	// waiting says what the operation waits for before its next step.
	waiting string
	paused  bool
	requeue time.Duration
}

// Reconcile follows the skeleton: get, terminal, remember the original,
// defer the status patch, act once; a conflict starts over.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return skeleton.Result(r.reconcile(ctx, req))
}

func (r *Reconciler) reconcile(ctx context.Context, req reconcile.Request) (result reconcile.Result, retErr error) {
	op := &opsv1.VMClusterOperation{}
	if found, err := skeleton.Get(ctx, r.APIReader, req.NamespacedName, op); !found || err != nil {
		return reconcile.Result{}, err
	}
	if op.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	if op.Status.Phase.IsTerminal() {
		if op.Status.ObservedGeneration != op.Generation {
			original := op.DeepCopy()
			op.Status.ObservedGeneration = op.Generation
			return reconcile.Result{}, r.patchStatus(ctx, original, op)
		}
		return reconcile.Result{}, nil
	}
	original := op.DeepCopy()
	s := &scope{op: op, requeue: r.Options.PollInterval}
	defer func() {
		r.summarize(s)
		if err := r.patchStatus(ctx, original, op); err != nil {
			retErr = errors.Join(retErr, err)
			return
		}
		if op.Status.Phase.IsTerminal() || retErr != nil {
			return
		}
		if s.paused {
			// Resumed by a spec change (a new generation).
			result = reconcile.Result{}
			return
		}
		result = reconcile.Result{RequeueAfter: s.requeue}
	}()
	err := r.act(ctx, s)
	if err == nil {
		return reconcile.Result{}, nil
	}
	if outcome.IsTerminal(err) {
		if st := current(op); st != nil {
			r.failStep(st, err.Error())
		}
		r.fail(op, opsv1.FailedReason, err.Error())
		return reconcile.Result{}, nil
	}
	if st := current(op); st != nil {
		st.Message = "Retrying: " + bound(err.Error())
	}
	log.FromContext(ctx).Info("Retrying after a transient error", "error", err.Error())
	return reconcile.Result{}, err
}

func (r *Reconciler) patchStatus(ctx context.Context, original, op *opsv1.VMClusterOperation) error {
	return skeleton.PatchStatus(ctx, r.Client, original, op, func(o *opsv1.VMClusterOperation) any { return o.Status })
}

func (r *Reconciler) now() *metav1.Time {
	t := metav1.NewTime(r.Now())
	return &t
}

// act takes the one next action of the operation.
func (r *Reconciler) act(ctx context.Context, s *scope) error {
	op := s.op
	ns, name := op.VMClusterKey()
	key := types.NamespacedName{Namespace: ns, Name: name}
	if op.Status.StartTime == nil {
		if op.Spec.Cancel {
			r.cancel(op)
			return nil
		}
		problem, reason, cur, err := r.preflight(ctx, op)
		if err != nil {
			return err
		}
		if problem != "" {
			r.fail(op, reason, problem)
			return nil
		}
		if waiting, err := r.waitingFor(ctx, op, key); err != nil || waiting != "" {
			s.waiting = waiting
			return err
		}
		// The plan is written, with the start, before anything changes.
		op.Status.Steps = Plan(&op.Spec, cur)
		op.Status.StartTime = r.now()
		if len(op.Status.Steps) == 0 {
			r.succeed(op, "Nothing to change: every component is at its target already")
			return nil
		}
		s.requeue = time.Millisecond
		return nil
	}
	running := runningStep(op)
	if running == nil {
		if op.Spec.Cancel {
			r.cancel(op)
			return nil
		}
		next := pendingStep(op)
		if next == nil {
			r.succeed(op, fmt.Sprintf("All %d steps succeeded: %s", len(op.Status.Steps), done(op)))
			return nil
		}
		if op.Spec.Paused {
			s.paused = true
			return nil
		}
		if waiting, err := r.waitingFor(ctx, op, key); err != nil || waiting != "" {
			s.waiting = waiting
			return err
		}
		return r.start(ctx, s, key, next)
	}
	finished, msg, err := r.run(ctx, op, key, running)
	if err != nil {
		return err
	}
	if finished {
		running.Phase, running.CompletionTime, running.Message = opsv1.StepPhaseSucceeded, r.now(), bound(msg)
		skeleton.Event(r.Recorder, op, "Normal", "StepSucceeded", "%s: %s", running.ID, running.Message)
		s.requeue = time.Millisecond
		return nil
	}
	running.Message = bound(msg)
	timeout := opsv1.DefaultOperationStepTimeout
	if op.Spec.StepTimeout != nil {
		timeout = op.Spec.StepTimeout.Duration
	}
	if running.StartTime != nil && r.Now().Sub(running.StartTime.Time) > timeout {
		msg := fmt.Sprintf("step %s did not converge within %s: %s", running.ID, timeout, msg)
		r.failStep(running, msg)
		r.fail(op, opsv1.FailedReason, msg)
	}
	return nil
}

// waitingFor names what op waits for before it starts its next step: an
// older active operation of the same VMCluster (only before its first
// step), a vmstorage rollout of an upgrade, a running backup, a restore.
func (r *Reconciler) waitingFor(ctx context.Context, op *opsv1.VMClusterOperation, key types.NamespacedName) (string, error) {
	if !anyStarted(op) {
		b, err := exclusion.OperationBlocker(ctx, r.APIReader, op)
		if err != nil {
			return "", err
		}
		if b != nil {
			return fmt.Sprintf("VMClusterOperation %s/%s of VMCluster %s (one operation at a time per VMCluster)", b.Namespace, b.Name, key), nil
		}
	}
	rollout, err := exclusion.Rollout(ctx, r.APIReader, key)
	if err != nil {
		return "", err
	}
	if rollout != "" {
		return fmt.Sprintf("the vmstorage rollout of ClusterUpgradeOperation %s on VMCluster %s", rollout, key), nil
	}
	backup, err := exclusion.RunningBackup(ctx, r.APIReader, key)
	if err != nil {
		return "", err
	}
	if backup != "" {
		return fmt.Sprintf("ClusterBackup %s of VMCluster %s, which is running", backup, key), nil
	}
	// A restore that claimed the VMCluster and acts, or is older
	// (exclusion/vmclusteroperation.go).
	restore, err := exclusion.ActiveRestore(ctx, r.APIReader, key, op)
	if err != nil {
		return "", err
	}
	if restore != "" {
		return fmt.Sprintf("ClusterRestore %s of VMCluster %s", restore, key), nil
	}
	return "", nil
}

// summarize derives phase, progress and conditions from the steps.
func (r *Reconciler) summarize(s *scope) {
	op := s.op
	st := &op.Status
	finished := 0
	for _, step := range st.Steps {
		if step.Phase.IsTerminal() {
			finished++
		}
	}
	st.Progress = fmt.Sprintf("%d/%d", finished, len(st.Steps))
	st.WaitingFor = s.waiting
	if st.Phase.IsTerminal() {
		st.ObservedGeneration = op.Generation
		return
	}
	gen := op.Generation
	running := runningStep(op)
	switch {
	case s.waiting != "":
		if st.StartTime == nil {
			st.Phase = opsv1.OperationPhasePending
		}
		skeleton.MarkRunning(&st.Conditions, gen, opsv1.WaitingForOperationReason, "Waiting for "+s.waiting)
	case running != nil && op.Spec.Cancel:
		st.Phase = opsv1.OperationPhaseCancelling
		skeleton.MarkRunning(&st.Conditions, gen, opsv1.CancellingReason, "Cancelling after step "+running.ID+": "+running.Message)
	case running != nil:
		st.Phase = opsv1.OperationPhaseRunning
		st.CurrentStep = running.ID
		skeleton.MarkRunning(&st.Conditions, gen, opsv1.ProgressingReason, "Step "+running.ID+": "+running.Message)
	case s.paused:
		st.Phase = opsv1.OperationPhasePaused
		skeleton.MarkRunning(&st.Conditions, gen, opsv1.PausedReason, "Paused after "+st.Progress+" steps; set spec.paused to false to resume")
	case st.StartTime != nil:
		st.Phase = opsv1.OperationPhaseRunning
		skeleton.MarkRunning(&st.Conditions, gen, opsv1.ProgressingReason, "Planned "+fmt.Sprint(len(st.Steps))+" steps")
	default:
		st.Phase = opsv1.OperationPhasePending
		skeleton.MarkRunning(&st.Conditions, gen, opsv1.ProgressingReason, "Planning")
	}
}

// succeed, fail and cancel end the operation.
func (r *Reconciler) succeed(op *opsv1.VMClusterOperation, msg string) {
	op.Status.Phase, op.Status.CurrentStep = opsv1.OperationPhaseSucceeded, ""
	skeleton.MarkSucceeded(&op.Status.Conditions, op.Generation, opsv1.SucceededReason, msg)
	skeleton.Finish(r.Recorder, op, &op.Status.Conditions, &op.Status.CompletionTime, r.Now(),
		skeleton.End{Phase: string(opsv1.OperationPhaseSucceeded), Ready: metav1.ConditionTrue, Reason: opsv1.SucceededReason, Message: msg})
}

func (r *Reconciler) fail(op *opsv1.VMClusterOperation, reason, msg string) {
	r.skipPending(op)
	msg = bound(msg)
	if d := done(op); d != "none" {
		msg += "; done before: " + d
	}
	op.Status.Phase = opsv1.OperationPhaseFailed
	skeleton.MarkFailed(&op.Status.Conditions, op.Generation, reason, msg)
	skeleton.Finish(r.Recorder, op, &op.Status.Conditions, &op.Status.CompletionTime, r.Now(),
		skeleton.End{Phase: string(opsv1.OperationPhaseFailed), Ready: metav1.ConditionFalse, Reason: reason, Message: msg, Warning: true})
}

// cancel ends the operation at a safe point (no step in flight): the
// pending steps are Skipped, the completed ones stay, and the message
// says what was done.
func (r *Reconciler) cancel(op *opsv1.VMClusterOperation) {
	r.skipPending(op)
	msg := fmt.Sprintf("Cancelled on request; done: %s", done(op))
	op.Status.Phase, op.Status.CurrentStep = opsv1.OperationPhaseCancelled, ""
	// Stalled: nothing resumes a cancelled operation (kstatus reads it as
	// Failed, not as InProgress forever; docs/gitops-health.md).
	skeleton.MarkFailed(&op.Status.Conditions, op.Generation, opsv1.CancelledReason, msg)
	skeleton.Finish(r.Recorder, op, &op.Status.Conditions, &op.Status.CompletionTime, r.Now(),
		skeleton.End{Phase: string(opsv1.OperationPhaseCancelled), Ready: metav1.ConditionFalse, Reason: opsv1.CancelledReason, Message: msg})
}

func (r *Reconciler) skipPending(op *opsv1.VMClusterOperation) {
	for i := range op.Status.Steps {
		if st := &op.Status.Steps[i]; st.Phase == opsv1.StepPhasePending {
			st.Phase, st.CompletionTime, st.Message = opsv1.StepPhaseSkipped, r.now(), "Not run: the operation ended before it"
		}
	}
}

func (r *Reconciler) failStep(st *opsv1.OperationStep, msg string) {
	st.Phase, st.CompletionTime, st.Message = opsv1.StepPhaseFailed, r.now(), bound(msg)
}

// done lists the succeeded steps ("none" when none).
func done(op *opsv1.VMClusterOperation) string {
	var out []string
	for _, st := range op.Status.Steps {
		if st.Phase == opsv1.StepPhaseSucceeded {
			out = append(out, describe(&st))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// describe is a step for a human: "vmstorage 3→4", "restart vmstorage-x-0".
func describe(st *opsv1.OperationStep) string {
	switch st.Action {
	case opsv1.ActionScale:
		return fmt.Sprintf("%s %s→%s", st.Component, st.From, st.To)
	case opsv1.ActionResize:
		return fmt.Sprintf("%s resources %s", st.Component, st.To)
	}
	return "restart " + st.Pod
}

func runningStep(op *opsv1.VMClusterOperation) *opsv1.OperationStep {
	for i := range op.Status.Steps {
		if op.Status.Steps[i].Phase == opsv1.StepPhaseRunning {
			return &op.Status.Steps[i]
		}
	}
	return nil
}

func pendingStep(op *opsv1.VMClusterOperation) *opsv1.OperationStep {
	for i := range op.Status.Steps {
		if op.Status.Steps[i].Phase == opsv1.StepPhasePending {
			return &op.Status.Steps[i]
		}
	}
	return nil
}

// current is the step in flight, else the next one.
func current(op *opsv1.VMClusterOperation) *opsv1.OperationStep {
	if st := runningStep(op); st != nil {
		return st
	}
	if op.Status.StartTime == nil {
		return nil
	}
	return pendingStep(op)
}

func anyStarted(op *opsv1.VMClusterOperation) bool {
	for _, st := range op.Status.Steps {
		if st.Phase != opsv1.StepPhasePending {
			return true
		}
	}
	return false
}

func bound(s string) string {
	if len(s) > 4000 {
		return s[:3997] + "..."
	}
	return s
}
