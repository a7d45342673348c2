// Package backup reconciles ClusterBackups: one instant snapshot per
// vmstorage replica of a VMCluster through vmstorage's snapshot API, each
// uploaded by vmbackup — as a Kubernetes Job on the replica's node
// (JobRunner), or a local process in tests and the local stack
// (LocalRunner) — then the snapshot deleted.
//
// The shape is the ClusterUpgradeOperation reconciler's: observe, decide
// one action with a pure function, perform it, patch status once in a
// defer, requeue. Every side effect is recorded in status before it
// happens — the replica entries before any call, "Snapshotting" before the
// snapshot call, the upload's name before the upload starts — and every
// side effect is idempotent or observable: a snapshot call repeated after a
// crash adopts the snapshot the lost call created (by its timestamp), and
// an upload is started under a name derived from the backup and the pod,
// so a restarted operator observes it instead of starting another.
package backup

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	"github.com/tidbcloud/ops-server/operator/internal/backupdata"
	"github.com/tidbcloud/ops-server/operator/internal/skeleton"
	"github.com/tidbcloud/ops-server/operator/internal/vmsnapshot"
)

// FieldOwner is the field manager of every write of the operator.
const FieldOwner = skeleton.FieldOwner

// Finalizer keeps a ClusterBackup until its uploads are stopped, the
// snapshots it still holds are deleted and, with deletionPolicy Delete,
// its data is removed.
const Finalizer = "ops.observability.tidbcloud.com/clusterbackup"

// snapshotClockSkew is how much earlier than a replica's start time a
// snapshot found on its vmstorage may be stamped and still be adopted as
// the one a lost create call made (the names carry vmstorage's clock, to
// the second).
const snapshotClockSkew = 5 * time.Second

// Resolver returns the base URL of a vmstorage pod's HTTP API (the
// snapshot API), e.g. http://10.0.0.12:8482.
type Resolver func(ctx context.Context, pod *corev1.Pod) (string, error)

// PodIPResolver is the production Resolver: the pod's IP and the port of
// the vmstorage container's "http" port (8482 when it names none).
func PodIPResolver(_ context.Context, pod *corev1.Pod) (string, error) {
	if pod.Status.PodIP == "" {
		return "", fmt.Errorf("pod %s has no IP", pod.Name)
	}
	port := int32(vmsnapshot.DefaultPort)
	if c := vmstorageContainerOf(pod); c != nil {
		for _, p := range c.Ports {
			if p.Name == "http" && p.ContainerPort > 0 {
				port = p.ContainerPort
			}
		}
	}
	return "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(port))), nil
}

// Options tune the reconciler.
type Options struct {
	// PollInterval is how often a running upload, and a VMCluster that is
	// not ready, are checked.
	PollInterval time.Duration
	// RetryInterval is the wait before retrying an unreachable vmstorage.
	RetryInterval time.Duration
	// StartTimeout is how long after its creation a backup waits for the
	// VMCluster to be operational before it fails.
	StartTimeout time.Duration
	// SnapshotTimeout is how long an unreachable vmstorage is retried for
	// a snapshot (and, on deletion, to delete one) before giving up.
	SnapshotTimeout time.Duration
	// SnapshotCallTimeout bounds one snapshot API call.
	SnapshotCallTimeout time.Duration
	// MaxConcurrentReconciles is the number of backups worked on at once.
	MaxConcurrentReconciles int
	// MaxRetryDelay bounds the backoff after transient errors
	// (skeleton.RateLimiter).
	MaxRetryDelay time.Duration
	// Job configures the JobRunner's Jobs.
	Job JobOptions

	// Runner runs vmbackup; nil: a JobRunner (set by the manager).
	Runner Runner
	// Resolver maps a vmstorage pod to its HTTP endpoint; nil:
	// PodIPResolver.
	Resolver Resolver
	// HTTPClient calls vmstorage; nil: a client without keep-alives. It
	// follows no redirect (package vmsnapshot).
	HTTPClient *http.Client

	// FSRoots are the directories (absolute, cleaned: see
	// opsv1.CleanFSRoots) an fs:// destination must be inside
	// (--backup-fs-roots); none: fs:// destinations are refused.
	FSRoots []string

	// Data configures the deletion of object-store data (deletionPolicy
	// Delete): package backupdata.
	Data backupdata.Options
}

// DefaultOptions are the production defaults.
func DefaultOptions() Options {
	return Options{
		PollInterval:            5 * time.Second,
		RetryInterval:           2 * time.Second,
		StartTimeout:            30 * time.Minute,
		SnapshotTimeout:         2 * time.Minute,
		SnapshotCallTimeout:     time.Minute,
		MaxConcurrentReconciles: 2,
		MaxRetryDelay:           skeleton.DefaultMaxRetryDelay,
		Job:                     DefaultJobOptions(),
	}
}

// Reconciler reconciles ClusterBackups.
type Reconciler struct {
	Client client.Client
	// APIReader reads without the cache: the ClusterBackup itself (every
	// decision is taken on the latest status), the VMCluster, its
	// StatefulSet and pods, Secrets.
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
	if r.Options.Runner == nil {
		return errors.New("backup: no Runner")
	}
	if r.Options.Resolver == nil {
		r.Options.Resolver = PodIPResolver
	}
	if r.Options.HTTPClient == nil {
		r.Options.HTTPClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
	}
	return ctrlruntime.NewControllerManagedBy(mgr).
		For(&opsv1.ClusterBackup{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Options.MaxConcurrentReconciles, 1),
			RateLimiter: skeleton.RateLimiter(r.Options.MaxRetryDelay)}).
		Named("clusterbackup").
		Complete(r)
}

// scope is what one reconcile saw and did; status is derived from it.
type scope struct {
	b       *opsv1.ClusterBackup
	w       *world
	requeue time.Duration
	// blocked says why nothing starts (the VMCluster is not ready), with
	// blockedReason the condition reason (default Blocked).
	blocked, blockedReason string
}

// Reconcile follows the skeleton (package skeleton): get, deletion,
// finalizer, remember the original, defer the status patch, observe,
// decide one action, act; a conflict starts over from a fresh read.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return skeleton.Result(r.reconcile(ctx, req))
}

func (r *Reconciler) reconcile(ctx context.Context, req reconcile.Request) (result reconcile.Result, retErr error) {
	logger := log.FromContext(ctx)
	b := &opsv1.ClusterBackup{}
	// Read without the cache: every decision is taken on the latest
	// status (a replica's snapshot is never taken twice).
	if found, err := skeleton.Get(ctx, r.APIReader, req.NamespacedName, b); !found || err != nil {
		return reconcile.Result{}, err
	}
	if !b.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, b)
	}
	if !controllerutil.ContainsFinalizer(b, Finalizer) {
		patch := client.MergeFrom(b.DeepCopy())
		controllerutil.AddFinalizer(b, Finalizer)
		if err := r.Client.Patch(ctx, b, patch, client.FieldOwner(FieldOwner)); err != nil {
			return reconcile.Result{}, fmt.Errorf("adding the finalizer to %s: %w", klog.KObj(b), err)
		}
	}
	if b.Status.Phase.IsTerminal() {
		// Only deletionPolicy can change after creation: nothing to do
		// but to say so.
		if b.Status.ObservedGeneration != b.Generation {
			original := b.DeepCopy()
			b.Status.ObservedGeneration = b.Generation
			return reconcile.Result{}, r.patchStatus(ctx, original, b)
		}
		return reconcile.Result{}, nil
	}

	original := b.DeepCopy()
	s := &scope{b: b}
	defer func() {
		r.summarize(s)
		if err := r.patchStatus(ctx, original, b); err != nil {
			retErr = errors.Join(retErr, err)
			return
		}
		if b.Status.Phase.IsTerminal() {
			recordMetrics(b)
			return
		}
		if retErr == nil {
			result = reconcile.Result{RequeueAfter: s.requeue}
			if s.requeue == 0 {
				result.RequeueAfter = time.Millisecond
			}
		}
	}()

	if len(b.Status.Replicas) == 0 {
		// Validate before anything is touched (preflight.go).
		problem, err := r.preflight(ctx, b)
		if err != nil {
			return reconcile.Result{}, err
		}
		if problem != "" {
			r.failBackup(b, opsv1.InvalidSpecReason, problem)
			return reconcile.Result{}, nil
		}
	}
	w, err := r.observe(ctx, b)
	if err != nil {
		return reconcile.Result{}, err
	}
	s.w = w
	act := decide(b, w, r.Now(), r.Options.StartTimeout)
	logger.V(1).Info("Deciding", "action", act.kind, "replicas", act.replicas, "phase", b.Status.Phase)
	switch act.kind {
	case actNone:
		return reconcile.Result{}, nil
	case actFail:
		r.failBackup(b, act.reason, act.msg)
		return reconcile.Result{}, nil
	case actWait:
		s.blocked, s.blockedReason = act.msg, act.reason
		s.requeue = r.Options.PollInterval
		return reconcile.Result{}, nil
	case actPlan:
		return reconcile.Result{}, r.plan(ctx, s)
	case actLost:
		r.lost(ctx, s, act.replicas)
		return reconcile.Result{}, nil
	case actMarkSnapshot:
		r.markSnapshotting(ctx, s, act.replicas)
		return reconcile.Result{}, nil
	case actSnapshot:
		return reconcile.Result{}, r.snapshot(ctx, s, act.replicas)
	case actMarkUpload:
		for _, i := range act.replicas {
			rep := &b.Status.Replicas[i]
			rep.State = opsv1.ReplicaStateUploading
			rep.JobName = jobName(b, rep.Pod)
		}
		return reconcile.Result{}, nil
	case actPoll:
		return reconcile.Result{}, r.poll(ctx, s, act.replicas)
	case actFinish:
		r.finish(b)
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, fmt.Errorf("unknown action %q", act.kind)
}

func (r *Reconciler) now() *metav1.Time {
	t := metav1.NewTime(r.Now())
	return &t
}

func (r *Reconciler) event(b *opsv1.ClusterBackup, kind, reason, format string, args ...any) {
	skeleton.Event(r.Recorder, b, kind, reason, format, args...)
}

// replicaEvent is an event about one replica: its pod is the related
// object, so the events of different replicas with the same reason stay
// apart (events.k8s.io folds events that differ only in their note into
// one series).
func (r *Reconciler) replicaEvent(b *opsv1.ClusterBackup, rep *opsv1.ReplicaBackup, kind, reason, format string, args ...any) {
	if r.Recorder == nil {
		return
	}
	ns, _ := b.VMClusterKey()
	pod := &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: rep.Pod, UID: types.UID(rep.PodUID)}
	r.Recorder.Eventf(b, pod, kind, reason, "Reconcile", format, args...)
}

// patchStatus writes status once per reconcile (package skeleton: a merge
// patch from the object as it was read, with its resourceVersion): a
// write based on a stale read is refused (and the reconcile retried)
// rather than replacing newer replica entries with older ones.
func (r *Reconciler) patchStatus(ctx context.Context, original, b *opsv1.ClusterBackup) error {
	return skeleton.PatchStatus(ctx, r.Client, original, b, func(o *opsv1.ClusterBackup) any { return o.Status })
}

// authKey reads vmstorage's snapshot auth key from the Secret the spec
// names, "" when it names none.
func (r *Reconciler) authKey(ctx context.Context, b *opsv1.ClusterBackup) (string, error) {
	ref := b.Spec.SnapshotAuthKeySecretRef
	if ref == nil {
		return "", nil
	}
	key := ref.Key
	if key == "" {
		key = opsv1.DefaultSnapshotAuthKeySecretKey
	}
	sec, err := r.backupSecret(ctx, b.Namespace, ref.Name)
	if err != nil {
		if IsPermanent(err) {
			return "", Permanent(fmt.Errorf("snapshot auth key: %w", err))
		}
		return "", fmt.Errorf("snapshot auth key: %w", err)
	}
	v, ok := sec.Data[key]
	if !ok || len(v) == 0 {
		return "", Permanent(fmt.Errorf("snapshot auth key: Secret %s/%s has no key %q", b.Namespace, ref.Name, key))
	}
	return strings.TrimSpace(string(v)), nil
}

func (r *Reconciler) snapshotClient(endpoint, authKey string) (*vmsnapshot.Client, error) {
	c, err := vmsnapshot.New(endpoint, authKey, r.Options.HTTPClient)
	if err != nil {
		return nil, Permanent(err)
	}
	return c, nil
}

func (r *Reconciler) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if r.Options.SnapshotCallTimeout > 0 {
		return context.WithTimeout(ctx, r.Options.SnapshotCallTimeout)
	}
	return context.WithCancel(ctx)
}
