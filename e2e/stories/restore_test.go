package stories

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/e2e/stack"
	"github.com/tidbcloud/ops-server/e2e/suite"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// restoreCluster is the vmcluster of the restore stories.
const restoreCluster = "restored"

// sharedBackup is the backup of storyRestore, for storyMigrate (the
// stories share it; storyMigrate makes its own when run alone).
var sharedBackup struct{ id, dest string }

// backedUpVMCluster creates the two-replica vmcluster of the restore
// stories (deleted when the test ends), writes 100 series × 100 samples of
// metric through its remote_write endpoint and backs it up through REST.
func backedUpVMCluster(t *testing.T, metric string) (remoteWrite, prometheus, backupID, dest string, now time.Time) {
	g := NewWithT(t)
	ctx := context.Background()
	base := suite.VMClusters + "/" + restoreCluster
	code, body := suite.Call(t, http.MethodPost, suite.VMClusters, map[string]any{
		"name": restoreCluster, "values": map[string]any{"vmstorage": map[string]any{"replicaCount": 2}},
	})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	t.Cleanup(func() { suite.Call(t, http.MethodDelete, base, nil) })
	running := suite.WaitVMCluster(t, restoreCluster, "RUNNING", 3*time.Minute)
	g.Eventually(func(g Gomega) { stsReady(g, "vmstorage-"+restoreCluster, 2) }, 3*time.Minute, time.Second).Should(Succeed())
	remoteWrite, _ = suite.Field(running, "endpoints.remote_write").(string)
	prometheus, _ = suite.Field(running, "endpoints.prometheus").(string)

	samples := fmt.Sprintf(`sum(count_over_time(%s[1d]))`, metric)
	now = time.Now()
	g.Eventually(func() error {
		return stack.WriteSamples(ctx, stack.ImportURL(remoteWrite), metric, 100, 100, now.Add(-time.Hour))
	}, 2*time.Minute, time.Second).Should(Succeed())
	g.Eventually(func() (float64, error) { return stack.QueryScalar(ctx, prometheus, samples) }, 2*time.Minute, time.Second).Should(Equal(10000.0))

	// The backup, through REST.
	g.Expect(os.MkdirAll(st.BackupRoot(), 0o755)).To(Succeed())
	dest, err := os.MkdirTemp(st.BackupRoot(), "restore-story-")
	g.Expect(err).NotTo(HaveOccurred())
	code, body = suite.Call(t, http.MethodPost, base+"/backups", map[string]any{"destination": map[string]any{"url": "fs://" + dest}})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	backupID = strings.TrimPrefix(body["name"].(string), "vmclusters/"+restoreCluster+"/backups/")
	g.Eventually(func(g Gomega) {
		code, body := suite.Call(t, http.MethodGet, base+"/backups/"+backupID, nil)
		g.Expect(code).To(Equal(http.StatusOK), "%v", body)
		g.Expect(body["phase"]).To(Equal("Succeeded"), "%v", body)
	}, 3*time.Minute, time.Second).Should(Succeed())

	sharedBackup.id, sharedBackup.dest = backupID, dest
	return remoteWrite, prometheus, backupID, dest, now
}

// storyRestore: 10,000 samples written into a two-replica vmcluster are
// backed up (a ClusterBackup through REST, as story 4); then 1,000 more
// samples are written and some series deleted; a restore through REST (a
// ClusterRestore) brings the vmcluster back to the backup — with ops-operator killed while a
// replica is being restored — and exactly the first 10,000 samples are
// readable through the select endpoint again. Each replica's vmstorage
// process was really stopped (the stack's backer honours the hold) and
// vmrestore ran exactly once per replica.
func storyRestore(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	base := suite.VMClusters + "/" + restoreCluster
	const metric = "restore_story"
	samples := fmt.Sprintf(`sum(count_over_time(%s[1d]))`, metric)
	series := fmt.Sprintf(`count(last_over_time(%s[1d]))`, metric)
	remoteWrite, prometheus, backupID, dest, now := backedUpVMCluster(t, metric)

	// After the backup: 1,000 samples more (10 new series) and 20 series
	// deleted.
	g.Expect(stack.WriteSamplesFrom(ctx, stack.ImportURL(remoteWrite), metric, 100, 10, 100, now)).To(Succeed())
	del := strings.Replace(prometheus, "/select/", "/delete/", 1) + "/api/v1/admin/tsdb/delete_series?" +
		url.Values{"match[]": {metric + `{series=~"[0-9]"}`, metric + `{series=~"1[0-9]"}`}}.Encode()
	resp, err := http.Post(del, "", nil)
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusNoContent), "POST %s", del)
	g.Eventually(func(g Gomega) {
		g.Expect(stack.QueryScalar(ctx, prometheus, series)).To(Equal(90.0))
		g.Expect(stack.QueryScalar(ctx, prometheus, samples)).To(Equal(9000.0))
	}, time.Minute, time.Second).Should(Succeed())

	// The restore, through REST; a mapping that does not fit is a 400
	// naming the field, and creates nothing.
	restores := base + "/restores"
	code, body := suite.Call(t, http.MethodPost, restores, map[string]any{"backup": backupID,
		"replica_mapping": []any{map[string]any{"replica": 0, "from_replica": 1}}})
	g.Expect(code).To(Equal(http.StatusBadRequest), "%v", body)
	g.Expect(fmt.Sprint(body)).To(ContainSubstring("replica_mapping"))
	g.Expect(fmt.Sprint(body)).To(ContainSubstring("replicaMapping must name every vmstorage replica of the VMCluster (0, 1)"))
	code, body = suite.Call(t, http.MethodGet, restores, nil)
	g.Expect(code).To(Equal(http.StatusOK), "%v", body)
	g.Expect(body["restores"]).To(BeEmpty())
	code, body = suite.Call(t, http.MethodPost, restores, map[string]any{"backup": backupID})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	g.Expect(body["phase"]).To(Equal("Pending"))
	g.Expect(body["strategy"]).To(Equal("OneAtATime"))
	restoreID := strings.TrimPrefix(body["name"].(string), "vmclusters/"+restoreCluster+"/restores/")

	// ops-operator killed while a replica is being restored.
	rs := &opsv1.ClusterRestore{}
	key := client.ObjectKey{Namespace: obs, Name: restoreID}
	held := map[string]bool{}
	g.Eventually(func(g Gomega) {
		g.Expect(st.Env.Client.Get(ctx, key, rs)).To(Succeed())
		// While a replica is held its Pod is NotReady and its process
		// gone (the backer says so on the Pod).
		pods := &corev1.PodList{}
		g.Expect(st.Env.Client.List(ctx, pods, client.InNamespace(obs), client.MatchingLabels{"app.kubernetes.io/name": "vmstorage", "app.kubernetes.io/instance": restoreCluster})).To(Succeed())
		for _, p := range pods.Items {
			if p.Annotations[stack.StoppedAnnotation] == "true" {
				held[p.Name] = true
			}
		}
		g.Expect(rs.Status.Phase).To(Equal(opsv1.RestorePhaseRunning), "%s", describeRestore(rs))
	}, 2*time.Minute, 100*time.Millisecond).Should(Succeed())
	st.StopOperator()
	g.Expect(st.StartOperator(ctx)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(st.Env.Client.Get(ctx, key, rs)).To(Succeed())
		pods := &corev1.PodList{}
		g.Expect(st.Env.Client.List(ctx, pods, client.InNamespace(obs), client.MatchingLabels{"app.kubernetes.io/name": "vmstorage", "app.kubernetes.io/instance": restoreCluster})).To(Succeed())
		for _, p := range pods.Items {
			if p.Annotations[stack.StoppedAnnotation] == "true" {
				held[p.Name] = true
			}
		}
		g.Expect(rs.Status.Phase).To(Equal(opsv1.RestorePhaseSucceeded), "%s", describeRestore(rs))
	}, 4*time.Minute, 200*time.Millisecond).Should(Succeed())
	code, body = suite.Call(t, http.MethodGet, restores+"/"+restoreID, nil)
	g.Expect(code).To(Equal(http.StatusOK), "%v", body)
	g.Expect(body["phase"]).To(Equal("Succeeded"), "%v", body)
	g.Expect(body["progress"]).To(Equal("2/2"))
	g.Expect(rs.Status.Replicas).To(HaveLen(2))
	g.Expect(rs.Status.Progress).To(Equal("2/2"))
	for _, rep := range rs.Status.Replicas {
		g.Expect(held).To(HaveKey(rep.Pod), "the vmstorage process of %s was stopped", rep.Pod)
		g.Expect(rep.FromPod).To(Equal(rep.Pod))
		g.Expect(rep.Source).To(Equal("fs://" + dest + "/" + restoreCluster + "/" + backupID + "/" + rep.Pod))
	}
	// vmrestore ran exactly once per replica, across the operator restart.
	raw, err := os.ReadFile(st.RestoreStartsLog())
	g.Expect(err).NotTo(HaveOccurred())
	runs := map[string]int{}
	for _, line := range strings.Fields(string(raw)) {
		runs[line]++
	}
	for _, rep := range rs.Status.Replicas {
		g.Expect(runs[obs+"/"+rep.RunID]).To(Equal(1), "runs of %s: %v", rep.RunID, runs)
	}

	// Exactly the backed-up samples: the deleted series are back, the
	// later ones gone.
	g.Eventually(func(g Gomega) {
		g.Expect(stack.QueryScalar(ctx, prometheus, series)).To(Equal(100.0))
		g.Expect(stack.QueryScalar(ctx, prometheus, samples)).To(Equal(10000.0))
	}, 2*time.Minute, time.Second).Should(Succeed())
}

func describeRestore(rs *opsv1.ClusterRestore) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "phase=%s progress=%s", rs.Status.Phase, rs.Status.Progress)
	for _, c := range rs.Status.Conditions {
		fmt.Fprintf(&sb, "\n  %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
	}
	for _, r := range rs.Status.Replicas {
		fmt.Fprintf(&sb, "\n  %s %s from=%s run=%s err=%q", r.Pod, r.State, r.FromPod, r.RunID, r.Error)
	}
	return sb.String()
}

// storyMigrate: a new vmcluster created from the backup of storyRestore
// (made here when the story runs alone) with restore_from: a replica
// count the backup cannot seed is a 400 naming restore_from.backup that
// creates nothing; then the vmcluster is created held (its hold ConfigMap
// pre-holds every replica, so vmstorage never runs on the empty volumes:
// every vmstorage start the stack recorded is of the Pod that waited),
// its seeding restore restores each replica from the backup replica with
// its ordinal and releases it, and the new vmcluster
// serves the same 10,000 samples. The backup stays usable for any number
// of vmclusters.
func storyMigrate(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const metric = "restore_story"
	backupID := sharedBackup.id
	if backupID == "" {
		_, _, backupID, _, _ = backedUpVMCluster(t, metric)
	}
	const copyName = "restored-copy"
	base := suite.VMClusters + "/" + copyName
	code, body := suite.Call(t, http.MethodPost, suite.VMClusters, map[string]any{
		"name": copyName, "values": map[string]any{"vmstorage": map[string]any{"replicaCount": 1}},
		"restore_from": map[string]any{"backup": backupID},
	})
	g.Expect(code).To(Equal(http.StatusBadRequest), "%v", body)
	g.Expect(fmt.Sprint(body)).To(ContainSubstring("restore_from.backup"))
	code, _ = suite.Call(t, http.MethodGet, base, nil)
	g.Expect(code).To(Equal(http.StatusNotFound))
	err := st.Env.Client.Get(ctx, client.ObjectKey{Namespace: obs, Name: opsv1.VMStorageHoldConfigMapName(copyName)}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no hold written on a 400: %v", err)

	code, body = suite.Call(t, http.MethodPost, suite.VMClusters, map[string]any{
		"name": copyName, "values": map[string]any{"vmstorage": map[string]any{"replicaCount": 2}},
		"restore_from": map[string]any{"backup": backupID},
	})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	t.Cleanup(func() { suite.Call(t, http.MethodDelete, base, nil) })
	hold := &corev1.ConfigMap{}
	g.Expect(st.Env.Client.Get(ctx, client.ObjectKey{Namespace: obs, Name: opsv1.VMStorageHoldConfigMapName(copyName)}, hold)).To(Succeed())
	g.Expect(hold.Data).To(HaveLen(2), "the new vmcluster starts with every replica held")

	restoreID := opsv1.SeedRestoreName(copyName)
	var done map[string]any
	g.Eventually(func(g Gomega) {
		code, body := suite.Call(t, http.MethodGet, base+"/restores/"+restoreID, nil)
		done = body
		g.Expect(code).To(Equal(http.StatusOK), "%v", body)
		g.Expect(body["phase"]).To(Equal("Succeeded"), "%v", body)
	}, 5*time.Minute, time.Second).Should(Succeed())
	for _, raw := range done["replicas"].([]any) {
		r := raw.(map[string]any)
		pod := r["pod"].(string)
		g.Expect(r["from_pod"]).To(Equal(strings.Replace(pod, copyName, restoreCluster, 1)), "%v", r)
	}
	g.Expect(st.Env.Client.Get(ctx, client.ObjectKeyFromObject(hold), hold)).To(Succeed())
	g.Expect(hold.Data).To(BeEmpty(), "every replica released")
	running := suite.WaitVMCluster(t, copyName, "RUNNING", 3*time.Minute)
	// vmstorage of the new vmcluster started only on restored data: each
	// replica's first Pod waited in the hold and was never replaced, so
	// every vmstorage start the stack recorded is of that Pod (the old
	// behaviour started it on the empty volume, then deleted it).
	pods := &corev1.PodList{}
	g.Expect(st.Env.Client.List(ctx, pods, client.InNamespace(obs))).To(Succeed())
	raw, err := os.ReadFile(st.VMStorageStartsLog())
	g.Expect(err).NotTo(HaveOccurred())
	seen := 0
	for _, p := range pods.Items {
		if !strings.HasPrefix(p.Name, "vmstorage-"+copyName+"-") {
			continue
		}
		seen++
		var uids []string
		for _, line := range strings.Split(string(raw), "\n") {
			if pod, uid, ok := strings.Cut(line, " "); ok && pod == obs+"/"+p.Name {
				uids = append(uids, uid)
			}
		}
		g.Expect(uids).NotTo(BeEmpty(), "pod %s", p.Name)
		for _, uid := range uids {
			g.Expect(uid).To(Equal(string(p.UID)), "pod %s: vmstorage ran only in the pod that waited for its restore", p.Name)
		}
	}
	g.Expect(seen).To(Equal(2))
	prometheus, _ := suite.Field(running, "endpoints.prometheus").(string)

	samples := fmt.Sprintf(`sum(count_over_time(%s[1d]))`, metric)
	series := fmt.Sprintf(`count(last_over_time(%s[1d]))`, metric)
	g.Eventually(func(g Gomega) {
		g.Expect(stack.QueryScalar(ctx, prometheus, series)).To(Equal(100.0))
		g.Expect(stack.QueryScalar(ctx, prometheus, samples)).To(Equal(10000.0))
	}, 3*time.Minute, time.Second).Should(Succeed())
}
