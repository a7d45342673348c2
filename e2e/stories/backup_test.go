package stories

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/e2e/stack"
	"github.com/tidbcloud/ops-server/e2e/suite"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// storyBackup backs up the vmcluster of story 2 (deployed here when the
// story runs alone) to a directory through the REST API. kwok Pods run no process; the stack
// backs each vmstorage Pod with a real vmstorage on 127.0.0.1 and
// ops-operator runs in local backup mode (real snapshots, real vmbackup as a
// local process), so the backup really succeeds.
func storyBackup(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	code, body := suite.Call(t, http.MethodGet, suite.VMClusters+"/vmcluster", nil)
	if code == http.StatusNotFound {
		code, body = suite.Call(t, http.MethodPost, suite.VMClusters, map[string]any{
			"name": "vmcluster",
			"values": map[string]any{"vmstorage": map[string]any{
				"replicaCount": 3, "nodeSelector": map[string]any{"node-role.observability/vmstorage": "true"},
			}},
		})
		g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	} else {
		g.Expect(code).To(Equal(http.StatusOK), "%v", body)
	}
	suite.WaitVMCluster(t, "vmcluster", "RUNNING", 3*time.Minute)
	sts := &appsv1.StatefulSet{}
	g.Expect(st.Env.Client.Get(ctx, client.ObjectKey{Namespace: obs, Name: "vmstorage-vmcluster"}, sts)).To(Succeed())
	replicas := *sts.Spec.Replicas
	g.Expect(replicas).To(BeNumerically(">", 0))
	g.Eventually(func(g Gomega) { stsReady(g, sts.Name, replicas) }, 3*time.Minute, time.Second).Should(Succeed())

	// The stack's vmstorage processes are up once every Pod carries its
	// endpoint (a real kubelet would have started the container before the
	// Pod became Ready; kwok only says it did).
	endpoints := map[string]string{}
	g.Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		sel, err := metav1.LabelSelectorAsSelector(sts.Spec.Selector)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.Env.Client.List(ctx, pods, client.InNamespace(obs), client.MatchingLabelsSelector{Selector: sel})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(int(replicas)))
		clear(endpoints)
		for _, p := range pods.Items {
			ep := p.Annotations[stack.VMStorageEndpointAnnotation]
			g.Expect(ep).To(HavePrefix("http://127.0.0.1:"), "pod %s", p.Name)
			g.Expect(p.Annotations[stack.VMStorageDataPathAnnotation]).To(HavePrefix(st.VMStorageRoot()+string(filepath.Separator)), "pod %s", p.Name)
			// On a claim (the chart's default storage), in the claim's volume.
			for _, v := range p.Spec.Volumes {
				if v.PersistentVolumeClaim != nil {
					g.Expect(p.Annotations[stack.VMStorageDataPathAnnotation]).To(Equal(st.VolumeDir(obs, v.PersistentVolumeClaim.ClaimName)), "pod %s", p.Name)
				}
			}
			endpoints[p.Name] = ep
		}
	}, 2*time.Minute, time.Second).Should(Succeed())

	// fs:// destinations must be inside the stack's backup root.
	g.Expect(os.MkdirAll(st.BackupRoot(), 0o755)).To(Succeed())
	dest, err := os.MkdirTemp(st.BackupRoot(), "story-")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = os.RemoveAll(dest) })
	backups := suite.VMClusters + "/vmcluster/backups"
	code, body = suite.Call(t, http.MethodPost, backups, map[string]any{"destination": map[string]any{"url": "fs://" + dest}})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	g.Expect(body["phase"]).To(Equal("Pending"))
	g.Expect(body["name"]).To(HavePrefix("vmclusters/vmcluster/backups/"))
	id := strings.TrimPrefix(body["name"].(string), "vmclusters/vmcluster/backups/")

	var done map[string]any
	g.Eventually(func(g Gomega) {
		code, body := suite.Call(t, http.MethodGet, backups+"/"+id, nil)
		done = body
		g.Expect(code).To(Equal(http.StatusOK), "%v", body)
		g.Expect(body["phase"]).To(Equal("Succeeded"), "progress=%v message=%v replicas=%v", body["progress"], body["message"], body["replicas"])
	}, 3*time.Minute, time.Second).Should(Succeed())

	g.Expect(done["progress"]).To(Equal(fmt.Sprintf("%d/%d", replicas, replicas)))
	reps, _ := done["replicas"].([]any)
	g.Expect(reps).To(HaveLen(int(replicas)), "one entry per vmstorage replica")
	var got, want []string
	for pod := range endpoints {
		want = append(want, pod)
	}
	for _, raw := range reps {
		r := raw.(map[string]any)
		pod, _ := r["pod"].(string)
		got = append(got, pod)
		g.Expect(r["phase"]).To(Equal("Succeeded"), "%v", r)
		dir := filepath.Join(dest, "vmcluster", id, pod)
		g.Expect(r["destination"]).To(Equal("fs://" + dir))
		g.Expect(filepath.Join(dir, "backup_complete.ignore")).To(BeAnExistingFile(), "vmbackup finished the backup of %s", pod)
	}
	sort.Strings(got)
	sort.Strings(want)
	g.Expect(got).To(Equal(want))
	entries, err := os.ReadDir(filepath.Join(dest, "vmcluster", id))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(HaveLen(int(replicas)), "nothing but one backup per replica")

	// The snapshots were taken on the Pods' local vmstorage processes.
	b := &opsv1.ClusterBackup{}
	g.Expect(st.Env.Client.Get(ctx, client.ObjectKey{Namespace: obs, Name: id}, b)).To(Succeed())
	for _, r := range b.Status.Replicas {
		g.Expect(r.Endpoint).To(Equal(endpoints[r.Pod]), "%s", describeBackup(b))
	}
}

func describeBackup(b *opsv1.ClusterBackup) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "phase=%s progress=%s", b.Status.Phase, b.Status.Progress)
	for _, c := range b.Status.Conditions {
		fmt.Fprintf(&sb, "\n  %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
	}
	for _, r := range b.Status.Replicas {
		fmt.Fprintf(&sb, "\n  %s %s endpoint=%s snapshot=%s bytes=%d err=%q", r.Pod, r.State, r.Endpoint, r.SnapshotName, r.Bytes, r.Error)
	}
	return sb.String()
}
