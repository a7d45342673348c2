package exclusion

// A ClusterRestore stops vmstorage replicas and rewrites their volumes, so
// it runs alone on its VMCluster:
//
//   - A restore claims its VMCluster by recording status.startTime before
//     it stops anything. Once claimed, backups of the VMCluster that have
//     not started and vmstorage rollouts that have not started wait for it
//     (ActiveRestore); so does another restore of the same VMCluster.
//   - Before it claims, a restore waits for a running backup, a rollout in
//     progress, or an older unfinished restore of the VMCluster
//     (RestoreBlocker). After it claimed, it checks once more before it
//     stops the first replica: a backup or a rollout that started in the
//     instant between the first check and the claim is seen then, and the
//     restore waits for it to finish. A backup that planned its replicas
//     but took no snapshot yet, and a restore that claimed but stopped
//     nothing yet, are both "claimed, not acting": of the two the older
//     goes first (Older), so the two never wait for each other.

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// RestoreTarget returns the VMCluster a ClusterRestore restores into,
// reading its backup when spec.vmCluster is omitted; ok=false when that
// cannot be known (the backup is gone).
func RestoreTarget(ctx context.Context, r client.Reader, rs *opsv1.ClusterRestore) (types.NamespacedName, bool, error) {
	if rs.Spec.VMCluster != nil {
		ns, name := rs.VMClusterKey(nil)
		return types.NamespacedName{Namespace: ns, Name: name}, true, nil
	}
	b := &opsv1.ClusterBackup{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: rs.Namespace, Name: rs.Spec.Backup}, b); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return types.NamespacedName{}, false, nil
		}
		return types.NamespacedName{}, false, fmt.Errorf("getting ClusterBackup %s/%s: %w", rs.Namespace, rs.Spec.Backup, err)
	}
	ns, name := rs.VMClusterKey(b)
	return types.NamespacedName{Namespace: ns, Name: name}, true, nil
}

// restoreActing reports whether a restore stopped (or is stopping) a
// replica: any replica past Pending.
func restoreActing(rs *opsv1.ClusterRestore) bool {
	for _, rep := range rs.Status.Replicas {
		if rep.State != opsv1.ReplicaRestorePending && rep.State != "" {
			return true
		}
	}
	return false
}

// ActiveRestore returns "namespace/name" of an unfinished ClusterRestore
// that claimed the VMCluster (status.startTime set), or "". self, when not
// nil, is a backup that has planned but not started its replicas: a
// restore that claimed but stopped nothing yet and is younger than self
// does not count (see the package comment on restores).
func ActiveRestore(ctx context.Context, r client.Reader, vmcluster types.NamespacedName, self client.Object) (string, error) {
	list := &opsv1.ClusterRestoreList{}
	if err := r.List(ctx, list); err != nil {
		return "", fmt.Errorf("listing ClusterRestores: %w", err)
	}
	for i := range list.Items {
		rs := &list.Items[i]
		if rs.Status.Phase.IsTerminal() || rs.Status.StartTime == nil {
			continue
		}
		if self != nil && !restoreActing(rs) && Older(self, rs) {
			continue
		}
		target, ok, err := RestoreTarget(ctx, r, rs)
		if err != nil {
			return "", err
		}
		if ok && target == vmcluster {
			return rs.Namespace + "/" + rs.Name, nil
		}
	}
	return "", nil
}

// RestoreBlocker returns what a ClusterRestore of vmcluster waits for
// ("ClusterBackup ns/name", "ClusterUpgradeOperation ns/name",
// "VMClusterOperation ns/name" or "ClusterRestore ns/name"), or "" when it
// may go on.
func RestoreBlocker(ctx context.Context, r client.Reader, rs *opsv1.ClusterRestore, vmcluster types.NamespacedName) (string, error) {
	if op, err := Rollout(ctx, r, vmcluster); err != nil || op != "" {
		return prefixed("ClusterUpgradeOperation ", op), err
	}
	if op, err := OperationActing(ctx, r, vmcluster, rs); err != nil || op != "" {
		return prefixed("VMClusterOperation ", op), err
	}
	backups := &opsv1.ClusterBackupList{}
	if err := r.List(ctx, backups); err != nil {
		return "", fmt.Errorf("listing ClusterBackups: %w", err)
	}
	for i := range backups.Items {
		b := &backups.Items[i]
		if ns, name := b.VMClusterKey(); ns != vmcluster.Namespace || name != vmcluster.Name || b.Status.Phase.IsTerminal() {
			continue
		}
		acting := b.Status.Phase == opsv1.BackupPhaseRunning || replicaStarted(b)
		claimed := len(b.Status.Replicas) > 0
		if acting || (claimed && Older(b, rs)) {
			return "ClusterBackup " + b.Namespace + "/" + b.Name, nil
		}
	}
	restores := &opsv1.ClusterRestoreList{}
	if err := r.List(ctx, restores); err != nil {
		return "", fmt.Errorf("listing ClusterRestores: %w", err)
	}
	for i := range restores.Items {
		o := &restores.Items[i]
		if o.UID == rs.UID || (o.Namespace == rs.Namespace && o.Name == rs.Name) || o.Status.Phase.IsTerminal() || o.DeletionTimestamp != nil {
			continue
		}
		// A claimed one goes first; otherwise the older.
		if o.Status.StartTime == nil && (rs.Status.StartTime != nil || !Older(o, rs)) {
			continue
		}
		if o.Status.StartTime != nil && rs.Status.StartTime != nil && !restoreActing(o) && Older(rs, o) {
			continue
		}
		target, ok, err := RestoreTarget(ctx, r, o)
		if err != nil {
			return "", err
		}
		if ok && target == vmcluster {
			return "ClusterRestore " + o.Namespace + "/" + o.Name, nil
		}
	}
	return "", nil
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}
