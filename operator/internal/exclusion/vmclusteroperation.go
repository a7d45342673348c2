package exclusion

// The VMClusterOperation rules (docs/operations.md, "What waits for what"):
//
//   - One active operation per VMCluster: of the non-terminal
//     VMClusterOperations of one VMCluster, the one that started goes on and
//     the others wait; of those not started, the oldest goes first
//     (OperationBlocker). Two operations that both recorded their start in
//     the same instant step back to "the older goes first" before either
//     changes anything: the reconciler asks again after recording its start.
//   - An operation does not start a step while a vmstorage rollout of an
//     upgrade (Rollout) or a Running backup (RunningBackup) of its
//     VMCluster runs; and a rollout or a backup that has not started waits
//     while an operation of its VMCluster is active (ActiveOperation).
//     "Active" (started, not terminal) is a state the other side cannot
//     enter while it waits, so the two never wait for each other.
//   - An operation and a ClusterRestore of the same VMCluster: an operation
//     does not start a step while a restore that claimed the VMCluster
//     acts (stopped a replica) or is older (ActiveRestore with the
//     operation as self), and a restore waits for an active operation that
//     acts (started a step) or is older (OperationActing, in
//     RestoreBlocker). Of two that both claimed and neither acted yet the
//     older goes first, so the two never wait for each other.

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// OperationBlocker returns the VMClusterOperation op waits for, or nil:
// another non-terminal operation of the same VMCluster that started (and,
// when op started too, is older), else, when op has not started, the
// oldest older one.
func OperationBlocker(ctx context.Context, r client.Reader, op *opsv1.VMClusterOperation) (*opsv1.VMClusterOperation, error) {
	list := &opsv1.VMClusterOperationList{}
	if err := r.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing VMClusterOperations: %w", err)
	}
	return operationBlocker(op, list.Items), nil
}

// operationBlocker is OperationBlocker's pure decision.
func operationBlocker(op *opsv1.VMClusterOperation, all []opsv1.VMClusterOperation) *opsv1.VMClusterOperation {
	ns, name := op.VMClusterKey()
	var started, older *opsv1.VMClusterOperation
	for i := range all {
		o := &all[i]
		ons, oname := o.VMClusterKey()
		if o.UID == op.UID || (o.Namespace == op.Namespace && o.Name == op.Name) || ons != ns || oname != name ||
			o.Status.Phase.IsTerminal() || o.DeletionTimestamp != nil {
			continue
		}
		if o.Status.StartTime != nil && (op.Status.StartTime == nil || Older(o, op)) && (started == nil || Older(o, started)) {
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

// ActiveOperation returns "namespace/name" of a VMClusterOperation of the
// VMCluster that started and is not terminal, or "".
func ActiveOperation(ctx context.Context, r client.Reader, vmcluster types.NamespacedName) (string, error) {
	list := &opsv1.VMClusterOperationList{}
	if err := r.List(ctx, list); err != nil {
		return "", fmt.Errorf("listing VMClusterOperations: %w", err)
	}
	for i := range list.Items {
		o := &list.Items[i]
		ns, name := o.VMClusterKey()
		if ns == vmcluster.Namespace && name == vmcluster.Name && o.Status.StartTime != nil && !o.Status.Phase.IsTerminal() {
			return o.Namespace + "/" + o.Name, nil
		}
	}
	return "", nil
}

// OperationActing returns "namespace/name" of a VMClusterOperation of the
// VMCluster that a ClusterRestore rs waits for: started, not terminal, and
// acting (a step past Pending) or older than rs; or "".
func OperationActing(ctx context.Context, r client.Reader, vmcluster types.NamespacedName, rs client.Object) (string, error) {
	list := &opsv1.VMClusterOperationList{}
	if err := r.List(ctx, list); err != nil {
		return "", fmt.Errorf("listing VMClusterOperations: %w", err)
	}
	if o := operationActing(vmcluster, rs, list.Items); o != nil {
		return o.Namespace + "/" + o.Name, nil
	}
	return "", nil
}

// operationActing is OperationActing's pure decision.
func operationActing(vmcluster types.NamespacedName, rs client.Object, all []opsv1.VMClusterOperation) *opsv1.VMClusterOperation {
	for i := range all {
		o := &all[i]
		ns, name := o.VMClusterKey()
		if ns != vmcluster.Namespace || name != vmcluster.Name || o.Status.StartTime == nil || o.Status.Phase.IsTerminal() {
			continue
		}
		if operationStartedAStep(o) || Older(o, rs) {
			return o
		}
	}
	return nil
}

// operationStartedAStep reports whether any step of o is past Pending.
func operationStartedAStep(o *opsv1.VMClusterOperation) bool {
	for _, st := range o.Status.Steps {
		if st.Phase != opsv1.StepPhasePending && st.Phase != "" {
			return true
		}
	}
	return false
}
