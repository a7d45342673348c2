package upgrade

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/skeleton"
)

// Labels of the ClusterBackup a BackupVMStorage step creates: the
// operation it belongs to (a ClusterBackup lives in the VMCluster's
// namespace, so it cannot be owned by an operation of another one).
const (
	GateOperationLabel          = "ops.observability.tidbcloud.com/upgrade-operation"
	GateOperationNamespaceLabel = "ops.observability.tidbcloud.com/upgrade-operation-namespace"
)

// gateBackupName is the name of the backup a node group's BackupVMStorage
// step creates: derived from the operation's UID and the node group, so a
// restarted operator finds the backup it created instead of creating a
// second one.
func gateBackupName(op *opsv1.ClusterUpgradeOperation, nodeGroup string) string {
	sum := sha256.Sum256([]byte(string(op.UID) + "/" + nodeGroup))
	base := op.Name
	if len(base) > 40 {
		base = base[:40]
	}
	base = strings.TrimRight(strings.ReplaceAll(strings.ToLower(base), ".", "-"), "-")
	return fmt.Sprintf("%s-gate-%s", base, hex.EncodeToString(sum[:])[:10])
}

// backupVMStorage is the backup gate of a node group with
// backupBeforeRollout: it creates (once) a ClusterBackup of the VMCluster
// the node group's rollout moves, records it in the step, and waits for
// it. Succeeded: the step succeeds and the node group's steps go on.
// PartiallyFailed or Failed: the step and the operation fail, before the
// node group's new node group is created.
func (r *Reconciler) backupVMStorage(ctx context.Context, s *scope, step *opsv1.UpgradeStep) error {
	ng := nodeGroupOf(&s.op.Spec, step)
	if ng == nil || ng.BackupBeforeRollout == nil {
		r.startStep(s.op, step)
		r.succeedStep(s.op, step, "No backup requested")
		return nil
	}
	ns, vmc := ng.RolloutVMCluster()
	key := types.NamespacedName{Namespace: ns, Name: gateBackupName(s.op, ng.NodeGroupName)}
	r.startStep(s.op, step)
	step.Backup = key.String()
	b := &opsv1.ClusterBackup{}
	err := r.APIReader.Get(ctx, key, b)
	switch {
	case apierrors.IsNotFound(err):
		b = &opsv1.ClusterBackup{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: map[string]string{
				GateOperationLabel: s.op.Name, GateOperationNamespaceLabel: s.op.Namespace,
			}},
			Spec: opsv1.ClusterBackupSpec{
				VMCluster:      opsv1.VMClusterReference{Namespace: ns, Name: vmc},
				Destination:    ng.BackupBeforeRollout.Destination,
				DeletionPolicy: opsv1.DeletionPolicyRetain,
			},
		}
		if err := r.Client.Create(ctx, b, client.FieldOwner(skeleton.FieldOwner)); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ClusterBackup %s: %w", key, err)
		}
		r.event(s.op, corev1.EventTypeNormal, "BackupCreated", "Created ClusterBackup %s of VMCluster %s/%s before the vmstorage rollout of node group %s", key, ns, vmc, ng.NodeGroupName)
		step.Message = fmt.Sprintf("Waiting for ClusterBackup %s", key)
		s.requeue = r.Options.PollInterval
		return nil
	case err != nil:
		return fmt.Errorf("getting ClusterBackup %s: %w", key, err)
	}
	s.observedOnly = true
	msg := ""
	if c := apimeta.FindStatusCondition(b.Status.Conditions, opsv1.ReadyCondition); c != nil {
		msg = c.Message
	}
	switch b.Status.Phase {
	case opsv1.BackupPhaseSucceeded:
		r.succeedStep(s.op, step, fmt.Sprintf("ClusterBackup %s Succeeded: %s", key, msg))
	case opsv1.BackupPhasePartiallyFailed, opsv1.BackupPhaseFailed:
		text := fmt.Sprintf("ClusterBackup %s %s before the vmstorage rollout; nothing of node group %s was changed: %s", key, b.Status.Phase, ng.NodeGroupName, msg)
		r.failStep(s.op, step, text)
		r.fail(s.op, text)
	default:
		step.Message = fmt.Sprintf("Waiting for ClusterBackup %s (%s %s)", key, orPending(b.Status.Phase), b.Status.Progress)
		s.requeue = r.Options.PollInterval
	}
	return nil
}

func orPending(p opsv1.BackupPhase) opsv1.BackupPhase {
	if p == "" {
		return opsv1.BackupPhasePending
	}
	return p
}
