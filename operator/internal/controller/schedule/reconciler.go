// Package schedule reconciles ClusterBackupSchedules: at every tick of its
// cron schedule a ClusterBackup of the VMCluster, named after the tick
// (opsv1.ScheduledBackupName) so that an operator killed after creating it
// finds it again instead of creating a second one; then retention
// (backupschedule.Retain) deletes the backups no rule keeps. An expired
// backup is deleted through the ClusterBackup's own deletion path: its
// deletionPolicy is set to Delete, then the object is deleted, and the
// ClusterBackup reconciler's finalizer removes its data (or says with a
// DataRetained Warning why it could not). The status and Events say what
// was created, kept and deleted, and why.
package schedule

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrlruntime "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/skeleton"
	"github.com/tidbcloud/ops-server/operator/pkg/backupschedule"
)

// Condition reasons of a ClusterBackupSchedule.
const (
	// ScheduledReason: the schedule creates backups; the message names
	// the next tick.
	ScheduledReason = "Scheduled"
	// SuspendedReason: spec.suspend is true.
	SuspendedReason = "Suspended"
)

// maxLastDeleted bounds status.lastDeleted.
const maxLastDeleted = 16

// Options tune the reconciler.
type Options struct {
	// FSRoots are the directories an fs:// destination must be inside
	// (--backup-fs-roots), as for ClusterBackups.
	FSRoots []string
	// MaxRetryDelay bounds the backoff after transient errors.
	MaxRetryDelay time.Duration
}

// Reconciler reconciles ClusterBackupSchedules.
type Reconciler struct {
	Client client.Client
	// APIReader reads the schedule and its backups fresh from the API
	// server: a backup created by the previous reconcile is always seen.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Now is the clock; tests inject one.
	Now     func() time.Time
	Options Options
}

// SetupWithManager registers the controller: a schedule is reconciled when
// it changes, when one of its backups changes (a backup finishing may let
// retention delete an older one) and at its next tick.
func (r *Reconciler) SetupWithManager(mgr ctrlruntime.Manager) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	return ctrlruntime.NewControllerManagedBy(mgr).
		For(&opsv1.ClusterBackupSchedule{}).
		Owns(&opsv1.ClusterBackup{}).
		WithOptions(controller.Options{RateLimiter: skeleton.RateLimiter(r.Options.MaxRetryDelay)}).
		Named("clusterbackupschedule").
		Complete(r)
}

// Reconcile follows the skeleton: read fresh, remember the original, patch
// status once in a defer; a conflict starts over.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return skeleton.Result(r.reconcile(ctx, req))
}

func (r *Reconciler) reconcile(ctx context.Context, req reconcile.Request) (result reconcile.Result, retErr error) {
	s := &opsv1.ClusterBackupSchedule{}
	if found, err := skeleton.Get(ctx, r.APIReader, req.NamespacedName, s); !found || err != nil {
		return reconcile.Result{}, err
	}
	if !s.DeletionTimestamp.IsZero() {
		// Its backups go with it (owner references); their
		// deletionPolicy Retain keeps their data.
		return reconcile.Result{}, nil
	}
	original := s.DeepCopy()
	defer func() {
		if err := skeleton.PatchStatus(ctx, r.Client, original, s, func(o *opsv1.ClusterBackupSchedule) any { return o.Status }); err != nil {
			retErr = errors.Join(retErr, err)
		}
	}()
	sched, problem := r.validate(s)
	if problem != "" {
		skeleton.MarkFailed(&s.Status.Conditions, s.Generation, opsv1.InvalidSpecReason, problem)
		s.Status.NextScheduleTime = nil
		if s.Status.ObservedGeneration != s.Generation {
			skeleton.Event(r.Recorder, s, corev1.EventTypeWarning, opsv1.InvalidSpecReason, "%s", problem)
		}
		s.Status.ObservedGeneration = s.Generation
		return reconcile.Result{}, nil
	}
	now := r.Now().UTC()
	backups, err := r.backups(ctx, s)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !s.Spec.Suspend {
		if err := r.createDue(ctx, s, sched, backups, now); err != nil {
			return reconcile.Result{}, err
		}
		if backups, err = r.backups(ctx, s); err != nil {
			return reconcile.Result{}, err
		}
	}
	if err := r.retain(ctx, s, backups, now); err != nil {
		return reconcile.Result{}, err
	}
	next := sched.Next(now)
	s.Status.NextScheduleTime = &metav1.Time{Time: next}
	if s.Spec.Suspend {
		s.Status.NextScheduleTime = nil
		skeleton.MarkSucceeded(&s.Status.Conditions, s.Generation, SuspendedReason, fmt.Sprintf("Suspended: no backup is created; %d kept", len(s.Status.Retained)))
	} else {
		skeleton.MarkSucceeded(&s.Status.Conditions, s.Generation, ScheduledReason,
			fmt.Sprintf("Next backup at %s; %d kept", next.Format(time.RFC3339), len(s.Status.Retained)))
	}
	s.Status.ObservedGeneration = s.Generation
	log.FromContext(ctx).V(1).Info("Scheduled", "next", next, "retained", len(s.Status.Retained))
	// A little after the tick, so that Due sees it.
	return reconcile.Result{RequeueAfter: next.Sub(now) + 100*time.Millisecond}, nil
}

// validate checks what the CRD cannot: the cron expression, the
// VMCluster's namespace, the fs:// roots. It returns the problems, "" when
// there is none; the same rules, with the same words, as a ClusterBackup's
// (the schedule's backups would each fail with them).
func (r *Reconciler) validate(s *opsv1.ClusterBackupSchedule) (backupschedule.Schedule, string) {
	var problems []string
	sched, err := backupschedule.Parse(s.Spec.Schedule)
	if err != nil {
		problems = append(problems, "spec.schedule: "+err.Error())
	}
	if ns := s.Spec.VMCluster.Namespace; ns != "" && ns != s.Namespace {
		problems = append(problems, fmt.Sprintf("spec.vmCluster.namespace %s: a ClusterBackupSchedule may only back up a VMCluster in its own namespace %s", ns, s.Namespace))
	}
	if msg := opsv1.FSDestinationProblem(s.Spec.Destination.URL, r.Options.FSRoots); msg != "" {
		problems = append(problems, "spec.destination.url: "+msg)
	}
	return sched, strings.Join(problems, "; ")
}

// backups lists the schedule's ClusterBackups, fresh.
func (r *Reconciler) backups(ctx context.Context, s *opsv1.ClusterBackupSchedule) ([]opsv1.ClusterBackup, error) {
	list := &opsv1.ClusterBackupList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(s.Namespace), client.MatchingLabels{opsv1.ScheduleLabel: s.Name}); err != nil {
		return nil, fmt.Errorf("listing the ClusterBackups of %s: %w", klog.KObj(s), err)
	}
	var out []opsv1.ClusterBackup
	for _, b := range list.Items {
		if metav1.IsControlledBy(&b, s) {
			out = append(out, b)
		}
	}
	return out, nil
}

// scheduledTime is the tick a backup was created for (its annotation),
// its creation time if the annotation is unreadable.
func scheduledTime(b *opsv1.ClusterBackup) time.Time {
	if t, err := time.Parse(time.RFC3339, b.Annotations[opsv1.ScheduledTimeAnnotation]); err == nil {
		return t.UTC()
	}
	return b.CreationTimestamp.UTC()
}

// createDue creates the backup of the latest tick not yet handled. The
// last handled tick is status.lastScheduleTime, or the newest tick a
// backup of the schedule was created for (a status lost to a crash), or
// the schedule's creation.
func (r *Reconciler) createDue(ctx context.Context, s *opsv1.ClusterBackupSchedule, sched backupschedule.Schedule, backups []opsv1.ClusterBackup, now time.Time) error {
	after := s.CreationTimestamp.UTC()
	if t := s.Status.LastScheduleTime; t != nil && t.After(after) {
		after = t.UTC()
	}
	for i := range backups {
		if t := scheduledTime(&backups[i]); t.After(after) {
			// A tick handled by a reconcile whose status was lost.
			after = t
			lt := metav1.NewTime(t)
			s.Status.LastScheduleTime, s.Status.LastBackup = &lt, backups[i].Name
		}
	}
	tick, ok := sched.Due(after, now)
	if !ok {
		return nil
	}
	b := r.backupFor(s, tick)
	if err := controllerutil.SetControllerReference(s, b, r.Client.Scheme()); err != nil {
		return fmt.Errorf("owner reference: %w", err)
	}
	err := r.Client.Create(ctx, b, client.FieldOwner(skeleton.FieldOwner))
	switch {
	case apierrors.IsAlreadyExists(err):
		// Created before a crash, or by a reconcile whose status patch
		// was lost: the tick is handled.
	case err != nil:
		return fmt.Errorf("creating ClusterBackup %s/%s: %w", b.Namespace, b.Name, err)
	default:
		skeleton.Event(r.Recorder, s, corev1.EventTypeNormal, "BackupCreated", "Created ClusterBackup %s for the tick at %s", b.Name, tick.Format(time.RFC3339))
		log.FromContext(ctx).Info("Created scheduled backup", "clusterBackup", klog.KObj(b), "tick", tick)
	}
	t := metav1.NewTime(tick)
	s.Status.LastScheduleTime, s.Status.LastBackup = &t, b.Name
	return nil
}

// backupFor is the ClusterBackup of the tick: the schedule's labels plus
// ScheduleLabel, the tick in ScheduledTimeAnnotation, the schedule's
// target and destination, deletionPolicy Retain (retention switches it to
// Delete just before deleting; deleting the schedule keeps the data).
func (r *Reconciler) backupFor(s *opsv1.ClusterBackupSchedule, tick time.Time) *opsv1.ClusterBackup {
	labels := map[string]string{}
	for k, v := range s.Labels {
		labels[k] = v
	}
	labels[opsv1.ScheduleLabel] = s.Name
	return &opsv1.ClusterBackup{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   s.Namespace,
			Name:        opsv1.ScheduledBackupName(s.Name, metav1.NewTime(tick)),
			Labels:      labels,
			Annotations: map[string]string{opsv1.ScheduledTimeAnnotation: tick.UTC().Format(time.RFC3339)},
		},
		Spec: opsv1.ClusterBackupSpec{
			VMCluster:                s.Spec.VMCluster,
			Destination:              s.Spec.Destination,
			Concurrency:              s.Spec.Concurrency,
			SnapshotAuthKeySecretRef: s.Spec.SnapshotAuthKeySecretRef,
			DeletionPolicy:           opsv1.DeletionPolicyRetain,
		},
	}
}

// retain applies retention: the backups it no longer keeps are deleted,
// data included, each with an Event saying why; the kept ones are listed
// in status.
func (r *Reconciler) retain(ctx context.Context, s *opsv1.ClusterBackupSchedule, backups []opsv1.ClusterBackup, now time.Time) error {
	var in []backupschedule.Backup
	byName := map[string]*opsv1.ClusterBackup{}
	var lastOK *opsv1.ClusterBackup
	for i := range backups {
		b := &backups[i]
		if !b.DeletionTimestamp.IsZero() {
			continue
		}
		if b.Status.Phase == opsv1.BackupPhaseSucceeded && (lastOK == nil || scheduledTime(b).After(scheduledTime(lastOK))) {
			lastOK = b
		}
		byName[b.Name] = b
		in = append(in, backupschedule.Backup{Name: b.Name, Scheduled: scheduledTime(b), Phase: backupschedule.Phase(b.Status.Phase)})
	}
	if lastOK != nil {
		s.Status.LastSuccessfulBackup, s.Status.LastSuccessfulTime = lastOK.Name, lastOK.Status.CompletionTime
	}
	d := backupschedule.Retain(in, backupschedule.Policy{KeepLast: s.Spec.KeepLast, KeepDays: s.Spec.KeepDays}, now)
	s.Status.Retained = d.Keep
	for _, del := range d.Delete {
		if err := r.deleteBackup(ctx, byName[del.Name]); err != nil {
			return err
		}
		b := byName[del.Name]
		skeleton.Event(r.Recorder, s, corev1.EventTypeNormal, "BackupDeleted",
			"Deleted ClusterBackup %s: %s; its data under %s is deleted with it (deletionPolicy Delete)", b.Name, del.Reason, b.Spec.Destination.URL)
		log.FromContext(ctx).Info("Retention deleted a backup", "clusterBackup", klog.KObj(b), "reason", del.Reason)
		s.Status.DeletedTotal++
		s.Status.LastDeleted = append([]opsv1.DeletedBackup{{Name: b.Name, Reason: del.Reason, Time: metav1.NewTime(now)}}, s.Status.LastDeleted...)
		if len(s.Status.LastDeleted) > maxLastDeleted {
			s.Status.LastDeleted = s.Status.LastDeleted[:maxLastDeleted]
		}
	}
	if len(d.Delete) > 0 {
		skeleton.Event(r.Recorder, s, corev1.EventTypeNormal, "BackupsRetained", "Kept %d backups (%s): %s",
			len(d.Keep), policyText(s), strings.Join(d.Keep, ", "))
	}
	return nil
}

func policyText(s *opsv1.ClusterBackupSchedule) string {
	var p []string
	if s.Spec.KeepLast != nil {
		p = append(p, fmt.Sprintf("keepLast=%d", *s.Spec.KeepLast))
	}
	if s.Spec.KeepDays != nil {
		p = append(p, fmt.Sprintf("keepDays=%d", *s.Spec.KeepDays))
	}
	return strings.Join(p, ", ")
}

// deleteBackup deletes an expired backup through its own deletion path:
// deletionPolicy Delete first (so its finalizer removes the data), then
// the object, preconditioned on its UID. Both are idempotent: repeated
// after a crash, they do nothing more.
func (r *Reconciler) deleteBackup(ctx context.Context, b *opsv1.ClusterBackup) error {
	if b.Spec.DeletionPolicy != opsv1.DeletionPolicyDelete {
		patch := client.MergeFrom(b.DeepCopy())
		b.Spec.DeletionPolicy = opsv1.DeletionPolicyDelete
		if err := r.Client.Patch(ctx, b, patch, client.FieldOwner(skeleton.FieldOwner)); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("setting deletionPolicy Delete on %s: %w", klog.KObj(b), err)
		}
	}
	err := r.Client.Delete(ctx, b, client.Preconditions{UID: ptr.To(b.UID)}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s: %w", klog.KObj(b), err)
	}
	return nil
}
