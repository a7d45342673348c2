package upgrades

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/events"
)

// Events returns a page of the Events of an operation and of the objects
// it touched, newest first: the ClusterUpgradeOperation; the Nodes of its
// node groups (old and new, selected as the operator selects them,
// through the cloud provider's node-group selector); the VMCluster and
// vmstorage StatefulSet of each VMStorage rollout; and the Node, Pod and
// PodDisruptionBudget of its current blocker (status.blockedBy). Nodes
// that no longer exist are not found (their Events are not listed).
func (s *Service) Events(ctx context.Context, id string, q events.Query) (events.List, error) {
	op, err := s.find(ctx, id)
	if err != nil {
		return events.List{}, err
	}
	refs, err := s.touched(ctx, op)
	if err != nil {
		return events.List{}, err
	}
	out, err := events.Page(ctx, s.live(), refs, q)
	if err != nil {
		return events.List{}, apierror.FromKubernetes(err)
	}
	return out, nil
}

func (s *Service) live() client.Reader {
	if s.Live != nil {
		return s.Live
	}
	return s.Reader
}

func (s *Service) touched(ctx context.Context, op *opsv1.ClusterUpgradeOperation) ([]events.Ref, error) {
	refs := []events.Ref{{Kind: "ClusterUpgradeOperation", Namespace: op.Namespace, Name: op.Name, UID: op.UID}}
	var groups []string
	for _, ng := range op.Spec.NodeGroupUpgrades {
		groups = append(groups, ng.NodeGroupName)
		if ng.NewNodeGroupName != "" {
			groups = append(groups, ng.NewNodeGroupName)
		}
		if ng.RequiresVMStorageRollout {
			ns, name := ng.RolloutVMCluster()
			refs = append(refs, events.Ref{Kind: "VMCluster", Namespace: ns, Name: name})
			ns, name = ng.VMStorageStatefulSet()
			refs = append(refs, events.Ref{Kind: "StatefulSet", Namespace: ns, Name: name})
		}
	}
	if b := op.Status.BlockedBy; b != nil {
		if b.Node != "" {
			refs = append(refs, events.Ref{Kind: "Node", Name: b.Node})
		}
		if b.Pod != nil {
			refs = append(refs, events.Ref{Kind: "Pod", Namespace: b.Pod.Namespace, Name: b.Pod.Name})
		}
		if p := b.PodDisruptionBudget; p != nil {
			refs = append(refs, events.Ref{Kind: "PodDisruptionBudget", Namespace: p.Namespace, Name: p.Name})
		}
	}
	if len(groups) == 0 || s.Providers == nil {
		return refs, nil
	}
	p, ref, err := s.Providers.Resolve(string(op.Spec.CloudProvider), op.Spec.K8sClusterName, op.Spec.Region)
	if err != nil {
		// Without the provider the Nodes cannot be selected; the
		// operation's own Events still say what happened.
		return refs, nil
	}
	for _, g := range groups {
		sel, err := cloud.NodeSelectorFor(ctx, p, ref, g)
		if err != nil {
			return nil, apierror.Unavailable("the cloud provider could not name the Nodes of node group %q; retry the request", g).WithCause(err)
		}
		var nodes corev1.NodeList
		if err := s.live().List(ctx, &nodes, client.MatchingLabels(sel)); err != nil {
			return nil, apierror.FromKubernetes(fmt.Errorf("listing the Nodes of node group %s: %w", g, err))
		}
		for _, n := range nodes.Items {
			refs = append(refs, events.Ref{Kind: "Node", Name: n.Name, UID: n.UID})
		}
	}
	return refs, nil
}
