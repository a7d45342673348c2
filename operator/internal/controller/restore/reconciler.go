// Package restore reconciles ClusterRestores: a Succeeded ClusterBackup
// written back into the vmstorage replicas of a VMCluster. Per replica:
// vmstorage is stopped (a Stopper holds it), vmrestore writes the
// replica's backup into its volume (a Runner), vmstorage is started again
// and must become Ready — one replica after the other (OneAtATime, the
// default) or all at once (AllAtOnce).
//
// The shape is the ClusterBackup reconciler's: read fresh, decide from the
// recorded status (decide.go), act, patch status once in a defer. Every
// state is recorded before its side effect (Stopping before the hold,
// Restoring with the run's ID before vmrestore starts, Starting before the
// release), and every side effect is idempotent, so a killed operator
// resumes without running vmrestore twice for a replica, and never
// releases a replica whose vmrestore did not succeed.
package restore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrlruntime "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/controller/backup"
	"github.com/tidbcloud/ops-server/operator/internal/exclusion"
	"github.com/tidbcloud/ops-server/operator/internal/outcome"
	"github.com/tidbcloud/ops-server/operator/internal/skeleton"
)

// Finalizer keeps a ClusterRestore until its vmrestore runs are stopped
// and the replicas it stopped without touching their data are released.
const Finalizer = "ops.observability.tidbcloud.com/clusterrestore"

// Options tune the reconciler.
type Options struct {
	// PollInterval is how often a stopping replica, a vmrestore run and a
	// starting replica are checked, and a blocked restore retried.
	PollInterval time.Duration
	// StartTimeout is how long after its creation a restore waits for
	// its VMCluster's vmstorage pods (a vmcluster being created) or for
	// its backup to finish, before it fails.
	StartTimeout time.Duration
	// MaxRetryDelay bounds the backoff after transient errors.
	MaxRetryDelay time.Duration
	// FSRoots are the directories an fs:// source must be inside (the
	// backups' --backup-fs-roots).
	FSRoots []string
	// Runner runs vmrestore and Stopper stops and starts vmstorage
	// (ops-operator: JobRunner and ConfigMapStopper, or in local mode
	// LocalRunner and AnnotationStopper); both nil: restores are refused
	// (InvalidSpec).
	Runner  Runner
	Stopper Stopper
}

// DefaultOptions are the production defaults.
func DefaultOptions() Options {
	return Options{PollInterval: 2 * time.Second, StartTimeout: 30 * time.Minute, MaxRetryDelay: skeleton.DefaultMaxRetryDelay}
}

// Reconciler reconciles ClusterRestores.
type Reconciler struct {
	Client    client.Client
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
	return ctrlruntime.NewControllerManagedBy(mgr).
		For(&opsv1.ClusterRestore{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2, RateLimiter: skeleton.RateLimiter(r.Options.MaxRetryDelay)}).
		Named("clusterrestore").
		Complete(r)
}

// scope is what one reconcile saw; status is derived from it.
type scope struct {
	rs      *opsv1.ClusterRestore
	requeue time.Duration
	// blocked says why nothing moves.
	blocked string
}

// Reconcile follows the skeleton (package skeleton).
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return skeleton.Result(r.reconcile(ctx, req))
}

func (r *Reconciler) reconcile(ctx context.Context, req reconcile.Request) (result reconcile.Result, retErr error) {
	rs := &opsv1.ClusterRestore{}
	if found, err := skeleton.Get(ctx, r.APIReader, req.NamespacedName, rs); !found || err != nil {
		return reconcile.Result{}, err
	}
	if !rs.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, rs)
	}
	if !controllerutil.ContainsFinalizer(rs, Finalizer) {
		patch := client.MergeFrom(rs.DeepCopy())
		controllerutil.AddFinalizer(rs, Finalizer)
		if err := r.Client.Patch(ctx, rs, patch, client.FieldOwner(skeleton.FieldOwner)); err != nil {
			return reconcile.Result{}, fmt.Errorf("adding the finalizer to %s: %w", klog.KObj(rs), err)
		}
	}
	if rs.Status.Phase.IsTerminal() {
		if rs.Status.ObservedGeneration != rs.Generation {
			original := rs.DeepCopy()
			rs.Status.ObservedGeneration = rs.Generation
			return reconcile.Result{}, r.patchStatus(ctx, original, rs)
		}
		return reconcile.Result{}, nil
	}
	original := rs.DeepCopy()
	s := &scope{rs: rs}
	defer func() {
		r.summarize(s)
		if err := r.patchStatus(ctx, original, rs); err != nil {
			retErr = errors.Join(retErr, err)
			return
		}
		if retErr == nil && !rs.Status.Phase.IsTerminal() {
			result = reconcile.Result{RequeueAfter: s.requeue}
			if s.requeue == 0 {
				result.RequeueAfter = time.Millisecond
			}
		}
	}()
	if rs.Status.StartTime == nil {
		return reconcile.Result{}, r.claim(ctx, s)
	}
	if !acting(rs) {
		// The second look (exclusion/restore.go): something that started
		// in the instant before the claim is seen now.
		key, _, err := exclusion.RestoreTarget(ctx, r.APIReader, rs)
		if err != nil {
			return reconcile.Result{}, err
		}
		if blocker, err := exclusion.RestoreBlocker(ctx, r.APIReader, rs, key); err != nil || blocker != "" {
			s.blocked, s.requeue = "Waiting for "+blocker+" to finish", r.Options.PollInterval
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, r.step(ctx, s)
}

func acting(rs *opsv1.ClusterRestore) bool {
	for _, rep := range rs.Status.Replicas {
		if rep.State != opsv1.ReplicaRestorePending && rep.State != "" {
			return true
		}
	}
	return false
}

// claim validates the restore, waits for what it needs (its backup
// finished, the VMCluster's vmstorage pods, nothing else running on the
// VMCluster) and then records its start and one Pending entry per
// replica, before anything is touched.
func (r *Reconciler) claim(ctx context.Context, s *scope) error {
	rs := s.rs
	fail := func(reason, msg string) error { r.fail(rs, reason, msg); return nil }
	wait := func(msg string) error {
		if r.Now().Sub(rs.CreationTimestamp.Time) > r.Options.StartTimeout {
			r.fail(rs, opsv1.FailedReason, fmt.Sprintf("Gave up after %s: %s", r.Options.StartTimeout, msg))
			return nil
		}
		s.blocked, s.requeue = msg, r.Options.PollInterval
		return nil
	}
	if r.Options.Runner == nil || r.Options.Stopper == nil {
		return fail(opsv1.InvalidSpecReason, "this ops-operator restores nothing (no vmrestore runner or vmstorage stopper configured); see docs/backups.md for the manual restore")
	}
	if msg := rs.CrossNamespaceProblem(); msg != "" {
		return fail(opsv1.InvalidSpecReason, msg)
	}
	b := &opsv1.ClusterBackup{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: rs.Namespace, Name: rs.Spec.Backup}, b); err != nil {
		if apierrors.IsNotFound(err) {
			return fail(opsv1.InvalidSpecReason, fmt.Sprintf("spec.backup: ClusterBackup %s/%s not found", rs.Namespace, rs.Spec.Backup))
		}
		return fmt.Errorf("getting ClusterBackup %s/%s: %w", rs.Namespace, rs.Spec.Backup, err)
	}
	if problem := BackupProblem(b, r.Options.FSRoots); problem != "" {
		if !b.Status.Phase.IsTerminal() {
			return wait(problem)
		}
		return fail(opsv1.InvalidSpecReason, "spec.backup: "+problem)
	}
	ns, name := rs.VMClusterKey(b)
	key := types.NamespacedName{Namespace: ns, Name: name}
	if ns != rs.Namespace {
		return fail(opsv1.InvalidSpecReason, fmt.Sprintf("the backup's VMCluster %s is not in the ClusterRestore's namespace %s: give spec.vmCluster", key, rs.Namespace))
	}
	pods, msg, err := r.vmstoragePods(ctx, key)
	if err != nil {
		return err
	}
	if msg != "" {
		return wait(msg)
	}
	var sources []string
	dest := map[string]string{}
	for _, rep := range b.Status.Replicas {
		sources = append(sources, rep.Pod)
		dest[rep.Pod] = rep.Destination
	}
	targets := make([]string, 0, len(pods))
	for n := range pods {
		targets = append(targets, n)
	}
	sort.Strings(targets)
	for _, t := range targets {
		if problem := r.Options.Stopper.Problem(pods[t]); problem != "" {
			return fail(opsv1.InvalidSpecReason, fmt.Sprintf("vmstorage pod %s/%s cannot be stopped for a restore: %s", key.Namespace, t, problem))
		}
	}
	mapping, err := opsv1.PlanReplicaSources(targets, sources, rs.Spec.ReplicaMapping)
	if err != nil {
		return fail(opsv1.InvalidSpecReason, "spec.replicaMapping: "+err.Error())
	}
	if blocker, err := exclusion.RestoreBlocker(ctx, r.APIReader, rs, key); err != nil || blocker != "" {
		if err != nil {
			return err
		}
		return wait("Waiting for " + blocker + " to finish")
	}
	sort.Slice(targets, func(i, j int) bool { return opsv1.PodOrdinal(targets[i]) < opsv1.PodOrdinal(targets[j]) })
	rs.Status.StartTime = r.now()
	for _, t := range targets {
		rs.Status.Replicas = append(rs.Status.Replicas, opsv1.ReplicaRestore{
			Pod: t, PodUID: string(pods[t].UID), FromPod: mapping[t], Source: dest[mapping[t]], State: opsv1.ReplicaRestorePending,
		})
	}
	r.event(rs, corev1.EventTypeNormal, "Planned", "Restoring ClusterBackup %s into the %d vmstorage replicas of VMCluster %s (%s)",
		b.Name, len(targets), key, rs.EffectiveStrategy())
	return nil
}

// BackupProblem says why a ClusterBackup cannot be restored from, "" when
// it can: it must have Succeeded, and every replica's backup must be a
// source the operator may read (an fs:// one inside fsRoots).
func BackupProblem(b *opsv1.ClusterBackup, fsRoots []string) string {
	if b.Status.Phase != opsv1.BackupPhaseSucceeded {
		phase := b.Status.Phase
		if phase == "" {
			phase = opsv1.BackupPhasePending
		}
		return fmt.Sprintf("ClusterBackup %s/%s is %s; only a Succeeded backup can be restored", b.Namespace, b.Name, phase)
	}
	if len(b.Status.Replicas) == 0 {
		return fmt.Sprintf("ClusterBackup %s/%s has no replicas", b.Namespace, b.Name)
	}
	for _, rep := range b.Status.Replicas {
		if rep.Destination == "" {
			return fmt.Sprintf("ClusterBackup %s/%s records no destination for %s", b.Namespace, b.Name, rep.Pod)
		}
		if msg := opsv1.FSDestinationProblem(rep.Destination, fsRoots); msg != "" {
			return fmt.Sprintf("the backup of %s: %s", rep.Pod, msg)
		}
	}
	return ""
}

// vmstoragePods returns the pods of the VMCluster's vmstorage StatefulSet
// by name, or why they are not all there yet.
func (r *Reconciler) vmstoragePods(ctx context.Context, key types.NamespacedName) (map[string]*corev1.Pod, string, error) {
	stsKey := types.NamespacedName{Namespace: key.Namespace, Name: "vmstorage-" + key.Name}
	sts := &appsv1.StatefulSet{}
	if err := r.APIReader.Get(ctx, stsKey, sts); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("Waiting for the vmstorage StatefulSet %s of VMCluster %s", stsKey, key), nil
		}
		return nil, "", fmt.Errorf("getting StatefulSet %s: %w", stsKey, err)
	}
	selector, err := metav1.LabelSelectorAsSelector(sts.Spec.Selector)
	if err != nil {
		return nil, "", fmt.Errorf("selector of StatefulSet %s: %w", stsKey, err)
	}
	list := &corev1.PodList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(key.Namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, "", fmt.Errorf("listing the pods of StatefulSet %s: %w", stsKey, err)
	}
	pods := map[string]*corev1.Pod{}
	for i := range list.Items {
		p := &list.Items[i]
		if ref := metav1.GetControllerOf(p); (ref != nil && ref.UID != sts.UID) || p.DeletionTimestamp != nil {
			continue
		}
		pods[p.Name] = p
	}
	want := int32(1)
	if sts.Spec.Replicas != nil {
		want = *sts.Spec.Replicas
	}
	if want == 0 || int32(len(pods)) != want {
		return nil, fmt.Sprintf("Waiting for the %d vmstorage pods of StatefulSet %s (%d exist)", want, stsKey, len(pods)), nil
	}
	return pods, "", nil
}

// step moves every replica the plan lets move by one step.
func (r *Reconciler) step(ctx context.Context, s *scope) error {
	rs := s.rs
	steps := plan(rs)
	var errs []error
	waiting := false
	for i, st := range steps {
		rep := &rs.Status.Replicas[i]
		var err error
		switch st {
		case stepNone:
			continue
		case stepSkip:
			rep.State, rep.CompletionTime = opsv1.ReplicaRestoreFailed, r.now()
			rep.Error = "not restored: another replica's restore failed"
			continue
		case stepMarkStopping:
			rep.State, rep.StartTime = opsv1.ReplicaRestoreStopping, r.now()
			continue
		}
		pod, err := r.pod(ctx, rs, rep)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if pod == nil {
			waiting = true
			continue
		}
		var moved bool
		switch st {
		case stepStop:
			moved, err = r.stop(ctx, rs, rep, pod)
		case stepRestore:
			moved, err = r.restore(ctx, rs, rep, pod)
		case stepStart:
			moved, err = r.start(ctx, rs, rep, pod)
		}
		if err != nil {
			if outcome.IsTerminal(err) {
				r.failReplica(rs, rep, err.Error())
				continue
			}
			errs = append(errs, fmt.Errorf("%s: %w", rep.Pod, err))
			continue
		}
		if !moved {
			waiting = true
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if done, ok, _ := progress(rs.Status.Replicas); done == len(rs.Status.Replicas) {
		if ok == done {
			// A vmcluster seeded by this restore by an earlier release
			// was created with the annotation hold in its template (new
			// ones are pre-held in the hold ConfigMap, whose keys the
			// replicas' releases removed): lift it before Succeeded is
			// recorded (idempotent; a failed restore keeps it).
			if err := r.unholdTemplate(ctx, rs); err != nil {
				return err
			}
		}
		r.finish(rs)
		return nil
	}
	if waiting {
		s.requeue = r.Options.PollInterval
	}
	return nil
}

// pod returns the replica's pod now, nil when it does not exist (the
// StatefulSet re-creates it; the restore waits).
func (r *Reconciler) pod(ctx context.Context, rs *opsv1.ClusterRestore, rep *opsv1.ReplicaRestore) (*corev1.Pod, error) {
	ns, _ := rs.VMClusterKey(nil)
	p := &corev1.Pod{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ns, Name: rep.Pod}, p); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting pod %s/%s: %w", ns, rep.Pod, err)
	}
	if p.DeletionTimestamp != nil {
		return nil, nil
	}
	return p, nil
}

func (r *Reconciler) owner(rs *opsv1.ClusterRestore) string { return rs.Namespace + "/" + rs.Name }

// credentials is the restored backup's destination Secret (nil for the
// ambient identity), for the vmrestore Job.
func (r *Reconciler) credentials(ctx context.Context, rs *opsv1.ClusterRestore) (*opsv1.SecretKeyReference, error) {
	b := &opsv1.ClusterBackup{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: rs.Namespace, Name: rs.Spec.Backup}, b); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, outcome.Terminal(fmt.Errorf("ClusterBackup %s/%s was deleted before its restore started", rs.Namespace, rs.Spec.Backup))
		}
		return nil, fmt.Errorf("getting ClusterBackup %s/%s: %w", rs.Namespace, rs.Spec.Backup, err)
	}
	return b.Spec.Destination.CredentialsSecretRef, nil
}

// stop holds the replica; once it stopped, Restoring is recorded with the
// run's ID (the run starts on the next pass).
func (r *Reconciler) stop(ctx context.Context, rs *opsv1.ClusterRestore, rep *opsv1.ReplicaRestore, pod *corev1.Pod) (bool, error) {
	if stopped, err := r.Options.Stopper.Hold(ctx, pod, r.owner(rs)); err != nil || !stopped {
		return false, err
	}
	rep.State, rep.RunID = opsv1.ReplicaRestoreRestoring, runID(rs, rep.Pod)
	r.replicaEvent(rs, rep, corev1.EventTypeNormal, "ReplicaStopped", "vmstorage of %s stopped; restoring it from %s", rep.Pod, rep.Source)
	return true, nil
}

// restore keeps the hold (a pod re-created meanwhile is held again before
// anything else), starts the replica's vmrestore once and observes it.
func (r *Reconciler) restore(ctx context.Context, rs *opsv1.ClusterRestore, rep *opsv1.ReplicaRestore, pod *corev1.Pod) (bool, error) {
	if stopped, err := r.Options.Stopper.Hold(ctx, pod, r.owner(rs)); err != nil || !stopped {
		return false, err
	}
	ref := backup.UploadRef{Namespace: pod.Namespace, ID: rep.RunID}
	st, err := r.Options.Runner.Status(ctx, ref)
	if err != nil {
		return false, err
	}
	switch st.State {
	case backup.UploadNotFound:
		creds, err := r.credentials(ctx, rs)
		if err != nil {
			return false, err
		}
		if err := r.Options.Runner.Start(ctx, ref, rs, pod, rep.Source, creds); err != nil {
			return false, err
		}
		r.replicaEvent(rs, rep, corev1.EventTypeNormal, "RestoreStarted", "vmrestore %s started for %s from %s", rep.RunID, rep.Pod, rep.Source)
		return false, nil
	case backup.UploadRunning:
		return false, nil
	case backup.UploadSucceeded:
		rep.State = opsv1.ReplicaRestoreStarting
		r.replicaEvent(rs, rep, corev1.EventTypeNormal, "ReplicaRestored", "vmrestore %s restored %s; starting its vmstorage", rep.RunID, rep.Pod)
		return true, nil
	default:
		msg := "vmrestore failed"
		if st.Message != "" {
			msg += ": " + st.Message
		}
		return false, outcome.Terminal(errors.New(msg + "; its vmstorage stays stopped (the data is incomplete): restore again, or " + r.Options.Stopper.ReleaseHint(pod) + " to start it as it is"))
	}
}

// start releases the hold and waits for vmstorage to run and be Ready.
func (r *Reconciler) start(ctx context.Context, rs *opsv1.ClusterRestore, rep *opsv1.ReplicaRestore, pod *corev1.Pod) (bool, error) {
	if err := r.Options.Stopper.Release(ctx, pod); err != nil {
		return false, err
	}
	if !r.Options.Stopper.Running(pod) {
		return false, nil
	}
	rep.State, rep.CompletionTime = opsv1.ReplicaRestoreSucceeded, r.now()
	r.replicaEvent(rs, rep, corev1.EventTypeNormal, "ReplicaSucceeded", "%s restored and Ready", rep.Pod)
	return true, nil
}

func (r *Reconciler) failReplica(rs *opsv1.ClusterRestore, rep *opsv1.ReplicaRestore, msg string) {
	if len(msg) > 4000 {
		msg = msg[:3997] + "..."
	}
	rep.State, rep.Error, rep.CompletionTime = opsv1.ReplicaRestoreFailed, msg, r.now()
	r.replicaEvent(rs, rep, corev1.EventTypeWarning, "ReplicaFailed", "Restore of %s failed: %s", rep.Pod, msg)
}

// fail ends a restore that cannot be carried out, before it touched
// anything.
func (r *Reconciler) fail(rs *opsv1.ClusterRestore, reason, msg string) {
	rs.Status.Phase = opsv1.RestorePhaseFailed
	skeleton.Finish(r.Recorder, rs, &rs.Status.Conditions, &rs.Status.CompletionTime, r.Now(),
		skeleton.End{Phase: string(opsv1.RestorePhaseFailed), Ready: metav1.ConditionFalse, Reason: reason, Message: msg, Warning: true})
}

// finish sets the terminal phase once every replica is finished.
func (r *Reconciler) finish(rs *opsv1.ClusterRestore) {
	_, ok, _ := progress(rs.Status.Replicas)
	total := len(rs.Status.Replicas)
	msg := fmt.Sprintf("Restored %d of %d replicas from ClusterBackup %s", ok, total, rs.Spec.Backup)
	if ok == total {
		rs.Status.Phase = opsv1.RestorePhaseSucceeded
		skeleton.Finish(r.Recorder, rs, &rs.Status.Conditions, &rs.Status.CompletionTime, r.Now(),
			skeleton.End{Phase: string(opsv1.RestorePhaseSucceeded), Ready: metav1.ConditionTrue, Reason: opsv1.SucceededReason, Message: msg})
		return
	}
	var failed []string
	for _, rep := range rs.Status.Replicas {
		if rep.State == opsv1.ReplicaRestoreFailed {
			failed = append(failed, rep.Pod+": "+rep.Error)
		}
	}
	r.fail(rs, opsv1.FailedReason, msg+"; "+strings.Join(failed, "; "))
}

// summarize derives phase (while running), progress, conditions and
// observedGeneration.
func (r *Reconciler) summarize(s *scope) {
	rs := s.rs
	st := &rs.Status
	finished, ok, p := progress(st.Replicas)
	st.Progress = p
	if st.Phase == "" {
		st.Phase = opsv1.RestorePhasePending
	}
	if !st.Phase.IsTerminal() && acting(rs) {
		st.Phase = opsv1.RestorePhaseRunning
	}
	switch st.Phase {
	case opsv1.RestorePhaseSucceeded:
		skeleton.MarkSucceeded(&st.Conditions, rs.Generation, opsv1.SucceededReason, fmt.Sprintf("Restored %d of %d replicas", ok, len(st.Replicas)))
		st.ObservedGeneration = rs.Generation
	case opsv1.RestorePhaseFailed:
		reason, msg := opsv1.FailedReason, "Restore failed"
		for _, c := range st.Conditions {
			if c.Type == opsv1.ReadyCondition && c.Status == metav1.ConditionFalse {
				reason, msg = c.Reason, c.Message
			}
		}
		skeleton.MarkFailed(&st.Conditions, rs.Generation, reason, msg)
		st.ObservedGeneration = rs.Generation
	default:
		reason, msg := opsv1.ProgressingReason, fmt.Sprintf("Restored %d of %d replicas", ok, len(st.Replicas))
		if failed := finished - ok; failed > 0 {
			msg += fmt.Sprintf(", %d failed", failed)
		}
		if s.blocked != "" {
			reason, msg = opsv1.BlockedReason, s.blocked
		}
		skeleton.MarkRunning(&st.Conditions, rs.Generation, reason, msg)
	}
}

// reconcileDelete stops vmrestore runs and releases the replicas whose
// data is whole (stopped but not yet written, or restored); a replica
// whose vmrestore started and did not succeed stays held (docs/backups.md).
func (r *Reconciler) reconcileDelete(ctx context.Context, rs *opsv1.ClusterRestore) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(rs, Finalizer) {
		return reconcile.Result{}, nil
	}
	for i := range rs.Status.Replicas {
		rep := &rs.Status.Replicas[i]
		pod, err := r.pod(ctx, rs, rep)
		if err != nil {
			return reconcile.Result{}, err
		}
		if rep.RunID != "" && r.Options.Runner != nil {
			ns, _ := rs.VMClusterKey(nil)
			st, err := r.Options.Runner.Status(ctx, backup.UploadRef{Namespace: ns, ID: rep.RunID})
			if err != nil {
				return reconcile.Result{}, err
			}
			if st.State == backup.UploadRunning {
				if err := r.Options.Runner.Delete(ctx, backup.UploadRef{Namespace: ns, ID: rep.RunID}); err != nil {
					return reconcile.Result{}, err
				}
			}
		}
		whole := rep.State == opsv1.ReplicaRestoreStopping || rep.State == opsv1.ReplicaRestoreStarting || rep.State == opsv1.ReplicaRestoreSucceeded
		if pod == nil || !whole || r.Options.Stopper == nil {
			continue
		}
		if owner, err := r.Options.Stopper.HeldBy(ctx, pod); err != nil {
			return reconcile.Result{}, err
		} else if owner == r.owner(rs) {
			if err := r.Options.Stopper.Release(ctx, pod); err != nil {
				return reconcile.Result{}, err
			}
		}
	}
	patch := client.MergeFrom(rs.DeepCopy())
	controllerutil.RemoveFinalizer(rs, Finalizer)
	if err := r.Client.Patch(ctx, rs, patch, client.FieldOwner(skeleton.FieldOwner)); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("removing the finalizer of %s: %w", klog.KObj(rs), err)
	}
	log.FromContext(ctx).Info("Deleted ClusterRestore", "clusterRestore", klog.KObj(rs))
	return reconcile.Result{}, nil
}

func (r *Reconciler) now() *metav1.Time {
	t := metav1.NewTime(r.Now())
	return &t
}

func (r *Reconciler) event(rs *opsv1.ClusterRestore, kind, reason, format string, args ...any) {
	skeleton.Event(r.Recorder, rs, kind, reason, format, args...)
}

func (r *Reconciler) replicaEvent(rs *opsv1.ClusterRestore, rep *opsv1.ReplicaRestore, kind, reason, format string, args ...any) {
	if r.Recorder == nil {
		return
	}
	ns, _ := rs.VMClusterKey(nil)
	pod := &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: rep.Pod, UID: types.UID(rep.PodUID)}
	r.Recorder.Eventf(rs, pod, kind, reason, "Reconcile", format, args...)
}

func (r *Reconciler) patchStatus(ctx context.Context, original, rs *opsv1.ClusterRestore) error {
	return skeleton.PatchStatus(ctx, r.Client, original, rs, func(o *opsv1.ClusterRestore) any { return o.Status })
}
