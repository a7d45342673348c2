package deploy

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// TestVMClusterOperationNamespacePolicy: the chart's policy refuses a
// VMClusterOperation naming a VMCluster of another namespace at admission
// (ops-operator's preflight refuses the same with the same words where the
// policy is not installed: vmclusterop TestPreflightRefusesAnotherNamespace).
func TestVMClusterOperationNamespacePolicy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	other := env.NewNamespace(t)
	name := applyPolicy(t, "vmcop-policy", ns, "ops-server-vmclusteroperation-namespace")
	op := func(vmclusterNamespace string) *opsv1.VMClusterOperation {
		return &opsv1.VMClusterOperation{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "op-"},
			Spec: opsv1.VMClusterOperationSpec{
				VMCluster: opsv1.VMClusterReference{Namespace: vmclusterNamespace, Name: "vmc"},
				Type:      opsv1.OperationHorizontalScaling, HorizontalScaling: &opsv1.HorizontalScaling{VMInsert: ptr.To[int32](2)},
			},
		}
	}
	g.Eventually(func() error {
		return env.Client.Create(ctx, op(other), client.DryRunAll)
	}, 60*time.Second, 200*time.Millisecond).Should(MatchError(And(
		ContainSubstring("ValidatingAdmissionPolicy '"+name+"'"),
		ContainSubstring("spec.vmCluster.namespace "+other+": a VMClusterOperation may only operate on a VMCluster in its own namespace "+ns),
	)))
	g.Expect(env.Client.Create(ctx, op(ns))).To(Succeed())
	g.Expect(env.Client.Create(ctx, op(""))).To(Succeed())
}
