package deploy

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"

	"github.com/tidbcloud/ops-server/e2e/deploy/render"
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
	name := applyPolicy(t, "backup-policy", ns, "ops-server-clusterbackup-namespace")

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

// TestBackupFSRootsValue: the chart value backups.fsRoots reaches both
// binaries — ops-apiserver's configuration file and ops-operator's
// --backup-fs-roots — and is empty by default (no fs:// destination).
func TestBackupFSRootsValue(t *testing.T) {
	g := NewWithT(t)
	operatorArgs := func(res *render.Result) map[string]string {
		dep := toDeployment(t, find(t, res.Objects, "Deployment", "ops-server-operator"))
		return flagMap(t, dep.Spec.Template.Spec.Containers[0].Args)
	}
	fsRoots := func(res *render.Result) any {
		backups, _ := apiserverConfig(t, res)["backups"].(map[string]any)
		return backups["fsRoots"]
	}

	res := renderChart(t, "ops-server", "observability", nil)
	g.Expect(operatorArgs(res)).NotTo(HaveKey("backup-fs-roots"))
	g.Expect(fsRoots(res)).To(BeEmpty())
	find(t, res.Objects, "ValidatingAdmissionPolicy", "ops-server-clusterbackup-namespace")
	find(t, res.Objects, "ValidatingAdmissionPolicyBinding", "ops-server-clusterbackup-namespace")

	res = renderChart(t, "ops-server", "observability", map[string]any{"backups": map[string]any{"fsRoots": []any{"/var/lib/vm-backups", "/srv/b"}}})
	g.Expect(operatorArgs(res)).To(HaveKeyWithValue("backup-fs-roots", "/var/lib/vm-backups,/srv/b"))
	g.Expect(fsRoots(res)).To(Equal([]any{"/var/lib/vm-backups", "/srv/b"}))

	for _, bad := range []string{"relative", "/a,b"} {
		_, err := render.Render(render.Options{ChartDir: chartDir(), ReleaseName: "ops-server", Namespace: "observability",
			Values: map[string]any{"backups": map[string]any{"fsRoots": []any{bad}}}})
		g.Expect(err).To(MatchError(ContainSubstring("fsRoots")), bad)
	}
}
