package mock

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// KwokAnnotation marks Nodes for kwok, which plays their kubelets in the
// local stack. Without kwok (plain envtest) the provider sets the Ready
// condition itself.
const KwokAnnotation = "kwok.x-k8s.io/node"

// ClusterLabel names the simulated cluster a Node belongs to (several
// simulated clusters may share one Kubernetes API server in tests).
const ClusterLabel = "mock.ops.observability.tidbcloud.com/cluster"

func nodeName(cluster, group string, i int32) string {
	return fmt.Sprintf("%s-%s-node-%d", cluster, group, i)
}

// ensureNodes makes the group's Nodes match its state: one Node per unit of
// size, labelled with the group, its instance type and labels, tainted with
// its taints, and reporting its version. Idempotent.
func (p *Provider) ensureNodes(ctx context.Context, cluster, group string, ng *NodeGroupState) error {
	for i := int32(0); i < ng.Size; i++ {
		labels := maps.Clone(ng.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		labels[NodeGroupLabel] = group
		labels[ClusterLabel] = cluster
		labels[corev1.LabelHostname] = nodeName(cluster, group, i)
		labels["kubernetes.io/os"] = "linux"
		labels["type"] = "kwok"
		if len(ng.InstanceTypes) > 0 {
			labels[corev1.LabelInstanceTypeStable] = ng.InstanceTypes[0]
		}
		var taints []corev1.Taint
		for _, t := range ng.Taints {
			taints = append(taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
		}
		node := &corev1.Node{}
		err := p.Client.Get(ctx, client.ObjectKey{Name: nodeName(cluster, group, i)}, node)
		switch {
		case apierrors.IsNotFound(err):
			node = &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: nodeName(cluster, group, i), Labels: labels, Annotations: map[string]string{KwokAnnotation: "fake"}},
				Spec:       corev1.NodeSpec{Taints: taints},
			}
			if err := p.Client.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating node %s: %w", node.Name, err)
			}
		case err != nil:
			return err
		}
		if err := p.setNodeStatus(ctx, node, ng.Version); err != nil {
			return err
		}
	}
	return nil
}

func (p *Provider) setNodeStatus(ctx context.Context, node *corev1.Node, version string) error {
	patch := client.MergeFrom(node.DeepCopy())
	node.Status.NodeInfo.KubeletVersion = "v" + version
	node.Status.Capacity = corev1.ResourceList{"pods": mustQuantity("110"), "cpu": mustQuantity("8"), "memory": mustQuantity("32Gi")}
	node.Status.Allocatable = node.Status.Capacity
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "simulated by the mock cloud", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}
	found := false
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			if node.Status.Conditions[i].Status == corev1.ConditionTrue {
				ready.LastTransitionTime = node.Status.Conditions[i].LastTransitionTime
			}
			node.Status.Conditions[i] = ready
			found = true
		}
	}
	if !found {
		node.Status.Conditions = append(node.Status.Conditions, ready)
	}
	if err := p.Client.Status().Patch(ctx, node, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("updating status of node %s: %w", node.Name, err)
	}
	return nil
}

// NodeSelector implements cloud.NodeGroupSelector: a group's Nodes are
// the ones of its name and its cluster, since the simulated clusters share
// one Kubernetes cluster (and may reuse group names).
func (p *Provider) NodeSelector(_ context.Context, c cloud.ClusterRef, group string) (map[string]string, error) {
	return map[string]string{NodeGroupLabel: group, ClusterLabel: c.Name}, nil
}

// deleteNodes removes every Node of the group.
func (p *Provider) deleteNodes(ctx context.Context, cluster, group string) error {
	return p.Client.DeleteAllOf(ctx, &corev1.Node{}, client.MatchingLabels{NodeGroupLabel: group, ClusterLabel: cluster})
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
