package restores

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/auth"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// Seeder is the restores side of restore_from on POST /vmclusters
// (vmclusters.Seeder): a new vmcluster created from a backup.
type Seeder struct {
	Svc *Service
	// Namespace is the vmcluster namespace.
	Namespace string
}

var _ vmclusters.Seeder = Seeder{}

// CheckSeed refuses what the operator's preflight would refuse, in the
// same words, with the field restore_from.backup: a backup that does not
// exist or has not Succeeded, a source outside the fs roots, a replica
// count that differs from the backup's.
func (s Seeder) CheckSeed(ctx context.Context, name string, replicas int, id string) error {
	bad := func(format string, args ...any) error {
		return apierror.InvalidArgument("the request is invalid", apierror.Violation("restore_from.backup", format, args...))
	}
	if s.Svc == nil || s.Svc.Backups == nil || !s.Svc.Backups.Defaults.RestoresEnabled {
		return bad("restores are not enabled on this server (backups.restoresEnabled): enable them once every vmcluster runs the vmcluster chart's ops-hold init container (docs/backups.md)")
	}
	// Seeding reads another vmcluster's data: the caller needs the
	// permission of POST .../restores besides vmclusters create.
	if err := auth.Require(ctx, "create", Resource); err != nil {
		return err
	}
	if ns := s.Svc.Backups.Namespace; ns != s.Namespace {
		return bad("backups live in namespace %s and vmclusters in %s: a restore may only target a vmcluster in its own namespace", ns, s.Namespace)
	}
	b, err := s.Svc.backup(ctx, id)
	if err != nil {
		return err
	}
	if b == nil {
		return bad("backup %q not found", id)
	}
	if b.Status.Phase != opsv1.BackupPhaseSucceeded {
		phase := b.Status.Phase
		if phase == "" {
			phase = opsv1.BackupPhasePending
		}
		return bad("backup %s is %s; only a Succeeded backup can be restored", b.Name, phase)
	}
	var sources []string
	for _, rep := range b.Status.Replicas {
		sources = append(sources, rep.Pod)
		if msg := opsv1.FSDestinationProblem(rep.Destination, s.Svc.Backups.Defaults.FSRoots); msg != "" {
			return bad("the backup of %s: %s", rep.Pod, msg)
		}
	}
	targets := make([]string, replicas)
	for i := range targets {
		targets[i] = fmt.Sprintf("vmstorage-%s-%d", name, i)
	}
	if _, err := opsv1.PlanReplicaSources(targets, sources, nil); err != nil {
		return bad("backup %s cannot seed vmstorage.replicaCount %d: %s", b.Name, replicas, err.Error())
	}
	return nil
}

// EnsureSeed creates the ClusterRestore (opsv1.SeedRestoreName) that
// restores the new vmcluster of hr from the backup id, all replicas at
// once (all of them are held from their start anyway).
func (s Seeder) EnsureSeed(ctx context.Context, hr *helmv2.HelmRelease, id string) error {
	b, err := s.Svc.backup(ctx, id)
	if err != nil {
		return err
	}
	if b == nil {
		return apierror.InvalidArgument("the request is invalid", apierror.Violation("restore_from.backup", "backup %q not found", id))
	}
	labels := vmclusters.Labels(hr.Name)
	labels[opsv1.LabelVMClusterID] = string(hr.UID)
	obj := &opsv1.ClusterRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Svc.Backups.Namespace, Name: opsv1.SeedRestoreName(hr.Name), Labels: labels, Annotations: map[string]string{}},
		Spec: opsv1.ClusterRestoreSpec{
			Backup: b.Name, VMCluster: &opsv1.VMClusterReference{Name: hr.Spec.ReleaseName}, Strategy: opsv1.RestoreAllAtOnce,
		},
	}
	auth.StampCaller(ctx, s.Svc.Backups.Caller, obj)
	if err := s.Svc.Backups.Writer.Create(ctx, obj); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return apierror.FromKubernetes(err)
		}
		existing := &opsv1.ClusterRestore{}
		if err := s.Svc.Backups.Writer.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
			return apierror.FromKubernetes(err)
		}
		if !equality.Semantic.DeepEqual(existing.Spec, obj.Spec) {
			return apierror.AlreadyExists(apierror.ReasonAlreadyExists,
				"restore %s exists with a different specification; delete it, or the vmcluster, and create the vmcluster again", existing.Name)
		}
		return nil
	}
	auth.RecordTarget(ctx, corev1.ObjectReference{
		APIVersion: opsv1.GroupVersion.String(), Kind: opsv1.ClusterRestoreKind,
		Namespace: obj.Namespace, Name: obj.Name, UID: obj.UID, ResourceVersion: obj.ResourceVersion,
	}, "CreatedThroughAPI", "Created")
	logr.FromContextOrDiscard(ctx).Info("Created the restore seeding a new vmcluster", "clusterRestore", klog.KObj(obj), "vmcluster", hr.Name, "backup", b.Name)
	return nil
}

// EnsureHold creates the hold ConfigMap of the new vmcluster name
// (opsv1.SeedHoldConfigMap), or adds its keys to one left by an earlier
// vmcluster of that name; called before the HelmRelease is created.
func (s Seeder) EnsureHold(ctx context.Context, name string, replicas int) error {
	cm := opsv1.SeedHoldConfigMap(s.Namespace, name, s.Svc.Backups.Namespace, replicas)
	err := s.Svc.Backups.Writer.Create(ctx, cm)
	if apierrors.IsAlreadyExists(err) {
		data := make(map[string]any, len(cm.Data))
		for k, v := range cm.Data {
			data[k] = v
		}
		raw, merr := json.Marshal(map[string]any{"data": data})
		if merr != nil {
			return merr
		}
		err = s.Svc.Backups.Writer.Patch(ctx, cm, client.RawPatch(types.MergePatchType, raw))
	}
	if err != nil {
		return apierror.FromKubernetes(err)
	}
	logr.FromContextOrDiscard(ctx).Info("Holding the vmstorage of a new vmcluster until its restore", "configMap", klog.KObj(cm), "replicas", replicas)
	return nil
}

// SeedPending reports whether the hold ConfigMap of vmcluster name still
// has a key held for its seeding ClusterRestore.
func (s Seeder) SeedPending(ctx context.Context, name string) (bool, error) {
	cm := &corev1.ConfigMap{}
	err := s.Svc.Backups.Writer.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: opsv1.VMStorageHoldConfigMapName(name)}, cm)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, apierror.FromKubernetes(err)
	}
	owner := s.Svc.Backups.Namespace + "/" + opsv1.SeedRestoreName(name)
	for _, v := range cm.Data {
		if o, _, _ := strings.Cut(v, " "); o == owner {
			return true, nil
		}
	}
	return false, nil
}
