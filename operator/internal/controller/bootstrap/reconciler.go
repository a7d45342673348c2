// Package bootstrap reconciles ObservabilityStacks: the declaration of the
// observability stack (which charts, which versions, which values, in
// which order) becomes one Flux HelmRelease per component, installed from
// one HelmRepository (the charts ops-apiserver serves), with each
// component's dependsOn mapped onto HelmRelease spec.dependsOn so that
// helm-controller installs them in order.
//
// The shape is the other reconcilers' (package skeleton): read, decide
// with a pure function (Decide), act, patch status once in a defer. Every
// write is idempotent (server-side apply of the desired objects, delete of
// a removed component's HelmRelease), so an operator killed at any point
// repeats nothing that matters: the next reconcile applies the same
// objects again. A removed component whose chart holds data (vmcluster)
// is not uninstalled unless spec.allowDataRemoval is true.
//
// Deleting an ObservabilityStack leaves its HelmReleases and
// HelmRepository in place (no owner references, no finalizer): the stack
// keeps running, and nothing holding data is uninstalled by accident.
package bootstrap

import (
	"context"
	"fmt"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrlruntime "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/outcome"
	"github.com/tidbcloud/ops-server/operator/internal/skeleton"
)

// Options tune the reconciler.
type Options struct {
	Config
	// PollInterval is how often a stack that is not Ready is looked at
	// again (besides the HelmRelease watch).
	PollInterval time.Duration
	// MaxRetryDelay bounds the backoff after transient errors.
	MaxRetryDelay time.Duration
}

// DefaultOptions are the production defaults (RepositoryURL aside).
func DefaultOptions() Options {
	return Options{Config: DefaultConfig(), PollInterval: 30 * time.Second, MaxRetryDelay: skeleton.DefaultMaxRetryDelay}
}

// Reconciler reconciles ObservabilityStacks.
type Reconciler struct {
	Client client.Client
	// APIReader reads the stack without the cache (decisions on the
	// latest spec and status).
	APIReader client.Reader
	Recorder  events.EventRecorder
	Options   Options
}

// SetupWithManager registers the controller; a HelmRelease of a stack
// (LabelStack) that changes requeues its stack.
func (r *Reconciler) SetupWithManager(mgr ctrlruntime.Manager) error {
	if r.Options.RepositoryURL == "" {
		return fmt.Errorf("bootstrap: no chart repository URL")
	}
	return ctrlruntime.NewControllerManagedBy(mgr).
		For(&opsv1.ObservabilityStack{}).
		Watches(&helmv2.HelmRelease{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			stack := o.GetLabels()[LabelStack]
			if stack == "" {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: stack}}}
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1, RateLimiter: skeleton.RateLimiter(r.Options.MaxRetryDelay)}).
		Named("observabilitystack").
		Complete(r)
}

// Reconcile follows the skeleton: get, remember the original, defer the
// status patch, decide, act.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return skeleton.Result(r.reconcile(ctx, req))
}

func (r *Reconciler) reconcile(ctx context.Context, req reconcile.Request) (result reconcile.Result, retErr error) {
	stack := &opsv1.ObservabilityStack{}
	if found, err := skeleton.Get(ctx, r.APIReader, req.NamespacedName, stack); !found || err != nil {
		return reconcile.Result{}, err
	}
	if !stack.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	original := stack.DeepCopy()
	defer func() {
		if err := skeleton.PatchStatus(ctx, r.Client, original, stack, func(s *opsv1.ObservabilityStack) any { return s.Status }); err != nil && retErr == nil {
			retErr = err
		}
	}()
	gen := stack.Generation

	existing, err := r.releases(ctx, stack.Namespace)
	if err != nil {
		skeleton.MarkRunning(&stack.Status.Conditions, gen, opsv1.ProgressingReason, err.Error())
		return reconcile.Result{}, err
	}
	plan, err := Decide(stack, existing, r.Options.Config)
	if err != nil {
		if apimeta.FindStatusCondition(stack.Status.Conditions, opsv1.StalledCondition) == nil {
			skeleton.Event(r.Recorder, stack, corev1.EventTypeWarning, opsv1.InvalidSpecReason, "%s", err.Error())
		}
		skeleton.MarkFailed(&stack.Status.Conditions, gen, opsv1.InvalidSpecReason, err.Error())
		return reconcile.Result{}, nil
	}
	if err := r.apply(ctx, plan.Source); err != nil {
		return r.retry(stack, fmt.Errorf("applying HelmRepository %s/%s: %w", plan.Source.Namespace, plan.Source.Name, err))
	}
	for _, hr := range plan.Apply {
		if err := r.apply(ctx, hr); err != nil {
			return r.retry(stack, fmt.Errorf("applying HelmRelease %s/%s: %w", hr.Namespace, hr.Name, err))
		}
	}
	for _, name := range plan.Delete {
		hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: stack.Namespace, Name: name}}
		// Delete only the HelmRelease that was read (it may have been
		// replaced meanwhile by one the stack does not manage).
		uid := existing[name].UID
		if err := r.Client.Delete(ctx, hr, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			return r.retry(stack, fmt.Errorf("deleting HelmRelease %s/%s of removed component %s: %w", stack.Namespace, name, name, err))
		}
		skeleton.Event(r.Recorder, stack, corev1.EventTypeNormal, "ComponentRemoved", "Deleted HelmRelease %s of removed component %s: helm-controller uninstalls it", name, name)
	}
	for name, msg := range plan.Refused {
		if prev := stack.Status.Components; !refusedBefore(prev, name, msg) {
			skeleton.Event(r.Recorder, stack, corev1.EventTypeWarning, opsv1.RemovalRefusedReason, "%s", msg)
		}
	}

	// Status from the HelmReleases as applied (the apply updated existing).
	if existing, err = r.releases(ctx, stack.Namespace); err != nil {
		return r.retry(stack, err)
	}
	stack.Status.Components = stack.Status.Components[:0]
	for _, c := range stack.Spec.Components {
		var hr *helmv2.HelmRelease
		if _, conflict := plan.Conflicts[c.Name]; !conflict {
			hr = existing[c.Name]
		}
		cs := componentStatus(c.Name, c.Chart, hr)
		if msg, ok := plan.Conflicts[c.Name]; ok {
			cs.Ready, cs.Message = metav1.ConditionFalse, msg
		}
		if msg, ok := plan.Refused[c.Name]; ok {
			cs.Message = msg
		}
		stack.Status.Components = append(stack.Status.Components, cs)
	}
	for name := range plan.Refused {
		if declared(stack, name) {
			continue
		}
		cs := componentStatus(name, chartOf(existing[name]), existing[name])
		cs.Removed, cs.Message = true, plan.Refused[name]
		stack.Status.Components = append(stack.Status.Components, cs)
	}
	stack.Status.ObservedGeneration = gen
	ready, reason, msg := summary(stack.Status.Components, plan.Refused, plan.Conflicts)
	switch {
	case ready == metav1.ConditionTrue:
		if !apimeta.IsStatusConditionTrue(original.Status.Conditions, opsv1.ReadyCondition) {
			skeleton.Event(r.Recorder, stack, corev1.EventTypeNormal, opsv1.SucceededReason, "Every component is Ready")
		}
		skeleton.MarkSucceeded(&stack.Status.Conditions, gen, reason, msg)
		return reconcile.Result{}, nil
	case reason == opsv1.ComponentsNotReadyReason:
		skeleton.MarkRunning(&stack.Status.Conditions, gen, reason, msg)
	default:
		skeleton.MarkFailed(&stack.Status.Conditions, gen, reason, msg)
	}
	return reconcile.Result{RequeueAfter: r.Options.PollInterval}, nil
}

// retry records err on the Ready condition and returns it, unless the
// error policy (package outcome) says it is terminal.
func (r *Reconciler) retry(stack *opsv1.ObservabilityStack, err error) (reconcile.Result, error) {
	if outcome.IsTerminal(err) {
		skeleton.MarkFailed(&stack.Status.Conditions, stack.Generation, opsv1.FailedReason, err.Error())
		return reconcile.Result{}, nil
	}
	skeleton.MarkRunning(&stack.Status.Conditions, stack.Generation, opsv1.ProgressingReason, err.Error())
	return reconcile.Result{}, err
}

func refusedBefore(prev []opsv1.ComponentStatus, name, msg string) bool {
	for _, c := range prev {
		if c.Name == name && c.Message == msg {
			return true
		}
	}
	return false
}

func declared(stack *opsv1.ObservabilityStack, name string) bool {
	for _, c := range stack.Spec.Components {
		if c.Name == name {
			return true
		}
	}
	return false
}

// releases returns the HelmReleases of namespace by name.
func (r *Reconciler) releases(ctx context.Context, namespace string) (map[string]*helmv2.HelmRelease, error) {
	var list helmv2.HelmReleaseList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing the HelmReleases of namespace %s: %w", namespace, err)
	}
	out := make(map[string]*helmv2.HelmRelease, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out, nil
}

// apply writes obj with server-side apply: ops-operator owns the fields it
// sets, and nothing else (helm-controller writes status, a user may add
// annotations).
func (r *Reconciler) apply(ctx context.Context, obj client.Object) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("converting %s: %w", klog.KObj(obj), err)
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	log.FromContext(ctx).V(1).Info("Applying", "kind", u.GetKind(), "object", klog.KObj(u))
	return r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(skeleton.FieldOwner), client.ForceOwnership)
}
