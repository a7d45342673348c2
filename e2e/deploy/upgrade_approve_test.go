package deploy

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// TestUpgradeApprovePolicy installs the chart and shows the GitOps twin of
// the REST API's approve permission: a caller that may patch
// ClusterUpgradeOperations but lacks the verb approve cannot add a gate id
// to spec.approved (and can still pause); ops-apiserver's ServiceAccount,
// which writes the approvals of PUT .../approve, can.
func TestUpgradeApprovePolicy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	in := install(t, nil)
	ns := in.ns
	g.Expect(env.Client.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gitops"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{opsv1.GroupVersion.Group}, Resources: []string{"clusterupgradeoperations"},
			Verbs: []string{"get", "list", "create", "update", "patch"}}},
	})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gitops"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "gitops"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "gitops"},
	})).To(Succeed())
	gitops := clientAs(t, ns, "gitops")
	server := clientAs(t, ns, in.serverSA())

	op := &opsv1.ClusterUpgradeOperation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gated"},
		Spec: opsv1.ClusterUpgradeOperationSpec{K8sClusterName: "c", Region: "r", CloudProvider: opsv1.CloudProviderMock, TargetVersion: "1.30",
			Approvals:         []opsv1.ApprovalGate{opsv1.GateBeforeNodeGroups},
			NodeGroupUpgrades: []opsv1.NodeGroupUpgrade{{NodeGroupName: "a", Strategy: opsv1.StrategyInPlace}}},
	}
	g.Expect(gitops.Create(ctx, op)).To(Succeed())
	approve := func(c client.Client, opts []client.PatchOption, ids ...string) error {
		cur := &opsv1.ClusterUpgradeOperation{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(op), cur); err != nil {
			return err
		}
		next := cur.DeepCopy()
		next.Spec.Approved = ids
		return c.Patch(ctx, next, client.MergeFrom(cur), opts...)
	}
	dryRun := []client.PatchOption{client.DryRunAll}
	// The policy's binding takes a moment to be enforced (probed with dry
	// runs, which go through admission and store nothing).
	g.Eventually(func() error { return approve(gitops, dryRun, "BeforeNodeGroups") }, 60*time.Second, 200*time.Millisecond).Should(MatchError(And(
		ContainSubstring("ValidatingAdmissionPolicy '"+in.fullname+"-upgrade-approve'"),
		ContainSubstring("approving a gate needs the verb approve on clusterupgradeoperations"),
	)))
	g.Expect(approve(gitops, nil, "BeforeNodeGroups")).To(MatchError(ContainSubstring("approving a gate needs the verb approve")))
	// Creating an operation approved ahead of time is approving too.
	pre := op.DeepCopy()
	pre.ResourceVersion, pre.Name, pre.Spec.Approved = "", "preapproved", []string{"BeforeNodeGroups"}
	g.Expect(gitops.Create(ctx, pre)).To(MatchError(ContainSubstring("approving a gate needs the verb approve")))
	// Anything else of the operation stays the applier's.
	cur := &opsv1.ClusterUpgradeOperation{}
	g.Expect(gitops.Get(ctx, client.ObjectKeyFromObject(op), cur)).To(Succeed())
	paused := cur.DeepCopy()
	paused.Spec.Paused = true
	g.Expect(gitops.Patch(ctx, paused, client.MergeFrom(cur))).To(Succeed())

	g.Expect(approve(server, nil, "BeforeNodeGroups")).To(Succeed())
	got := &opsv1.ClusterUpgradeOperation{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(op), got)).To(Succeed())
	g.Expect(got.Spec.Approved).To(Equal([]string{"BeforeNodeGroups"}))
	// Unchanged approvals pass the policy for anyone.
	g.Expect(gitops.Get(ctx, client.ObjectKeyFromObject(op), cur)).To(Succeed())
	resumed := cur.DeepCopy()
	resumed.Spec.Paused = false
	g.Expect(gitops.Patch(ctx, resumed, client.MergeFrom(cur))).To(Succeed())
}
