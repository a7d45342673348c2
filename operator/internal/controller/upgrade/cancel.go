package upgrade

// A cancel stops an operation between two actions and undoes exactly one
// thing: the cordon of the old node group's Nodes, so that a cancelled
// blue-green upgrade does not leave a node group nobody may schedule on.
// Everything else a cloud did (a control plane upgrade, a created node
// group) cannot be, or should not be, undone by the operator: status lists
// it in leftBehind for a person to decide.
//
// Which Nodes the operation cordoned is recorded on the Nodes themselves,
// in the same write that cordons them (opsv1.CordonedByAnnotation): a
// crash between the cordon and the status patch loses nothing, and a Node
// that someone else had cordoned before is never taken over. The cancel
// ends (phase Cancelled) only after every such Node is uncordoned; an API
// error on the way is retried, never a failure.

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/drain"
)

// cordonedBy is the value of opsv1.CordonedByAnnotation for op.
func cordonedBy(op *opsv1.ClusterUpgradeOperation) string {
	return op.Namespace + "/" + op.Name
}

// cordonResult is what cordonOwned did.
type cordonResult struct {
	// cordoned are the Nodes cordoned by this operation (now or before).
	cordoned int
	// foreign are the Nodes found cordoned by someone else: left as they
	// are, and not uncordoned by a cancel.
	foreign int
}

// cordonOwned cordons the Nodes and marks each one it cordons as cordoned
// by op, in one merge patch guarded by the Node's resourceVersion (a Node
// cordoned by someone between the read and the write is not taken over;
// the conflict is retried with a fresh read). A Node already cordoned
// without op's mark is left alone; one already marked needs nothing.
func (r *Reconciler) cordonOwned(ctx context.Context, op *opsv1.ClusterUpgradeOperation, nodes []corev1.Node) (cordonResult, error) {
	var res cordonResult
	owner := cordonedBy(op)
	for i := range nodes {
		n := &nodes[i]
		mark, marked := n.Annotations[opsv1.CordonedByAnnotation]
		switch {
		case n.Spec.Unschedulable && marked && mark == owner:
			res.cordoned++
			continue
		case n.Spec.Unschedulable:
			res.foreign++
			continue
		}
		patch := map[string]any{
			"metadata": map[string]any{
				"resourceVersion": n.ResourceVersion,
				"annotations":     map[string]any{opsv1.CordonedByAnnotation: owner},
			},
			"spec": map[string]any{"unschedulable": true},
		}
		if err := r.patchNode(ctx, n.Name, patch); err != nil {
			return res, fmt.Errorf("cordoning node %s: %w", n.Name, err)
		}
		res.cordoned++
	}
	return res, nil
}

// uncordonOwned uncordons every Node that op cordoned and removes its mark,
// each with a merge patch guarded by the Node's resourceVersion. Nodes are
// found by the mark alone, so it needs no cloud call and no node-group
// lookup, and finds the Nodes of any node group of op. It returns how many
// Nodes it uncordoned; a Node deleted meanwhile needs nothing.
func (r *Reconciler) uncordonOwned(ctx context.Context, op *opsv1.ClusterUpgradeOperation) (int, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := r.APIReader.List(ctx, list); err != nil {
		return 0, fmt.Errorf("listing nodes: %w", err)
	}
	owner, count := cordonedBy(op), 0
	for i := range list.Items {
		n := &list.Items[i]
		if n.Annotations[opsv1.CordonedByAnnotation] != owner {
			continue
		}
		patch := map[string]any{
			"metadata": map[string]any{
				"resourceVersion": n.ResourceVersion,
				"annotations":     map[string]any{opsv1.CordonedByAnnotation: nil},
			},
			"spec": map[string]any{"unschedulable": nil},
		}
		if err := r.patchNode(ctx, n.Name, patch); err != nil {
			return count, fmt.Errorf("uncordoning node %s: %w", n.Name, err)
		}
		count++
	}
	return count, nil
}

// patchNode merge-patches a Node; a Node that no longer exists is no
// error.
func (r *Reconciler) patchNode(ctx context.Context, name string, patch map[string]any) error {
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	err = r.Client.Patch(ctx, node, ctrl.RawPatch(types.MergePatchType, body), ctrl.FieldOwner(drain.FieldOwner))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// cordonStep is the CordonNodes step: cordon the old node group's Nodes,
// marking the ones this operation cordons.
func (r *Reconciler) cordonStep(ctx context.Context, s *scope, step *opsv1.UpgradeStep, nodes []corev1.Node) error {
	res, err := r.cordonOwned(ctx, s.op, nodes)
	if err != nil {
		if apierrors.IsConflict(err) {
			// A Node changed since it was listed: list again at once.
			step.Message = "Retrying: " + err.Error()
			s.requeue = r.Options.RetryInterval
			return nil
		}
		return err
	}
	msg := fmt.Sprintf("Cordoned %d nodes of node group %s", res.cordoned, step.Target)
	if res.foreign > 0 {
		msg += fmt.Sprintf(" (%d more were already cordoned by someone else; a cancel leaves them cordoned)", res.foreign)
	}
	r.succeedStep(s.op, step, msg)
	return nil
}

// cancelOperation ends a cancelled operation: it uncordons the Nodes the
// operation cordoned, then skips the steps not run and ends Cancelled. It
// starts no cloud call. Until the uncordon is written the operation stays
// Cancelling and the error is in the current step's message.
func (r *Reconciler) cancelOperation(ctx context.Context, s *scope, cur int) {
	n, err := r.uncordonOwned(ctx, s.op)
	if err != nil {
		log.FromContext(ctx).Info("Uncordoning on cancel failed; retrying", "error", err.Error())
		if cur >= 0 {
			s.op.Status.Steps[cur].Message = "Cancelling: uncordoning the Nodes this operation cordoned failed; retrying: " + err.Error()
		}
		s.requeue = r.Options.RetryInterval
		return
	}
	if n > 0 {
		r.event(s.op, "Normal", "Uncordoned", "Uncordoned %d nodes that this operation had cordoned", n)
	}
	r.cancel(s.op)
}

// cancellingMessage is the Ready message of a Cancelling operation: which
// step's cloud operation it waits for (by id), or why the cancel is not
// done yet.
func cancellingMessage(op *opsv1.ClusterUpgradeOperation) string {
	st := op.Status.Step(op.Status.CurrentStep)
	switch {
	case st == nil:
		return "Cancelling"
	case inFlight(st):
		return fmt.Sprintf("Cancelling: waiting for the cloud operation %s of step %s to finish; no further cloud call is started", st.OperationID, st.ID)
	case st.Message != "":
		return st.Message
	}
	return "Cancelling"
}

// The bounds of status.leftBehind in the CRD.
const (
	maxLeftBehind       = 256
	maxLeftBehindReason = 1024
)

// leftBehind lists what an operation that stopped before its end leaves
// changed, in step order. It is derived from the steps alone: a step that
// started (startTime set) or succeeded, with the cloud operation it
// recorded.
func leftBehind(op *opsv1.ClusterUpgradeOperation) []opsv1.LeftBehind {
	spec, st := &op.Spec, &op.Status
	var out []opsv1.LeftBehind
	add := func(kind opsv1.LeftBehindKind, ns, name string, step *opsv1.UpgradeStep, format string, args ...any) {
		// Within the CRD's bounds, or the status patch would be refused
		// and the operation never end.
		reason := fmt.Sprintf(format, args...)
		if len(reason) > maxLeftBehindReason {
			reason = reason[:maxLeftBehindReason-3] + "..."
		}
		if len(out) < maxLeftBehind {
			out = append(out, opsv1.LeftBehind{Kind: kind, Namespace: ns, Name: name, StepID: step.ID, Reason: reason})
		}
	}
	cancelled := op.Status.Phase == opsv1.UpgradePhaseCancelled
	for i := range st.Steps {
		step := &st.Steps[i]
		succeeded, failed := step.Phase == opsv1.StepPhaseSucceeded, step.Phase == opsv1.StepPhaseFailed
		started := step.StartTime != nil
		ng := nodeGroupOf(spec, step)
		sibling := func(a opsv1.StepAction) *opsv1.UpgradeStep {
			if ng == nil {
				return nil
			}
			return st.Step(opsv1.NodeGroupStepID(ng.NodeGroupName, a))
		}
		// A blue-green upgrade whose old group is deleted is complete for
		// that node group: nothing of it is left behind.
		if del := sibling(opsv1.ActionDeleteNodeGroup); step.Type == opsv1.StepTypeNodeGroup && del != nil && del.Phase == opsv1.StepPhaseSucceeded {
			continue
		}
		switch step.Action {
		case opsv1.ActionUpgradeControlPlane:
			if succeeded && step.OperationID != "" {
				add(opsv1.LeftBehindControlPlane, "", spec.K8sClusterName, step, "upgraded to %s; a control plane cannot be downgraded", spec.TargetVersion)
			} else if failed && step.OperationID != "" {
				add(opsv1.LeftBehindControlPlane, "", spec.K8sClusterName, step, "the upgrade to %s failed in the cloud (its operation id is in the step); check the cluster's version in the cloud", spec.TargetVersion)
			}
		case opsv1.ActionUpdateAddon:
			version := ""
			if a := addonOf(spec, step); a != nil {
				version = a.Version
			}
			if succeeded && step.OperationID != "" {
				add(opsv1.LeftBehindAddon, "", step.Target, step, "updated to %s", version)
			} else if failed && step.OperationID != "" {
				add(opsv1.LeftBehindAddon, "", step.Target, step, "the update to %s failed in the cloud (its operation id is in the step)", version)
			}
		case opsv1.ActionUpgradeNodeGroup:
			if succeeded {
				add(opsv1.LeftBehindNodeGroup, "", step.Target, step, "upgraded in place to %s; not reverted", spec.TargetVersion)
			} else if failed && step.OperationID != "" {
				add(opsv1.LeftBehindNodeGroup, "", step.Target, step, "the in-place upgrade to %s failed in the cloud (its operation id is in the step); its Nodes may run mixed versions", spec.TargetVersion)
			}
		case opsv1.ActionCreateNodeGroup:
			if ng == nil {
				continue
			}
			if failed && step.OperationID != "" {
				add(opsv1.LeftBehindNodeGroup, "", step.Target, step, "the creation failed in the cloud (its operation id is in the step); a partly created node group may exist and be billed")
			}
			if !succeeded {
				continue
			}
			workloads := "the old node group " + ng.NodeGroupName + " still runs the workloads"
			if d := sibling(opsv1.ActionDrainNodes); d != nil && d.StartTime != nil {
				workloads = "pods evicted from the old node group " + ng.NodeGroupName + " by the drain may run on it"
			}
			if ro := sibling(opsv1.ActionRolloutVMStorage); ro != nil && ro.StartTime != nil {
				workloads += "; vmstorage was moved to it"
			}
			add(opsv1.LeftBehindNodeGroup, "", step.Target, step, "created at %s; %s; both node groups are billed", spec.TargetVersion, workloads)
		case opsv1.ActionRolloutVMStorage:
			if started && ng != nil {
				vmcNamespace, vmcName := ng.RolloutVMCluster()
				add(opsv1.LeftBehindVMCluster, vmcNamespace, vmcName, step,
					"patched with vmClusterHelmValues (and recorded as a post-renderer on its HelmRelease, if it has one): vmstorage is placed on node group %s; revert the placement before deleting %s", ng.NewNodeGroupName, ng.NewNodeGroupName)
			}
		case opsv1.ActionDrainNodes:
			if !started {
				continue
			}
			if cancelled {
				add(opsv1.LeftBehindNodeGroup, "", step.Target, step, "partly drained, not deleted; the Nodes this operation cordoned were uncordoned by the cancel")
			} else {
				add(opsv1.LeftBehindNodeGroup, "", step.Target, step, "partly drained, not deleted; its Nodes stay cordoned (annotation %s); kubectl uncordon them to use the group again", opsv1.CordonedByAnnotation)
			}
		case opsv1.ActionCordonNodes:
			if d := sibling(opsv1.ActionDrainNodes); started && !cancelled && (d == nil || d.StartTime == nil) {
				add(opsv1.LeftBehindNodeGroup, "", step.Target, step, "not deleted; its Nodes stay cordoned (annotation %s); kubectl uncordon them to use the group again", opsv1.CordonedByAnnotation)
			}
		case opsv1.ActionDeleteNodeGroup:
			if failed && step.OperationID != "" {
				add(opsv1.LeftBehindNodeGroup, "", step.Target, step, "the deletion failed in the cloud (its operation id is in the step); the node group may be partly deleted")
			}
		}
	}
	return out
}
