package deploy

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// TestClusterBackupSchedulePolicy applies the chart's
// ValidatingAdmissionPolicy for ClusterBackupSchedules, as rendered with and
// without backups.fsRoots, to the real API server: a schedule of a VMCluster
// in another namespace, and an fs:// destination outside the roots (or any
// with no roots), are refused at admission with the words of ops-operator's
// preflight (InvalidSpec) and of ops-apiserver, while object stores and fs://
// paths inside a root are admitted. Each rendering's binding is narrowed to
// its own test namespace so that the two can be installed at once.
func TestClusterBackupSchedulePolicy(t *testing.T) {
	ctx := context.Background()
	noRoots := env.NewNamespace(t)
	withRoots := env.NewNamespace(t)
	roots := []string{"/var/lib/vm-backups", "/srv/b/"}
	name := applySchedulePolicy(t, "sched-policy", noRoots, nil)
	applySchedulePolicy(t, "sched-policy-roots", withRoots, map[string]any{"backups": map[string]any{"fsRoots": []any{roots[0], roots[1]}}})

	schedule := func(ns, vmclusterNamespace, url string) *opsv1.ClusterBackupSchedule {
		return &opsv1.ClusterBackupSchedule{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "s-"},
			Spec: opsv1.ClusterBackupScheduleSpec{
				Schedule:    "@daily",
				VMCluster:   opsv1.VMClusterReference{Namespace: vmclusterNamespace, Name: "vmc"},
				Destination: opsv1.BackupDestination{URL: url},
				KeepLast:    ptr.To[int32](3),
			},
		}
	}
	// ops-operator's words for an fs:// destination (the preflight and
	// ops-apiserver share opsv1.FSDestinationProblem).
	fsProblem := func(url string, roots []string) string {
		return "spec.destination.url: " + opsv1.FSDestinationProblem(url, roots)
	}

	g := NewWithT(t)
	// The API server loads a new policy asynchronously: wait until each
	// refuses, on a dry run so nothing is left behind meanwhile.
	for _, ns := range []string{noRoots, withRoots} {
		g.Eventually(func() error {
			return env.Client.Create(ctx, schedule(ns, "elsewhere", "s3://bucket/path"), client.DryRunAll)
		}, 60*time.Second, 200*time.Millisecond).Should(MatchError(ContainSubstring(
			"spec.vmCluster.namespace elsewhere: a ClusterBackupSchedule may only back up a VMCluster in its own namespace " + ns)))
	}

	for _, tc := range []struct {
		ns, url string
		// refused is the message, "" when admitted.
		refused string
	}{
		{noRoots, "s3://bucket/path", ""},
		{noRoots, "azblob://container/path", ""},
		{noRoots, "fs:///var/lib/vm-backups/x", fsProblem("fs:///var/lib/vm-backups/x", nil)},
		{withRoots, "fs:///var/lib/vm-backups", ""},
		{withRoots, "fs:///var/lib/vm-backups/prod/", ""},
		{withRoots, "fs:///srv/b/x", ""},
		{withRoots, "gs://bucket/path", ""},
		{withRoots, "fs:///var/lib/vm-backups-other", fsProblem("fs:///var/lib/vm-backups-other", roots)},
		{withRoots, "fs:///srv", fsProblem("fs:///srv", roots)},
		{withRoots, "fs:///etc/x", fsProblem("fs:///etc/x", roots)},
		// Cleaned by ops-operator to /etc: refused with the same words.
		{withRoots, "fs:///var/lib/vm-backups/../../../etc", fsProblem("fs:///etc", roots)},
	} {
		err := env.Client.Create(ctx, schedule(tc.ns, "", tc.url))
		if tc.refused == "" {
			g.Expect(err).NotTo(HaveOccurred(), "%s in %s", tc.url, tc.ns)
			continue
		}
		g.Expect(err).To(MatchError(And(ContainSubstring("ValidatingAdmissionPolicy '"), ContainSubstring(tc.refused))), "%s in %s", tc.url, tc.ns)
	}
	// Its own namespace, explicit, is admitted; another is refused when
	// persisted for real too, and nothing refused was created.
	g.Expect(env.Client.Create(ctx, schedule(noRoots, noRoots, "s3://bucket/path"))).To(Succeed())
	g.Expect(env.Client.Create(ctx, schedule(noRoots, withRoots, "s3://bucket/path"))).To(MatchError(And(
		ContainSubstring("ValidatingAdmissionPolicy '"+name+"'"), ContainSubstring("in its own namespace "+noRoots))))
	for ns, want := range map[string]int{noRoots: 3, withRoots: 4} {
		list := &opsv1.ClusterBackupScheduleList{}
		g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(want), ns)
	}
}

// applySchedulePolicy renders the chart as release with values and applies
// its ClusterBackupSchedule policy and binding, the binding matching only
// namespace ns, until the test ends; it returns the policy's name.
func applySchedulePolicy(t *testing.T, release, ns string, values map[string]any) string {
	t.Helper()
	res := renderChart(t, release, ns, values)
	name := release + "-ops-server-clusterbackupschedule"
	policy := find(t, res.Objects, "ValidatingAdmissionPolicy", name)
	binding := find(t, res.Objects, "ValidatingAdmissionPolicyBinding", name).DeepCopy()
	if err := unstructured.SetNestedStringMap(binding.Object, map[string]string{"kubernetes.io/metadata.name": ns},
		"spec", "matchResources", "namespaceSelector", "matchLabels"); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []*unstructured.Unstructured{policy, binding} {
		if err := apply(context.Background(), obj, false); err != nil {
			t.Fatalf("applying %s %s: %v", obj.GetKind(), name, err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
	return name
}

// TestClusterRestoreNamespacePolicy: the chart's ClusterRestore policy,
// applied as rendered, refuses a restore into a VMCluster in another
// namespace (ops-operator's InvalidSpec words) and admits one into its own.
func TestClusterRestoreNamespacePolicy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	name := applyPolicy(t, "restore-policy", ns, "ops-server-clusterrestore-namespace")
	restore := func(vmclusterNamespace string) *opsv1.ClusterRestore {
		return &opsv1.ClusterRestore{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "r-"},
			Spec:       opsv1.ClusterRestoreSpec{Backup: "b-1", VMCluster: &opsv1.VMClusterReference{Namespace: vmclusterNamespace, Name: "vmc"}},
		}
	}
	g.Eventually(func() error {
		return env.Client.Create(ctx, restore("elsewhere"), client.DryRunAll)
	}, 60*time.Second, 200*time.Millisecond).Should(MatchError(And(
		ContainSubstring("ValidatingAdmissionPolicy '"+name+"'"),
		ContainSubstring("spec.vmCluster.namespace elsewhere: a ClusterRestore may only restore into a VMCluster in its own namespace "+ns),
	)))
	g.Expect(env.Client.Create(ctx, restore(ns))).To(Succeed())
	list := &opsv1.ClusterRestoreList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1))
}
