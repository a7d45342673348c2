// Package exclusion decides which long-running work on the same thing must
// wait for which, so that the reconcilers of ClusterUpgradeOperations and
// ClusterBackups ask one question each and agree on the answer.
//
// Two rules:
//
//   - One active upgrade per cluster: of the non-terminal
//     ClusterUpgradeOperations of one (cloudProvider, region,
//     k8sClusterName), in any namespace, one runs and the others wait
//     (Blocker). An operation that has started (status.startTime set)
//     goes first; otherwise the oldest (creationTimestamp, then namespace
//     and name) does. The rule is decided twice by the upgrade reconciler:
//     before the preflight (a waiting operation never calls the cloud) and
//     once more after it recorded its start and before its first step:
//     two operations created in the same instant may both pass the first
//     check, but the one that records its start second sees the first one
//     started and steps back before it changed anything.
//   - A vmstorage rollout and a backup of the same VMCluster do not
//     overlap: a rollout waits before patching the VMCluster while a
//     ClusterBackup of it is Running (RunningBackup), and a backup that
//     has not started waits while a rollout of its VMCluster is in progress
//     (Rollout). "Running" and "in progress" are both states the other
//     side cannot enter while it waits, so the two never wait for each
//     other.
//
// Every answer is read from the API server, not a cache: the point is to
// see what the other side did a moment ago.
package exclusion

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// ClusterKey identifies the cluster an operation upgrades.
type ClusterKey struct {
	CloudProvider  string
	Region         string
	K8sClusterName string
}

// KeyOf returns the cluster of an operation.
func KeyOf(op *opsv1.ClusterUpgradeOperation) ClusterKey {
	return ClusterKey{CloudProvider: string(op.Spec.CloudProvider), Region: op.Spec.Region, K8sClusterName: op.Spec.K8sClusterName}
}

// String is provider/region/name.
func (k ClusterKey) String() string {
	return k.CloudProvider + "/" + k.Region + "/" + k.K8sClusterName
}

// Blocker returns the operation op waits for, or nil when op may run: with
// op not started, any other started non-terminal operation of its
// cluster, else the oldest older non-terminal one; with op started, any
// other started non-terminal one (see the package comment).
func Blocker(ctx context.Context, r client.Reader, op *opsv1.ClusterUpgradeOperation) (*opsv1.ClusterUpgradeOperation, error) {
	list := &opsv1.ClusterUpgradeOperationList{}
	// Only the operations of clusters of op's name, filtered by the API
	// server (the CRD's selectable field): a list of every operation on
	// every reconcile made the operator's cost grow with the square of
	// the operations.
	if err := r.List(ctx, list, client.MatchingFields{opsv1.ClusterNameField: op.Spec.K8sClusterName}); err != nil {
		return nil, fmt.Errorf("listing ClusterUpgradeOperations: %w", err)
	}
	return blocker(op, list.Items), nil
}

// blocker is Blocker's pure decision.
func blocker(op *opsv1.ClusterUpgradeOperation, all []opsv1.ClusterUpgradeOperation) *opsv1.ClusterUpgradeOperation {
	key := KeyOf(op)
	var started, older *opsv1.ClusterUpgradeOperation
	for i := range all {
		o := &all[i]
		if o.UID == op.UID || (o.Namespace == op.Namespace && o.Name == op.Name) || KeyOf(o) != key ||
			o.Status.Phase.IsTerminal() || o.DeletionTimestamp != nil {
			continue
		}
		if o.Status.StartTime != nil && (started == nil || Older(o, started)) {
			started = o
		}
		if Older(o, op) && (older == nil || Older(o, older)) {
			older = o
		}
	}
	if started != nil || op.Status.StartTime != nil {
		return started
	}
	return older
}

// Older orders objects (operations, backups) by creation, then namespace
// and name: the one order every "who goes first" rule uses.
func Older(a, b client.Object) bool {
	ca, cb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	if !ca.Equal(&cb) {
		return ca.Before(&cb)
	}
	if a.GetNamespace() != b.GetNamespace() {
		return a.GetNamespace() < b.GetNamespace()
	}
	return a.GetName() < b.GetName()
}

// RunningBackup returns "namespace/name" of a Running ClusterBackup (one
// that started a replica) of the VMCluster, or "".
func RunningBackup(ctx context.Context, r client.Reader, vmcluster types.NamespacedName) (string, error) {
	list := &opsv1.ClusterBackupList{}
	if err := r.List(ctx, list); err != nil {
		return "", fmt.Errorf("listing ClusterBackups: %w", err)
	}
	for i := range list.Items {
		b := &list.Items[i]
		ns, name := b.VMClusterKey()
		if ns != vmcluster.Namespace || name != vmcluster.Name || b.Status.Phase.IsTerminal() {
			continue
		}
		if b.Status.Phase == opsv1.BackupPhaseRunning || replicaStarted(b) {
			return b.Namespace + "/" + b.Name, nil
		}
	}
	return "", nil
}

func replicaStarted(b *opsv1.ClusterBackup) bool {
	for _, rep := range b.Status.Replicas {
		if s := rep.State; s != opsv1.ReplicaStatePending && s != "" {
			return true
		}
	}
	return false
}

// Rollout returns "namespace/name" of a non-terminal
// ClusterUpgradeOperation whose vmstorage rollout step is in progress on
// the VMCluster, or "". A rollout targets its node group's vmCluster
// (NodeGroupUpgrade.RolloutVMCluster: observability/vmcluster when
// omitted).
func Rollout(ctx context.Context, r client.Reader, vmcluster types.NamespacedName) (string, error) {
	list := &opsv1.ClusterUpgradeOperationList{}
	if err := r.List(ctx, list); err != nil {
		return "", fmt.Errorf("listing ClusterUpgradeOperations: %w", err)
	}
	for i := range list.Items {
		op := &list.Items[i]
		if op.Status.Phase.IsTerminal() {
			continue
		}
		for _, st := range op.Status.Steps {
			if st.Action != opsv1.ActionRolloutVMStorage || st.Phase != opsv1.StepPhaseRunning {
				continue
			}
			if ng := op.Spec.NodeGroupUpgradeOf(&st); ng != nil {
				if ns, name := ng.RolloutVMCluster(); ns == vmcluster.Namespace && name == vmcluster.Name {
					return op.Namespace + "/" + op.Name, nil
				}
			}
		}
	}
	return "", nil
}
