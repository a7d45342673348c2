package deploy

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// TestClusterBackupNamespacePolicy applies the chart's
// ValidatingAdmissionPolicy and its binding, as rendered, to the real API
// server and shows that a ClusterBackup naming a VMCluster in another
// namespace is refused at admission, kubectl and GitOps alike, while one in
// its own namespace (explicit or omitted) is admitted.
func TestClusterBackupNamespacePolicy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	other := env.NewNamespace(t)
	// A release name of its own: the policy is cluster-scoped and must not
	// collide with other tests' renders.
	res := renderChart(t, "backup-policy", ns, nil)
	name := "backup-policy-ops-server-clusterbackup-namespace"
	policy := find(t, res.Objects, "ValidatingAdmissionPolicy", name)
	binding := find(t, res.Objects, "ValidatingAdmissionPolicyBinding", name)
	for _, obj := range []*unstructured.Unstructured{policy, binding} {
		g.Expect(apply(ctx, obj, false)).To(Succeed())
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}

	backup := func(vmclusterNamespace string) *opsv1.ClusterBackup {
		return &opsv1.ClusterBackup{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "b-"},
			Spec: opsv1.ClusterBackupSpec{
				VMCluster:   opsv1.VMClusterReference{Namespace: vmclusterNamespace, Name: "vmc"},
				Destination: opsv1.BackupDestination{URL: "s3://bucket/path"},
			},
		}
	}
	// The API server loads a new policy asynchronously: wait until it
	// refuses, on a dry run so nothing is left behind meanwhile.
	g.Eventually(func() error {
		return env.Client.Create(ctx, backup(other), client.DryRunAll)
	}, 60*time.Second, 200*time.Millisecond).Should(MatchError(And(
		ContainSubstring("ValidatingAdmissionPolicy '"+name+"'"),
		ContainSubstring("spec.vmCluster.namespace "+other+": a ClusterBackup may only back up a VMCluster in its own namespace "+ns),
	)))
	// Persisted for real: refused too, and nothing is created.
	g.Expect(env.Client.Create(ctx, backup(other))).To(MatchError(ContainSubstring("in its own namespace")))
	list := &opsv1.ClusterBackupList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	g.Expect(list.Items).To(BeEmpty())

	// Its own namespace, explicit or omitted, is admitted.
	g.Expect(env.Client.Create(ctx, backup(ns))).To(Succeed())
	g.Expect(env.Client.Create(ctx, backup(""))).To(Succeed())
}
