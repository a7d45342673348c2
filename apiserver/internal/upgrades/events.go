package upgrades

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
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
// PodDisruptionBudget of its current blocker (status.blockedBy). The
// Nodes are found from the Events about Nodes (each Node read to match
// its labels: ops-apiserver may get Nodes but not list them); Nodes that
// no longer exist are not found (their Events are not listed).
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
	var sels []labels.Selector
	for _, g := range groups {
		sel, err := cloud.NodeSelectorFor(ctx, p, ref, g)
		if err != nil {
			return nil, apierror.Unavailable("the cloud provider could not name the Nodes of node group %q; retry the request", g).WithCause(err)
		}
		sels = append(sels, labels.SelectorFromSet(sel))
	}
	// The Nodes that have Events (ops-apiserver may get Nodes, not list
	// them), kept when their labels put them in one of the groups.
	var evs corev1.EventList
	if err := s.live().List(ctx, &evs, client.InNamespace(events.ClusterScopedNamespace),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("involvedObject.kind", "Node")}); err != nil {
		return nil, apierror.FromKubernetes(fmt.Errorf("listing the Events of Nodes: %w", err))
	}
	seen := map[string]bool{}
	for _, e := range evs.Items {
		name := e.InvolvedObject.Name
		if seen[name] {
			continue
		}
		seen[name] = true
		n := &corev1.Node{}
		err := s.live().Get(ctx, types.NamespacedName{Name: name}, n)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, apierror.FromKubernetes(fmt.Errorf("reading Node %s: %w", name, err))
		}
		if slices.ContainsFunc(sels, func(sel labels.Selector) bool { return sel.Matches(labels.Set(n.Labels)) }) {
			refs = append(refs, events.Ref{Kind: "Node", Name: n.Name, UID: n.UID})
		}
	}
	return refs, nil
}
