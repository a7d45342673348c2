package backup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/backupdata"
	"github.com/tidbcloud/ops-server/operator/internal/exclusion"
	"github.com/tidbcloud/ops-server/operator/internal/skeleton"
	"github.com/tidbcloud/ops-server/operator/internal/vmsnapshot"
	"github.com/tidbcloud/ops-server/operator/internal/vmstorage"
)

// observe reads the VMCluster (operational? rolling out?), its vmstorage
// StatefulSet and that StatefulSet's pods, fresh from the API server.
func (r *Reconciler) observe(ctx context.Context, b *opsv1.ClusterBackup) (*world, error) {
	ns, name := b.VMClusterKey()
	key := types.NamespacedName{Namespace: ns, Name: name}
	stsKey := types.NamespacedName{Namespace: ns, Name: statefulSetName(name)}
	w := &world{pods: map[string]*corev1.Pod{}, taken: map[string]bool{}}
	if err := r.observeOthers(ctx, b, w); err != nil {
		return nil, err
	}
	rollout, err := exclusion.Rollout(ctx, r.APIReader, key)
	if err != nil {
		return nil, err
	}
	w.rollout = rollout
	// A claimed restore of the VMCluster goes first (exclusion/restore.go).
	var self client.Object
	if len(b.Status.Replicas) > 0 {
		self = b
	}
	if w.restore, err = exclusion.ActiveRestore(ctx, r.APIReader, key, self); err != nil {
		return nil, err
	}
	if w.operation, err = exclusion.ActiveOperation(ctx, r.APIReader, key); err != nil {
		return nil, err
	}
	ro, err := vmstorage.RolloutStatus(ctx, r.APIReader, key, 0, stsKey, "", "", false)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, err
	default:
		w.vmcluster, w.ready, w.readyMsg = true, ro.Done, ro.Message
	}
	sts := &appsv1.StatefulSet{}
	if err := r.APIReader.Get(ctx, stsKey, sts); err != nil {
		if apierrors.IsNotFound(err) {
			return w, nil
		}
		return nil, fmt.Errorf("getting StatefulSet %s: %w", stsKey, err)
	}
	selector, err := metav1.LabelSelectorAsSelector(sts.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("selector of StatefulSet %s: %w", stsKey, err)
	}
	pods := &corev1.PodList{}
	if err := r.APIReader.List(ctx, pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, fmt.Errorf("listing the pods of StatefulSet %s: %w", stsKey, err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID != sts.UID {
			continue // selected, but someone else's
		}
		if p.DeletionTimestamp != nil {
			continue // going away: not a replica to back up
		}
		w.pods[p.Name] = p
	}
	return w, nil
}

// observeOthers looks at the other ClusterBackups of the same VMCluster
// (from the cache: the informer delivers them in order, so an older backup
// is always there when a newer one is reconciled): the snapshots they
// record, and the oldest older one still taking its snapshots.
func (r *Reconciler) observeOthers(ctx context.Context, b *opsv1.ClusterBackup, w *world) error {
	list := &opsv1.ClusterBackupList{}
	if err := r.Client.List(ctx, list); err != nil {
		return fmt.Errorf("listing ClusterBackups: %w", err)
	}
	ns, name := b.VMClusterKey()
	for i := range list.Items {
		o := &list.Items[i]
		if ons, oname := o.VMClusterKey(); o.UID == b.UID || ons != ns || oname != name {
			continue
		}
		snapshotting := false
		for _, rep := range o.Status.Replicas {
			if rep.SnapshotName != "" {
				w.taken[rep.SnapshotName] = true
			}
			if rep.State == opsv1.ReplicaStatePending || rep.State == "" || (rep.State == opsv1.ReplicaStateSnapshotting && rep.SnapshotName == "") {
				snapshotting = true
			}
		}
		if len(o.Status.Replicas) == 0 {
			snapshotting = true
		}
		if o.Status.Phase.IsTerminal() || o.DeletionTimestamp != nil || !snapshotting || !exclusion.Older(o, b) {
			continue
		}
		w.waitFor = o.Namespace + "/" + o.Name
	}
	return nil
}

// plan writes one entry per vmstorage pod — pod, UID, node, endpoint,
// destination — before anything is called.
func (r *Reconciler) plan(ctx context.Context, s *scope) error {
	b := s.b
	ns, name := b.VMClusterKey()
	names := make([]string, 0, len(s.w.pods))
	for n := range s.w.pods {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		pod := s.w.pods[n]
		rep := opsv1.ReplicaBackup{
			Pod: n, PodUID: string(pod.UID), Node: pod.Spec.NodeName,
			Destination: replicaDestination(b, n), State: opsv1.ReplicaStatePending,
		}
		ep, err := r.Options.Resolver(ctx, pod)
		if err != nil {
			rep.State, rep.Error, rep.CompletionTime = opsv1.ReplicaStateFailed, sanitize("Resolving the vmstorage endpoint: "+err.Error()), r.now()
		}
		rep.Endpoint = ep
		b.Status.Replicas = append(b.Status.Replicas, rep)
	}
	b.Status.Phase = opsv1.BackupPhasePending
	r.event(b, corev1.EventTypeNormal, "Planned", "Backing up %d vmstorage replicas of VMCluster %s/%s to %s", len(names), ns, name, b.Spec.Destination.URL)
	return nil
}

// markSnapshotting records every pending replica as Snapshotting, with its
// start time, before the first snapshot call. A replica whose pod was
// recreated since the plan is refreshed first.
func (r *Reconciler) markSnapshotting(ctx context.Context, s *scope, idx []int) {
	b := s.b
	now := r.now()
	for _, i := range idx {
		rep := &b.Status.Replicas[i]
		pod := s.w.pods[rep.Pod]
		if string(pod.UID) != rep.PodUID {
			ep, err := r.Options.Resolver(ctx, pod)
			if err != nil {
				r.failReplica(b, rep, "Resolving the vmstorage endpoint: "+err.Error())
				continue
			}
			rep.PodUID, rep.Node, rep.Endpoint = string(pod.UID), pod.Spec.NodeName, ep
		}
		rep.State, rep.StartTime = opsv1.ReplicaStateSnapshotting, now
	}
	if b.Status.StartTime == nil {
		b.Status.StartTime = now
	}
	b.Status.Phase = opsv1.BackupPhaseRunning
}

// snapshot takes the snapshot of each replica that has none, all at once
// so the snapshots of a cluster are close in time. Before creating one, it
// lists the replica's snapshots and adopts one stamped at or after the
// replica's start (less the clock skew) that no other ClusterBackup
// records: that is the snapshot of a create call whose answer was lost
// when the operator stopped, so a restart never takes a second one. (Backups
// of one VMCluster take their snapshots one after the other, see
// world.waitFor, so no other backup's call can be in flight.) An unreachable vmstorage is retried until
// SnapshotTimeout; an error answer fails the replica at once.
func (r *Reconciler) snapshot(ctx context.Context, s *scope, idx []int) error {
	b := s.b
	key, err := r.authKey(ctx, b)
	if err != nil {
		if !IsPermanent(err) {
			return err
		}
		for _, i := range idx {
			r.failReplica(b, &b.Status.Replicas[i], err.Error())
		}
		return nil
	}
	type result struct {
		name    string
		adopted bool
		err     error
	}
	results := make([]result, len(idx))
	var wg sync.WaitGroup
	for k, i := range idx {
		rep := b.Status.Replicas[i]
		wg.Go(func() {
			name, adopted, err := r.takeSnapshot(ctx, &rep, key, s.w.taken)
			results[k] = result{name, adopted, err}
		})
	}
	wg.Wait()
	for k, i := range idx {
		rep, res := &b.Status.Replicas[i], results[k]
		switch {
		case res.err == nil:
			rep.SnapshotName = res.name
			verb := "Created"
			if res.adopted {
				verb = "Adopted"
			}
			r.replicaEvent(b, rep, corev1.EventTypeNormal, "Snapshot"+verb, "%s snapshot %s on %s", verb, res.name, rep.Pod)
		case vmsnapshot.IsTemporary(res.err) && !r.expired(rep.StartTime, r.Options.SnapshotTimeout):
			s.requeue = r.Options.RetryInterval
			log.FromContext(ctx).V(1).Info("vmstorage unreachable; retrying", "pod", rep.Pod, "error", res.err.Error())
		default:
			r.failReplica(b, rep, "Taking the snapshot: "+res.err.Error())
		}
	}
	return nil
}

func (r *Reconciler) takeSnapshot(ctx context.Context, rep *opsv1.ReplicaBackup, key string, taken map[string]bool) (string, bool, error) {
	c, err := r.snapshotClient(rep.Endpoint, key)
	if err != nil {
		return "", false, err
	}
	ctx, cancel := r.callCtx(ctx)
	defer cancel()
	names, err := c.List(ctx)
	if err != nil {
		return "", false, err
	}
	if rep.StartTime != nil {
		since := rep.StartTime.Add(-snapshotClockSkew).Truncate(time.Second)
		var adopt string
		for _, n := range names {
			t, err := vmsnapshot.NameTime(n)
			if err == nil && !t.Before(since) && !taken[n] && n > adopt {
				adopt = n
			}
		}
		if adopt != "" {
			return adopt, true, nil
		}
	}
	name, err := c.Create(ctx)
	return name, false, err
}

func (r *Reconciler) expired(since *metav1.Time, limit time.Duration) bool {
	return limit > 0 && since != nil && r.Now().Sub(since.Time) > limit
}

// poll starts each uploading replica's upload if its runner has never
// seen it, or observes it: a finished upload is checked (fs:// markers when
// the runner shares our filesystem), its snapshot deleted and the replica
// finished.
func (r *Reconciler) poll(ctx context.Context, s *scope, idx []int) error {
	b := s.b
	ns, _ := b.VMClusterKey()
	runner := r.Options.Runner
	s.requeue = r.Options.PollInterval
	var errs []error
	for _, i := range idx {
		if err := ctx.Err(); err != nil {
			// Shutting down: act no further on a context that ended.
			errs = append(errs, err)
			break
		}
		rep := &b.Status.Replicas[i]
		ref := UploadRef{Namespace: ns, ID: rep.JobName}
		st, err := runner.Status(ctx, ref)
		if err != nil {
			errs = append(errs, fmt.Errorf("upload of %s: %w", rep.Pod, err))
			continue
		}
		switch st.State {
		case UploadNotFound:
			if err := r.startUpload(ctx, s, rep, ref); err != nil {
				if IsPermanent(err) {
					r.failReplica(b, rep, "Starting the upload: "+err.Error())
					r.deleteSnapshot(ctx, s, rep)
					continue
				}
				errs = append(errs, fmt.Errorf("starting the upload of %s: %w", rep.Pod, err))
			}
		case UploadRunning:
		case UploadSucceeded:
			bytes := st.Bytes
			if p, ok := fsPath(rep.Destination); ok && sharesFilesystem(runner) {
				n, err := inspectFSBackup(p)
				if err != nil {
					r.deleteSnapshot(ctx, s, rep)
					r.failReplica(b, rep, "vmbackup exited successfully, but "+err.Error())
					continue
				}
				bytes = n
			}
			r.deleteSnapshot(ctx, s, rep)
			rep.State, rep.Bytes, rep.CompletionTime, rep.Error = opsv1.ReplicaStateSucceeded, bytes, r.now(), ""
			r.replicaEvent(b, rep, corev1.EventTypeNormal, "ReplicaSucceeded", "Backed up %s to %s (%d bytes)", rep.Pod, rep.Destination, bytes)
		case UploadFailed:
			r.deleteSnapshot(ctx, s, rep)
			r.failReplica(b, rep, uploadError(st))
		}
	}
	return errors.Join(errs...)
}

func (r *Reconciler) startUpload(ctx context.Context, s *scope, rep *opsv1.ReplicaBackup, ref UploadRef) error {
	b := s.b
	pod := s.w.pods[rep.Pod]
	others := &opsv1.ClusterBackupList{}
	if err := r.Client.List(ctx, others, client.InNamespace(b.Namespace)); err != nil {
		return fmt.Errorf("listing ClusterBackups for the previous backup: %w", err)
	}
	if c := b.Spec.Destination.CredentialsSecretRef; c != nil {
		// The Job mounts the Secret: check the opt-in label right before.
		if _, err := r.backupSecret(ctx, b.Namespace, c.Name); err != nil {
			return fmt.Errorf("credentials: %w", err)
		}
	}
	u := Upload{
		UploadRef: ref, Backup: b, Pod: pod, SnapshotName: rep.SnapshotName,
		Destination: rep.Destination, Origin: chooseOrigin(b, rep.Pod, others.Items),
		Credentials: b.Spec.Destination.CredentialsSecretRef,
	}
	if err := r.Options.Runner.Start(ctx, u); err != nil {
		return err
	}
	if u.Origin != "" {
		r.replicaEvent(b, rep, corev1.EventTypeNormal, "UploadStarted", "Started vmbackup %s for %s (snapshot %s) to %s, server-side copying from %s", ref.ID, rep.Pod, rep.SnapshotName, rep.Destination, u.Origin)
	} else {
		r.replicaEvent(b, rep, corev1.EventTypeNormal, "UploadStarted", "Started vmbackup %s for %s (snapshot %s) to %s", ref.ID, rep.Pod, rep.SnapshotName, rep.Destination)
	}
	s.requeue = min(s.requeue, r.Options.PollInterval)
	return nil
}

func sharesFilesystem(r Runner) bool {
	sf, ok := r.(SharedFilesystem)
	return ok && sf.SharesFilesystem()
}

// deleteSnapshot deletes a replica's snapshot from its vmstorage; one
// already gone is fine. A failure is reported as a Warning event and does
// not hold the backup up: the snapshot is retried when the ClusterBackup
// is deleted, and vmstorage's -snapshotsMaxAge removes leftovers.
func (r *Reconciler) deleteSnapshot(ctx context.Context, s *scope, rep *opsv1.ReplicaBackup) {
	if rep.SnapshotName == "" {
		return
	}
	if err := r.deleteSnapshotAt(ctx, s.b, r.currentEndpoint(ctx, s.w, rep), rep.SnapshotName); err != nil {
		r.replicaEvent(s.b, rep, corev1.EventTypeWarning, "SnapshotDeleteFailed", "Deleting snapshot %s of %s: %s", rep.SnapshotName, rep.Pod, err.Error())
	}
}

func (r *Reconciler) deleteSnapshotAt(ctx context.Context, b *opsv1.ClusterBackup, endpoint, name string) error {
	key, err := r.authKey(ctx, b)
	if err != nil {
		return err
	}
	c, err := r.snapshotClient(endpoint, key)
	if err != nil {
		return err
	}
	ctx, cancel := r.callCtx(ctx)
	defer cancel()
	if err := c.Delete(ctx, name); err != nil && !errors.Is(err, vmsnapshot.ErrNotFound) {
		return err
	}
	return nil
}

// currentEndpoint is the replica's endpoint now: the recorded one, or the
// recreated pod's when its pod changed.
func (r *Reconciler) currentEndpoint(ctx context.Context, w *world, rep *opsv1.ReplicaBackup) string {
	if w != nil {
		if pod := w.pods[rep.Pod]; pod != nil && string(pod.UID) != rep.PodUID {
			if ep, err := r.Options.Resolver(ctx, pod); err == nil {
				return ep
			}
		}
	}
	return rep.Endpoint
}

// lost fails the replicas whose pod went away or was recreated after
// their backup started: the snapshot was taken of a pod that no longer
// runs, its data volume may have moved with the new pod, and a Job pinned
// to the old node would wait for ever. The upload is stopped and the
// snapshot deleted (from the new pod, which serves the same volume). A new
// ClusterBackup backs the replica up again.
func (r *Reconciler) lost(ctx context.Context, s *scope, idx []int) {
	b := s.b
	ns, _ := b.VMClusterKey()
	for _, i := range idx {
		rep := &b.Status.Replicas[i]
		msg := fmt.Sprintf("Pod %s no longer exists", rep.Pod)
		if pod := s.w.pods[rep.Pod]; pod != nil {
			msg = fmt.Sprintf("Pod %s was recreated during the backup (UID %s, now %s); create a new ClusterBackup to back it up", rep.Pod, rep.PodUID, pod.UID)
		}
		if rep.JobName != "" {
			if err := r.Options.Runner.Delete(ctx, UploadRef{Namespace: ns, ID: rep.JobName}); err != nil {
				log.FromContext(ctx).Error(err, "Stopping the upload of a lost replica", "pod", rep.Pod)
			}
		}
		r.deleteSnapshot(ctx, s, rep)
		r.failReplica(b, rep, msg)
	}
}

func (r *Reconciler) failReplica(b *opsv1.ClusterBackup, rep *opsv1.ReplicaBackup, msg string) {
	rep.State, rep.Error, rep.CompletionTime = opsv1.ReplicaStateFailed, sanitize(msg), r.now()
	if rep.StartTime == nil {
		rep.StartTime = rep.CompletionTime
	}
	r.replicaEvent(b, rep, corev1.EventTypeWarning, "ReplicaFailed", "Backup of %s failed: %s", rep.Pod, rep.Error)
}

// failBackup ends a backup that could not be carried out: replicas not
// finished are failed with the same reason.
func (r *Reconciler) failBackup(b *opsv1.ClusterBackup, reason, msg string) {
	for i := range b.Status.Replicas {
		if rep := &b.Status.Replicas[i]; !rep.State.IsTerminal() {
			rep.State, rep.Error, rep.CompletionTime = opsv1.ReplicaStateFailed, sanitize(msg), r.now()
		}
	}
	b.Status.Phase = opsv1.BackupPhaseFailed
	skeleton.Finish(r.Recorder, b, &b.Status.Conditions, &b.Status.CompletionTime, r.Now(),
		skeleton.End{Phase: string(opsv1.BackupPhaseFailed), Ready: metav1.ConditionFalse, Reason: reason, Message: msg, Warning: true})
}

// finish sets the terminal phase once every replica is finished.
func (r *Reconciler) finish(b *opsv1.ClusterBackup) {
	ok, failed := 0, []string{}
	for _, rep := range b.Status.Replicas {
		if rep.State == opsv1.ReplicaStateSucceeded {
			ok++
		} else {
			failed = append(failed, rep.Pod+" failed: "+rep.Error)
		}
	}
	total := len(b.Status.Replicas)
	msg := fmt.Sprintf("Backed up %d of %d replicas", ok, total)
	if len(failed) > 0 {
		msg += "; " + strings.Join(failed, "; ")
	}
	end := skeleton.End{Phase: string(opsv1.BackupPhaseSucceeded), Ready: metav1.ConditionTrue, Reason: opsv1.SucceededReason, Message: msg}
	switch {
	case ok == total:
	case ok > 0:
		end = skeleton.End{Phase: string(opsv1.BackupPhasePartiallyFailed), Ready: metav1.ConditionFalse, Reason: opsv1.PartiallyFailedReason, Message: msg, Warning: true}
	default:
		end = skeleton.End{Phase: string(opsv1.BackupPhaseFailed), Ready: metav1.ConditionFalse, Reason: opsv1.FailedReason, Message: msg, Warning: true}
	}
	b.Status.Phase = opsv1.BackupPhase(end.Phase)
	skeleton.Finish(r.Recorder, b, &b.Status.Conditions, &b.Status.CompletionTime, r.Now(), end)
}

// reconcileDelete stops the uploads, deletes the snapshots the backup
// still holds and, with deletionPolicy Delete, what it wrote, then lets
// the object go.
func (r *Reconciler) reconcileDelete(ctx context.Context, b *opsv1.ClusterBackup) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(b, Finalizer) {
		return reconcile.Result{}, nil
	}
	logger := log.FromContext(ctx)
	ns, _ := b.VMClusterKey()
	var w *world
	if obs, err := r.observe(ctx, b); err == nil {
		w = obs
	}
	for i := range b.Status.Replicas {
		rep := &b.Status.Replicas[i]
		if rep.JobName != "" {
			if err := r.Options.Runner.Delete(ctx, UploadRef{Namespace: ns, ID: rep.JobName}); err != nil {
				return reconcile.Result{}, err
			}
		}
		if rep.SnapshotName == "" {
			continue
		}
		err := r.deleteSnapshotAt(ctx, b, r.currentEndpoint(ctx, w, rep), rep.SnapshotName)
		switch {
		case err == nil:
		case !rep.State.IsTerminal() && vmsnapshot.IsTemporary(err) && !r.expired(b.DeletionTimestamp, r.Options.SnapshotTimeout):
			// The backup held this snapshot when it was deleted: retry
			// for a while before leaving it behind.
			return reconcile.Result{RequeueAfter: r.Options.RetryInterval}, nil
		default:
			r.replicaEvent(b, rep, corev1.EventTypeWarning, "SnapshotDeleteFailed", "Leaving snapshot %s on %s: %s", rep.SnapshotName, rep.Pod, err.Error())
		}
	}
	if b.Spec.DeletionPolicy == opsv1.DeletionPolicyDelete {
		if err := r.deleteData(ctx, b); err != nil {
			// Retried (the finalizer stays) for a while, then given
			// up with a Warning (deleteData).
			return reconcile.Result{}, err
		}
	}
	patch := client.MergeFrom(b.DeepCopy())
	controllerutil.RemoveFinalizer(b, Finalizer)
	if err := r.Client.Patch(ctx, b, patch, client.FieldOwner(FieldOwner)); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("removing the finalizer of %s: %w", klog.KObj(b), err)
	}
	logger.Info("Deleted ClusterBackup", "clusterBackup", klog.KObj(b), "deletionPolicy", b.Spec.DeletionPolicy)
	return reconcile.Result{}, nil
}

// deleteData removes what the backup wrote, for deletionPolicy Delete
// (whether the backup was deleted by hand or by a schedule's retention):
// fs:// destinations the operator can see (a runner sharing its
// filesystem) here, s3://, gs:// and azblob:// through package backupdata
// with the destination's credentials. fs:// data ops-operator cannot see is
// kept and a DataRetained Warning says so. An object-store error is returned (the deletion is
// retried) until SnapshotTimeout after the deletion was requested; then
// the data is left with a DataDeleteFailed Warning.
func (r *Reconciler) deleteData(ctx context.Context, b *opsv1.ClusterBackup) error {
	var dirs []string
	for _, rep := range b.Status.Replicas {
		if rep.Destination != "" && !slices.Contains(dirs, rep.Destination) {
			dirs = append(dirs, rep.Destination)
		}
	}
	_, isFS := fsPath(b.Spec.Destination.URL)
	if isFS {
		if msg := opsv1.FSDestinationProblem(b.Spec.Destination.URL, r.Options.FSRoots); msg != "" {
			r.event(b, corev1.EventTypeWarning, "DataRetained", "deletionPolicy Delete: the data under %s was kept: %s", b.Spec.Destination.URL, msg)
			return nil
		}
	}
	if !isFS && backupdata.Supported(b.Spec.Destination.URL) {
		return r.deleteObjectData(ctx, b, dirs)
	}
	if !isFS {
		// A scheme the CRD refuses (s3, gs, azblob and fs are all there is).
		r.event(b, corev1.EventTypeWarning, "DataRetained",
			"deletionPolicy Delete: removing backups from %s is not supported by ops-operator; the data under %s was kept",
			strings.SplitN(b.Spec.Destination.URL, "://", 2)[0]+"://", b.Spec.Destination.URL)
		return nil
	}
	if !sharesFilesystem(r.Options.Runner) {
		r.event(b, corev1.EventTypeWarning, "DataRetained",
			"deletionPolicy Delete: the fs:// data under %s is on the backup Jobs' volume, not on ops-operator's filesystem; it was kept",
			b.Spec.Destination.URL)
		return nil
	}
	for _, d := range dirs {
		if err := removeFSBackup(b.Spec.Destination.URL, d); err != nil {
			r.event(b, corev1.EventTypeWarning, "DataDeleteFailed", "%s", err.Error())
			continue
		}
		log.FromContext(ctx).Info("Deleted backup data", "destination", d)
		// <url>/<vmcluster>/<backup> goes too once empty.
		if p, ok := fsPath(d); ok {
			_ = os.Remove(filepath.Dir(p))
		}
	}
	return nil
}

// deleteObjectData removes the replicas' data from an object store with the
// credentials the uploads used (the destination's labelled Secret: with a
// key, its value as a credentials file; without, every key as an
// environment variable; none: the ambient identity).
func (r *Reconciler) deleteObjectData(ctx context.Context, b *opsv1.ClusterBackup, dirs []string) error {
	var creds backupdata.Credentials
	if ref := b.Spec.Destination.CredentialsSecretRef; ref != nil {
		sec, err := r.backupSecret(ctx, b.Namespace, ref.Name)
		if err != nil {
			return r.giveUpOrRetry(b, err)
		}
		if ref.Key != "" {
			creds.File = sec.Data[ref.Key]
		} else {
			creds.Env = map[string]string{}
			for k, v := range sec.Data {
				creds.Env[k] = string(v)
			}
		}
	}
	n, err := backupdata.Remove(ctx, dirs, creds, r.Options.Data)
	if err != nil {
		return r.giveUpOrRetry(b, err)
	}
	log.FromContext(ctx).Info("Deleted backup data", "destination", b.Spec.Destination.URL, "objects", n)
	r.event(b, corev1.EventTypeNormal, "DataDeleted", "deletionPolicy Delete: deleted %d objects of the backup under %s", n, b.Spec.Destination.URL)
	return nil
}

// giveUpOrRetry returns err (retry) while the deletion is recent, and nil
// with a DataDeleteFailed Warning once SnapshotTimeout passed, or at once
// for an error that retrying will not fix.
func (r *Reconciler) giveUpOrRetry(b *opsv1.ClusterBackup, err error) error {
	if !IsPermanent(err) && !r.expired(b.DeletionTimestamp, r.Options.SnapshotTimeout) {
		return fmt.Errorf("deleting the data of %s: %w", klog.KObj(b), err)
	}
	r.event(b, corev1.EventTypeWarning, "DataDeleteFailed", "deletionPolicy Delete: the data under %s was kept: %s", b.Spec.Destination.URL, sanitize(err.Error()))
	return nil
}
