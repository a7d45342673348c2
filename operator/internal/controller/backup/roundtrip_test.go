package backup_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/controller/backup"
)

const (
	seriesCount     = 2000
	samplesPerSerie = 10
)

// TestRoundTrip backs up a two-replica VictoriaMetrics cluster through the
// real reconciler — real snapshot API, real vmbackup (the LocalRunner) to
// an fs:// destination — restores each replica's backup with vmrestore
// into empty storage, starts vmstorage on it and reads the same series and
// samples back through vmselect. A second backup then uses the first as
// its -origin.
func TestRoundTrip(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	// The cluster, with known data.
	nodes := startVMStorages(t, 2)
	vminsert := startVMInsert(t, nodes...)
	vmselect := startVMSelect(t, nodes...)
	writeSeries(t, vminsert, seriesCount, samplesPerSerie)
	g.Eventually(func(g Gomega) {
		forceFlush(t, nodes...)
		n, err := countSeries(vmselect)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n).To(Equal(seriesCount))
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
	forceFlush(t, nodes...)
	wantSamples, err := countSamples(vmselect)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wantSamples).To(Equal(seriesCount * samplesPerSerie))
	perNodeBefore := make([]int, len(nodes))
	for i, n := range nodes {
		perNodeBefore[i], err = countSeries(startVMSelect(t, n))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(perNodeBefore[i]).To(BeNumerically(">", 0), "each replica holds part of the data")
	}
	g.Expect(perNodeBefore[0] + perNodeBefore[1]).To(Equal(seriesCount))

	f := newFixture(t, nodes)
	runner := f.localRunner(t)
	startOperator(t, f, runner, nil)

	dest := filepath.Join(t.TempDir(), "backups")
	url := "fs://" + dest
	b := newBackup(f, "first", url, nil)
	g.Expect(env.Client.Create(ctx, b)).To(Succeed())
	done := waitPhase(t, b, opsv1.BackupPhaseSucceeded, 2*time.Minute)

	// Status.
	g.Expect(done.Status.Progress).To(Equal("2/2"))
	g.Expect(done.Status.ObservedGeneration).To(Equal(done.Generation))
	g.Expect(done.Status.StartTime).NotTo(BeNil())
	g.Expect(done.Status.CompletionTime).NotTo(BeNil())
	g.Expect(apimeta.IsStatusConditionTrue(done.Status.Conditions, opsv1.ReadyCondition)).To(BeTrue(), describe(done))
	g.Expect(apimeta.FindStatusCondition(done.Status.Conditions, opsv1.ReadyCondition).Message).To(Equal("Backed up 2 of 2 replicas"))
	g.Expect(apimeta.FindStatusCondition(done.Status.Conditions, opsv1.ReconcilingCondition)).To(BeNil())
	g.Expect(done.Finalizers).To(ContainElement(backup.Finalizer))
	g.Expect(done.Status.Replicas).To(HaveLen(2))
	for i, r := range done.Status.Replicas {
		pod := podName(f.name, i)
		g.Expect(r.Pod).To(Equal(pod))
		g.Expect(r.PodUID).NotTo(BeEmpty())
		g.Expect(r.Node).To(Equal(fmt.Sprintf("node-%d", i)))
		g.Expect(r.Endpoint).To(Equal(nodes[i].URL()))
		g.Expect(r.Destination).To(Equal(url + "/vmc/first/" + pod))
		g.Expect(r.State).To(Equal(opsv1.ReplicaStateSucceeded))
		g.Expect(r.SnapshotName).To(MatchRegexp(`^[0-9]{14}-[0-9A-F]+$`))
		g.Expect(r.JobName).To(HavePrefix("first-" + pod + "-"))
		g.Expect(r.StartTime).NotTo(BeNil())
		g.Expect(r.CompletionTime).NotTo(BeNil())
		g.Expect(r.Error).To(BeEmpty())
		dir := filepath.Join(dest, "vmc", "first", pod)
		g.Expect(filepath.Join(dir, backup.BackupCompleteFile)).To(BeARegularFile())
		g.Expect(filepath.Join(dir, backup.BackupMetadataFile)).To(BeARegularFile())
		g.Expect(r.Bytes).To(Equal(dirSize(t, dir)), "bytes is the size of the replica's backup directory")
		// Snapshotted once, uploaded once, the snapshot deleted afterwards.
		g.Expect(snapshotCreates(t, nodes[i])).To(Equal(1))
		g.Expect(snapshots(t, nodes[i])).To(BeEmpty())
		g.Expect(runner.Starts()).To(HaveKeyWithValue(f.ns+"/"+r.JobName, 1))
		t.Logf("replica %s: snapshot %s, %d bytes at %s", pod, r.SnapshotName, r.Bytes, r.Destination)
	}
	g.Expect(eventReasons(g, f.ns)).To(ContainElements("Planned", "SnapshotCreated", "UploadStarted", "ReplicaSucceeded", "Succeeded"))

	// Restore each replica into empty storage and read everything back.
	restoreRoot := t.TempDir()
	restored := make([]*vmStorage, len(nodes))
	for i, r := range done.Status.Replicas {
		dir := filepath.Join(restoreRoot, r.Pod)
		vmrestore(t, r.Destination, dir)
		restored[i] = startVMStorage(t, dir)
	}
	vmselect2 := startVMSelect(t, restored...)
	gotSeries, err := countSeries(vmselect2)
	g.Expect(err).NotTo(HaveOccurred())
	gotSamples, err := countSamples(vmselect2)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gotSeries).To(Equal(seriesCount))
	g.Expect(gotSamples).To(Equal(seriesCount * samplesPerSerie))
	for i, n := range restored {
		c, err := countSeries(startVMSelect(t, n))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(c).To(Equal(perNodeBefore[i]), "replica %d restored its own series", i)
	}
	t.Logf("round trip: wrote %d series / %d samples (%d + %d per replica); read back %d series / %d samples from the restored replicas",
		seriesCount, wantSamples, perNodeBefore[0], perNodeBefore[1], gotSeries, gotSamples)

	// A second backup server-side copies from the first (-origin).
	second := newBackup(f, "second", url, nil)
	g.Expect(env.Client.Create(ctx, second)).To(Succeed())
	done2 := waitPhase(t, second, opsv1.BackupPhaseSucceeded, 2*time.Minute)
	msgs := eventMessages(g, f.ns, "UploadStarted")
	for _, r := range done2.Status.Replicas {
		origin := url + "/vmc/first/" + r.Pod
		g.Expect(msgs).To(ContainElement(ContainSubstring("server-side copying from " + origin)))
		log, err := os.ReadFile(filepath.Join(runner.StateDir, f.ns, r.JobName, "vmbackup.log"))
		g.Expect(err).NotTo(HaveOccurred())
		m := regexp.MustCompile(`server-side copied ([0-9]+) bytes; uploaded ([0-9]+) bytes`).FindStringSubmatch(string(log))
		g.Expect(m).NotTo(BeNil(), string(log))
		copied, _ := strconv.ParseInt(m[1], 10, 64)
		uploaded, _ := strconv.ParseInt(m[2], 10, 64)
		g.Expect(copied).To(BeNumerically(">", 0))
		t.Logf("second backup of %s: %d bytes, of which %d server-side copied from %s and %d uploaded", r.Pod, r.Bytes, copied, origin, uploaded)
	}

	// Metrics.
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	found := map[string]bool{}
	for _, mf := range families {
		if strings.HasPrefix(mf.GetName(), "ops_") {
			found[mf.GetName()] = true
		}
	}
	g.Expect(found).To(HaveKey("ops_clusterbackup_total"))
	g.Expect(found).To(HaveKey("ops_clusterbackup_duration_seconds"))
	g.Expect(found).To(HaveKey("ops_clusterbackup_bytes_total"))
	g.Expect(found).To(HaveKey("ops_clusterbackup_replicas_total"))
	// The manager's state metrics and build info (docs/metrics.md).
	g.Expect(found).To(HaveKey("ops_clusterbackups"))
	g.Expect(found).To(HaveKey("ops_backup_last_success_timestamp_seconds"))
	g.Expect(found).To(HaveKey("ops_operator_leader"))
	g.Expect(found).To(HaveKey("ops_build_info"))
}
