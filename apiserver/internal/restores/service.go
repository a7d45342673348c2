package restores

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/auth"
	"github.com/tidbcloud/ops-server/apiserver/internal/backups"
	"github.com/tidbcloud/ops-server/apiserver/internal/cachewait"
	"github.com/tidbcloud/ops-server/apiserver/internal/idempotency"
	"github.com/tidbcloud/ops-server/apiserver/internal/listing"
	"github.com/tidbcloud/ops-server/apiserver/internal/lookup"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// Reasons of the restore errors (ErrorInfo.reason).
const ReasonNotFound = "RESTORE_NOT_FOUND"

// Service decides; it reads from the informer cache and writes to the API
// server. Restores live beside the backups, in the backups namespace.
type Service struct {
	// Backups holds the reader, writer, namespace, vmclusters, the fs
	// roots and the caller of the backups API, which restores share.
	Backups *backups.Service
}

// ReasonRestoresUnavailable: this server does not accept restores
// (backups.restoresEnabled is off).
const ReasonRestoresUnavailable = "RESTORES_UNAVAILABLE"

// available refuses a restore when the server does not accept them: a
// 400 that creates nothing, rather than a ClusterRestore the operator
// would fail (restores run only with its local runner in this version).
func (s *Service) available() error {
	if s.Backups == nil || !s.Backups.Defaults.RestoresEnabled {
		return apierror.FailedPrecondition(ReasonRestoresUnavailable,
			"restores are not enabled on this server (backups.restoresEnabled): enable them once every vmcluster runs the vmcluster chart's ops-hold init container; see docs/backups.md for the manual restore")
	}
	return nil
}

type target struct {
	ID, Name, Namespace, Release string
}

func (s *Service) target(ctx context.Context, vmclusterID string) (target, error) {
	v, err := s.Backups.VMClusters.Get(ctx, vmclusterID)
	if err != nil {
		return target{}, err
	}
	return target{ID: v.ID, Name: strings.TrimPrefix(v.Name, vmclusters.CollectionPrefix),
		Namespace: v.HelmReleaseInfo.ReleaseNamespace, Release: v.HelmReleaseInfo.ReleaseName}, nil
}

func notFound(id string) *apierror.Error {
	if len(id) > 80 {
		id = id[:80] + "..."
	}
	return apierror.NotFound(ReasonNotFound, "restore %q not found", id).WithMetadata("restoreId", id)
}

// backup finds the ClusterBackup a request names, by name or UID, of any
// vmcluster; nil when there is none.
func (s *Service) backup(ctx context.Context, id string) (*opsv1.ClusterBackup, error) {
	ns := s.Backups.Namespace
	return lookup.Find(ctx, s.Backups.Reader, ns, id, nil, nil, func() ([]opsv1.ClusterBackup, error) {
		list := &opsv1.ClusterBackupList{}
		if err := s.Backups.Reader.List(ctx, list, client.InNamespace(ns)); err != nil {
			return nil, apierror.FromKubernetes(err)
		}
		return list.Items, nil
	})
}

// vmstorageReplicas is the replica count of the VMCluster's vmstorage
// StatefulSet, -1 when it does not exist (yet).
func (s *Service) vmstorageReplicas(ctx context.Context, t target) (int, error) {
	list := &appsv1.StatefulSetList{}
	if err := s.Backups.Writer.List(ctx, list, client.InNamespace(t.Namespace), client.MatchingFields{"metadata.name": "vmstorage-" + t.Release}); err != nil {
		return 0, apierror.FromKubernetes(err)
	}
	if len(list.Items) == 0 {
		return -1, nil
	}
	if r := list.Items[0].Spec.Replicas; r != nil {
		return int(*r), nil
	}
	return 1, nil
}

// check refuses what the operator would refuse (its preflight, with the
// same words from operator/api/v1alpha1): a backup that is not
// Succeeded, sources outside the fs roots, replica counts that differ
// without a mapping, a mapping that does not fit.
func (s *Service) check(ctx context.Context, t target, req *Request, b *opsv1.ClusterBackup) error {
	bad := func(field, format string, args ...any) error {
		return apierror.InvalidArgument("the restore request is invalid", apierror.Violation(field, format, args...))
	}
	if b == nil {
		return bad("backup", "backup %q not found", req.Backup)
	}
	if b.Status.Phase != opsv1.BackupPhaseSucceeded {
		phase := b.Status.Phase
		if phase == "" {
			phase = opsv1.BackupPhasePending
		}
		return bad("backup", "backup %s is %s; only a Succeeded backup can be restored", b.Name, phase)
	}
	var sources []string
	for _, rep := range b.Status.Replicas {
		sources = append(sources, rep.Pod)
		if msg := opsv1.FSDestinationProblem(rep.Destination, s.Backups.Defaults.FSRoots); msg != "" {
			return bad("backup", "the backup of %s: %s", rep.Pod, msg)
		}
	}
	n, err := s.vmstorageReplicas(ctx, t)
	if err != nil || n < 0 {
		return err // not there yet: the operator waits for it and checks then
	}
	targets := make([]string, n)
	for i := range targets {
		targets[i] = fmt.Sprintf("vmstorage-%s-%d", t.Release, i)
	}
	if _, err := opsv1.PlanReplicaSources(targets, sources, toMapping(req.ReplicaMapping)); err != nil {
		return bad("replica_mapping", "%s", err.Error())
	}
	return nil
}

func toMapping(in []Mapping) []opsv1.ReplicaMapping {
	var out []opsv1.ReplicaMapping
	for _, m := range in {
		out = append(out, opsv1.ReplicaMapping{Replica: int32(*m.Replica), FromReplica: int32(*m.FromReplica)})
	}
	return out
}

// Create creates a restore into a vmcluster; with an idempotency key a
// retry returns the restore the first attempt created (created false), a
// different request with the same key is a 409.
func (s *Service) Create(ctx context.Context, vmclusterID string, req *Request, key string) (Restore, bool, error) {
	if err := s.available(); err != nil {
		return Restore{}, false, err
	}
	t, err := s.target(ctx, vmclusterID)
	if err != nil {
		return Restore{}, false, err
	}
	ns := s.Backups.Namespace
	if t.Namespace != ns {
		return Restore{}, false, apierror.FailedPrecondition(backups.ReasonOtherNamespace,
			"vmcluster %q runs in namespace %s, but restores are created in %s (backups.namespace): a restore may only target a vmcluster in its own namespace", t.Name, t.Namespace, ns)
	}
	b, err := s.backup(ctx, req.Backup)
	if err != nil {
		return Restore{}, false, err
	}
	if err := s.check(ctx, t, req, b); err != nil {
		return Restore{}, false, err
	}
	labels := vmclusters.Labels(t.Name)
	labels[opsv1.LabelVMClusterID] = t.ID
	obj := &opsv1.ClusterRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Labels: labels, Annotations: map[string]string{}},
		Spec: opsv1.ClusterRestoreSpec{
			Backup: b.Name, VMCluster: &opsv1.VMClusterReference{Name: t.Release},
			Strategy: opsv1.RestoreStrategy(req.Strategy), ReplicaMapping: toMapping(req.ReplicaMapping),
		},
	}
	if obj.Spec.Strategy == "" {
		obj.Spec.Strategy = opsv1.RestoreOneAtATime
	}
	idempotency.SetName(obj, "restore-", t.Name, key)
	auth.StampCaller(ctx, s.Backups.Caller, obj)
	got, replayed, err := idempotency.Create(ctx, s.Backups.Writer, obj, key, func(existing *opsv1.ClusterRestore) bool {
		return existing.Labels[opsv1.LabelVMClusterID] == t.ID && equality.Semantic.DeepEqual(existing.Spec, obj.Spec)
	}, idempotency.Reused(key, "restore", "restore"))
	if err != nil {
		return Restore{}, false, err
	}
	if replayed {
		return toRestore(got), false, nil
	}
	auth.RecordTarget(ctx, corev1.ObjectReference{
		APIVersion: opsv1.GroupVersion.String(), Kind: opsv1.ClusterRestoreKind,
		Namespace: obj.Namespace, Name: obj.Name, UID: obj.UID, ResourceVersion: obj.ResourceVersion,
	}, "CreatedThroughAPI", "Created")
	logr.FromContextOrDiscard(ctx).Info("Created restore", "clusterRestore", klog.KObj(obj), "uid", obj.UID, "vmcluster", t.Name, "backup", b.Name)
	uid := obj.UID
	cachewait.For(ctx, s.Backups.Reader, client.ObjectKeyFromObject(obj), s.Backups.CacheWait, func(c *opsv1.ClusterRestore) bool { return c != nil && c.UID == uid })
	return toRestore(obj), true, nil
}

func (s *Service) list(ctx context.Context, t target) ([]opsv1.ClusterRestore, error) {
	list := &opsv1.ClusterRestoreList{}
	if err := s.Backups.Reader.List(ctx, list, client.InNamespace(s.Backups.Namespace), client.MatchingLabels{opsv1.LabelVMClusterID: t.ID}); err != nil {
		return nil, apierror.FromKubernetes(err)
	}
	return list.Items, nil
}

// Get returns a restore of a vmcluster by name or id.
func (s *Service) Get(ctx context.Context, vmclusterID, id string) (Restore, error) {
	t, err := s.target(ctx, vmclusterID)
	if err != nil {
		return Restore{}, err
	}
	obj, err := lookup.Find(ctx, s.Backups.Reader, s.Backups.Namespace, id, map[string]string{opsv1.LabelVMClusterID: t.ID}, notFound(id),
		func() ([]opsv1.ClusterRestore, error) { return s.list(ctx, t) })
	if err != nil {
		return Restore{}, err
	}
	return toRestore(obj), nil
}

// List returns one page of the restores of a vmcluster, newest first.
func (s *Service) List(ctx context.Context, vmclusterID string, req ListRequest) (ListResponse, error) {
	t, err := s.target(ctx, vmclusterID)
	if err != nil {
		return ListResponse{}, err
	}
	if err := req.After.Check(t.ID, ""); err != nil {
		return ListResponse{}, err
	}
	items, err := s.list(ctx, t)
	if err != nil {
		return ListResponse{}, err
	}
	compare, after := listing.NewestFirst(listing.KeyOf[*opsv1.ClusterRestore], req.After.Key())
	page, more := listing.Page(listing.Pointers(items), compare, after, req.PageSize)
	out := ListResponse{Restores: []Restore{}}
	for _, o := range page {
		out.Restores = append(out.Restores, toRestore(o))
	}
	if more {
		last := page[len(page)-1]
		out.NextPageToken = listing.Cursor{Created: last.CreationTimestamp.Unix(), Name: last.Name, VMCluster: t.ID}.Token()
	}
	return out, nil
}

// toRestore is the API view of an object.
func toRestore(o *opsv1.ClusterRestore) Restore {
	vm := o.Labels[vmclusters.LabelVMCluster]
	ns, name := o.VMClusterKey(nil)
	r := Restore{
		Name: vmclusters.CollectionPrefix + vm + "/" + CollectionID + "/" + o.Name, ID: string(o.UID),
		VMCluster: vmclusters.CollectionPrefix + vm, VMClusterID: o.Labels[opsv1.LabelVMClusterID],
		Target: backups.ObjectRef{Namespace: ns, Name: name}, Backup: o.Spec.Backup,
		Strategy: string(o.EffectiveStrategy()), Phase: string(o.Status.Phase), Progress: o.Status.Progress,
		Replicas: []Replica{}, InitiatedBy: o.Annotations[opsv1.AnnotationInitiatedBy],
		CreateTime: formatTime(&o.CreationTimestamp), StartTime: formatTime(o.Status.StartTime), CompletionTime: formatTime(o.Status.CompletionTime),
	}
	if r.Phase == "" {
		r.Phase = string(opsv1.RestorePhasePending)
	}
	for _, m := range o.Spec.ReplicaMapping {
		a, b := int64(m.Replica), int64(m.FromReplica)
		r.ReplicaMapping = append(r.ReplicaMapping, Mapping{Replica: &a, FromReplica: &b})
	}
	if c := apimeta.FindStatusCondition(o.Status.Conditions, opsv1.ReadyCondition); c != nil {
		r.Message = c.Message
	}
	for _, rep := range o.Status.Replicas {
		r.Replicas = append(r.Replicas, Replica{Pod: rep.Pod, FromPod: rep.FromPod, Source: rep.Source, Phase: string(rep.State),
			RunID: rep.RunID, Error: rep.Error, StartTime: formatTime(rep.StartTime), CompletionTime: formatTime(rep.CompletionTime)})
	}
	return r
}

func formatTime(t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
