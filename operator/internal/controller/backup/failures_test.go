package backup_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/backupdata/s3test"
	"github.com/tidbcloud/ops-server/operator/internal/controller/backup"
	"github.com/tidbcloud/ops-server/operator/internal/manager"
	"github.com/tidbcloud/ops-server/operator/internal/skeleton/kstatustest"
	"github.com/tidbcloud/ops-server/operator/internal/vmstorage"
)

func readyCondition(b *opsv1.ClusterBackup) *metav1.Condition {
	return apimeta.FindStatusCondition(b.Status.Conditions, opsv1.ReadyCondition)
}

// closedURL is an endpoint nothing listens on.
func closedURL(t *testing.T) string { return "http://" + freeAddr(t) }

func TestUnreachableReplicaPartiallyFails(t *testing.T) {
	g := NewWithT(t)
	nodes := startVMStorages(t, 2)
	f := newFixture(t, nodes)
	unreachable := closedURL(t)
	f.setEndpoint(podName(f.name, 1), unreachable)
	runner := f.localRunner(t)
	startOperator(t, f, runner, nil)

	b := newBackup(f, "unreachable", "fs://"+filepath.Join(t.TempDir(), "b"), nil)
	g.Expect(env.Client.Create(context.Background(), b)).To(Succeed())
	done := waitPhase(t, b, opsv1.BackupPhasePartiallyFailed, time.Minute)

	ok, bad := done.Status.Replicas[0], done.Status.Replicas[1]
	g.Expect(ok.State).To(Equal(opsv1.ReplicaStateSucceeded))
	g.Expect(bad.State).To(Equal(opsv1.ReplicaStateFailed))
	g.Expect(bad.Pod).To(Equal(podName(f.name, 1)))
	g.Expect(bad.Endpoint).To(Equal(unreachable))
	g.Expect(bad.Error).To(ContainSubstring("Taking the snapshot: list snapshot on " + unreachable))
	g.Expect(bad.Error).To(ContainSubstring("connection refused"))
	g.Expect(bad.SnapshotName).To(BeEmpty())
	g.Expect(bad.JobName).To(BeEmpty(), "nothing uploaded for it")
	g.Expect(done.Status.Progress).To(Equal("2/2"))
	ready := readyCondition(done)
	g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(ready.Reason).To(Equal(opsv1.PartiallyFailedReason))
	g.Expect(ready.Message).To(HavePrefix("Backed up 1 of 2 replicas; vmstorage-vmc-1 failed: Taking the snapshot"))
	g.Expect(apimeta.IsStatusConditionTrue(done.Status.Conditions, opsv1.StalledCondition)).To(BeTrue())
	g.Expect(done.Status.ObservedGeneration).To(Equal(done.Generation))
	g.Expect(servedKstatus(g, done)).To(Equal(status.FailedStatus), "kstatus of the object as served")
	g.Expect(snapshotCreates(t, nodes[1])).To(Equal(0))
	g.Expect(snapshots(t, nodes[0])).To(BeEmpty())
	g.Expect(eventReasons(g, f.ns)).To(ContainElements("ReplicaFailed", "PartiallyFailed"))
}

func TestUnwritableDestinationFails(t *testing.T) {
	g := NewWithT(t)
	nodes := startVMStorages(t, 2)
	f := newFixture(t, nodes)
	startOperator(t, f, f.localRunner(t), nil)

	// A file where the destination's directory should be: vmbackup cannot
	// write there (whoever runs the test, root included).
	file := filepath.Join(t.TempDir(), "not-a-dir")
	g.Expect(os.WriteFile(file, []byte("x"), 0o644)).To(Succeed())
	b := newBackup(f, "unwritable", "fs://"+file+"/backups", nil)
	g.Expect(env.Client.Create(context.Background(), b)).To(Succeed())
	done := waitPhase(t, b, opsv1.BackupPhaseFailed, time.Minute)

	for i, r := range done.Status.Replicas {
		g.Expect(r.State).To(Equal(opsv1.ReplicaStateFailed))
		g.Expect(r.SnapshotName).NotTo(BeEmpty())
		g.Expect(r.Error).To(HavePrefix("vmbackup failed: cannot create backup: "), "vmbackup's own message")
		g.Expect(r.Error).To(ContainSubstring("not a directory"))
		g.Expect(snapshots(t, nodes[i])).To(BeEmpty(), "the snapshot is deleted after a failed upload too")
	}
	ready := readyCondition(done)
	g.Expect(ready.Reason).To(Equal(opsv1.FailedReason))
	g.Expect(ready.Message).To(HavePrefix("Backed up 0 of 2 replicas; vmstorage-vmc-0 failed: vmbackup failed: cannot create backup: "))
	t.Logf("unwritable destination: %s", done.Status.Replicas[0].Error)
}

// TestRestartBetweenSnapshotAndUpload kills the operator twice: once after
// a snapshot call reached vmstorage but before its answer was recorded,
// once after an upload started but before that was recorded. Each replica
// is snapshotted once and uploaded once.
func TestRestartBetweenSnapshotAndUpload(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	nodes := startVMStorages(t, 2)
	f := newFixture(t, nodes)
	runner := f.localRunner(t)

	// Operator 1 dies inside the snapshot call to replica 0.
	// Both snapshot calls reach vmstorage; neither answer is recorded.
	bt := &blockingTransport{blockPath: "/snapshot/create", want: len(nodes), hit: make(chan struct{})}
	op1 := startOperator(t, f, runner, func(o *manager.Options) { o.Backup.HTTPClient = &http.Client{Transport: bt} })
	b := newBackup(f, "restart", "fs://"+filepath.Join(t.TempDir(), "b"), nil)
	g.Expect(env.Client.Create(ctx, b)).To(Succeed())
	g.Eventually(bt.hit, time.Minute).Should(BeClosed())
	op1.stop()
	cur := get(g, b)
	for _, r := range cur.Status.Replicas {
		g.Expect(r.State).To(Equal(opsv1.ReplicaStateSnapshotting), describe(cur))
		g.Expect(r.SnapshotName).To(BeEmpty(), "operator 1 never recorded a snapshot name")
	}
	for _, n := range nodes {
		g.Expect(snapshots(t, n)).To(HaveLen(1), "but the snapshots exist")
	}

	// Operator 2 dies right after starting the first upload.
	hr := &holdingRunner{inner: runner, blockAfterStart: true, hit: make(chan struct{})}
	op2 := startOperator(t, f, hr, nil)
	g.Eventually(hr.hit, time.Minute).Should(BeClosed())
	op2.stop()
	cur = get(g, b)
	for _, r := range cur.Status.Replicas {
		g.Expect(r.State).To(Equal(opsv1.ReplicaStateUploading), describe(cur))
		g.Expect(r.SnapshotName).NotTo(BeEmpty())
		g.Expect(r.JobName).NotTo(BeEmpty())
	}
	g.Expect(runner.Starts()).To(HaveLen(1), "one upload started before operator 2 died")
	g.Expect(servedKstatus(g, cur)).To(Equal(status.InProgressStatus), "kstatus while the uploads run")

	// Operator 3 finishes.
	startOperator(t, f, runner, nil)
	done := waitPhase(t, b, opsv1.BackupPhaseSucceeded, time.Minute)
	g.Expect(servedKstatus(g, done)).To(Equal(status.CurrentStatus), "kstatus of the object as served")
	starts := runner.Starts()
	g.Expect(starts).To(HaveLen(2))
	for i, r := range done.Status.Replicas {
		g.Expect(snapshotCreates(t, nodes[i])).To(Equal(1), "replica %d snapshotted once", i)
		g.Expect(starts).To(HaveKeyWithValue(f.ns+"/"+r.JobName, 1), "replica %d uploaded once", i)
		g.Expect(snapshots(t, nodes[i])).To(BeEmpty())
	}
	g.Expect(eventMessages(g, f.ns, "SnapshotAdopted")).To(HaveLen(2))
	g.Expect(eventMessages(g, f.ns, "SnapshotCreated")).To(BeEmpty())
	t.Logf("restart: creates per vmstorage %d/%d, upload starts %v", snapshotCreates(t, nodes[0]), snapshotCreates(t, nodes[1]), starts)
}

// TestJobRunner runs the production runner against the real API server:
// the Jobs it creates are accepted (the manifest is valid), their state
// maps to the replicas' — a Complete Job succeeds its replica, a Failed
// one fails it with vmbackup's message from the pod's termination message.
// No kubelet runs, so the test plays the Job controller; nothing is
// uploaded.
func TestJobRunner(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	nodes := startVMStorages(t, 2)
	f := newFixture(t, nodes)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "backup-credentials", Labels: map[string]string{opsv1.BackupCredentialsLabel: "true"}},
		StringData: map[string]string{"credentials": "[default]\naws_access_key_id = AKIAEXAMPLE\naws_secret_access_key = secret\n"},
	}
	g.Expect(env.Client.Create(ctx, secret)).To(Succeed())
	// The bucket, on an S3 server speaking the real wire format: what the
	// uploads would have written, and another backup's data.
	bucket := &s3test.Server{KeyID: "AKIAEXAMPLE", Objects: map[string]map[string]bool{"o11y-backups": {
		"prod/vmc/to-s3/" + podName(f.name, 0) + "/backup_complete.ignore":   true,
		"prod/vmc/to-s3/" + podName(f.name, 0) + "/data/part-1":              true,
		"prod/vmc/to-s3/" + podName(f.name, 1) + "/data/part-1":              true,
		"prod/vmc/to-s3-2/" + podName(f.name, 0) + "/backup_complete.ignore": true,
	}}}
	endpoint := s3test.Start(t, bucket)
	startOperator(t, f, nil, func(o *manager.Options) {
		o.Backup.Job.ServiceAccountName = "vmbackup"
		o.Backup.Data.S3Endpoint = endpoint
	})

	b := newBackup(f, "to-s3", "s3://o11y-backups/prod", func(b *opsv1.ClusterBackup) {
		b.Spec.Destination.CredentialsSecretRef = &opsv1.SecretKeyReference{Name: secret.Name, Key: "credentials"}
	})
	g.Expect(env.Client.Create(ctx, b)).To(Succeed())

	jobs := map[string]*batchv1.Job{}
	g.Eventually(func(g Gomega) {
		cur := get(g, b)
		g.Expect(cur.Status.Replicas).To(HaveLen(2))
		for _, r := range cur.Status.Replicas {
			g.Expect(r.State).To(Equal(opsv1.ReplicaStateUploading), describe(cur))
			job := &batchv1.Job{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: r.JobName}, job)).To(Succeed())
			jobs[r.Pod] = job
		}
	}, time.Minute, 50*time.Millisecond).Should(Succeed())
	cur := get(g, b)
	g.Expect(cur.Status.Phase).To(Equal(opsv1.BackupPhaseRunning))

	for i, r := range cur.Status.Replicas {
		job := jobs[r.Pod]
		g.Expect(job.OwnerReferences).To(HaveLen(1))
		g.Expect(job.OwnerReferences[0].UID).To(Equal(cur.UID))
		spec := job.Spec.Template.Spec
		g.Expect(spec.ServiceAccountName).To(Equal("vmbackup"))
		g.Expect(spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values).To(Equal([]string{fmt.Sprintf("node-%d", i)}))
		g.Expect(spec.Volumes[0].PersistentVolumeClaim.ClaimName).To(Equal("vmstorage-db-" + r.Pod))
		g.Expect(spec.Volumes[0].PersistentVolumeClaim.ReadOnly).To(BeTrue())
		g.Expect(spec.Containers[0].Args).To(Equal([]string{
			"-snapshotName=" + r.SnapshotName,
			"-storageDataPath=/vmstorage-data",
			"-dst=s3://o11y-backups/prod/vmc/to-s3/" + r.Pod,
			"-httpListenAddr=127.0.0.1:8420",
			"-credsFilePath=/etc/vmbackup/credentials/credentials",
		}))
		g.Expect(snapshots(t, nodes[i])).To(Equal([]string{r.SnapshotName}), "the snapshot stays while its Job runs")
	}

	// A variant the test does not run — fs:// on the node, credentials as
	// environment — must be a valid Job too (server-side dry run).
	pod := &corev1.Pod{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: podName(f.name, 0)}, pod)).To(Succeed())
	fsBackup := newBackup(f, "fs-variant", "fs:///var/backups/vm", nil)
	fsBackup.UID = "dry-run-uid"
	job, err := backup.BuildJob(backup.Upload{
		UploadRef: backup.UploadRef{Namespace: f.ns, ID: "fs-variant-job"}, Backup: fsBackup, Pod: pod,
		SnapshotName: "20261201041006-18ED05CB8B1B6538", Destination: "fs:///var/backups/vm/vmc/fs-variant/" + pod.Name,
		Origin: "fs:///var/backups/vm/vmc/older/" + pod.Name, Credentials: &opsv1.SecretKeyReference{Name: secret.Name},
	}, backup.DefaultJobOptions())
	g.Expect(err).NotTo(HaveOccurred())
	job.OwnerReferences = nil // its owner does not exist
	g.Expect(env.Client.Create(ctx, job, client.DryRunAll)).To(Succeed())

	// Play the Job controller: replica 0's Job completes, replica 1's fails
	// with vmbackup's error in its pod's termination message.
	r0, r1 := cur.Status.Replicas[0], cur.Status.Replicas[1]
	now := metav1.Now()
	j0 := jobs[r0.Pod]
	j0.Status = batchv1.JobStatus{StartTime: &now, CompletionTime: &now, Succeeded: 1, Conditions: []batchv1.JobCondition{
		{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}}
	g.Expect(env.Client.Status().Update(ctx, j0)).To(Succeed())

	j1 := jobs[r1.Pod]
	failedPod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: j1.Name + "-x7k2p", Labels: map[string]string{"batch.kubernetes.io/job-name": j1.Name}},
		Spec:       *j1.Spec.Template.Spec.DeepCopy(),
	}
	failedPod.Spec.NodeName = "node-1"
	g.Expect(env.Client.Create(ctx, failedPod)).To(Succeed())
	failedPod.Status = corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "vmbackup", Image: "victoriametrics/vmbackup:v1.100.0", ImageID: "sha256:x",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 255, Reason: "Error", Message: "" +
			"2026-12-01T04:10:06.100Z\tinfo\tVictoriaMetrics/lib/backup/actions/backup.go:110\tstarting backup\n" +
			"2026-12-01T04:10:06.300Z\tfatal\tVictoriaMetrics/app/vmbackup/main.go:104\tcannot create backup: cannot upload part to s3://o11y-backups/prod?X-Amz-Signature=abc: AccessDenied: Access Denied\n"}},
	}}}
	g.Expect(env.Client.Status().Update(ctx, failedPod)).To(Succeed())
	j1.Status = batchv1.JobStatus{StartTime: &now, Failed: 3, Conditions: []batchv1.JobCondition{
		{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now},
		{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now},
	}}
	g.Expect(env.Client.Status().Update(ctx, j1)).To(Succeed())

	done := waitPhase(t, b, opsv1.BackupPhasePartiallyFailed, time.Minute)
	g.Expect(done.Status.Replicas[0].State).To(Equal(opsv1.ReplicaStateSucceeded))
	g.Expect(done.Status.Replicas[1].State).To(Equal(opsv1.ReplicaStateFailed))
	g.Expect(done.Status.Replicas[1].Error).To(Equal("vmbackup failed: cannot create backup: cannot upload part to s3://o11y-backups/prod: AccessDenied: Access Denied"))
	for _, n := range nodes {
		g.Expect(snapshots(t, n)).To(BeEmpty())
	}

	// Deleting it with deletionPolicy Delete: the Jobs go, and so does
	// the data each replica wrote (with the credentials the uploads used,
	// the Secret's credentials file), and nothing else.
	patch := client.MergeFrom(done.DeepCopy())
	done.Spec.DeletionPolicy = opsv1.DeletionPolicyDelete
	g.Expect(env.Client.Patch(ctx, done, patch)).To(Succeed())
	g.Eventually(func() int64 { return get(g, b).Status.ObservedGeneration }, 30*time.Second, 50*time.Millisecond).Should(Equal(done.Generation))
	g.Expect(env.Client.Delete(ctx, done)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(b), &opsv1.ClusterBackup{}))
	}, 30*time.Second, 50*time.Millisecond).Should(BeTrue())
	for _, j := range jobs {
		g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(j), &batchv1.Job{}))).To(BeTrue(), "Job %s deleted", j.Name)
	}
	g.Expect(bucket.Keys("o11y-backups")).To(Equal(map[string]bool{"prod/vmc/to-s3-2/" + podName(f.name, 0) + "/backup_complete.ignore": true}))
	g.Expect(eventMessages(g, f.ns, "DataDeleted")).To(ConsistOf(ContainSubstring("deleted 3 objects of the backup under s3://o11y-backups/prod")))
	g.Expect(eventMessages(g, f.ns, "DataRetained")).To(BeEmpty())
}

func TestRefusesWhileVMClusterNotReady(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// No snapshot is ever taken: the replicas need no processes.
	f := newFixture(t, []*vmStorage{{httpAddr: freeAddr(t)}, {httpAddr: freeAddr(t)}})
	f.setVMClusterStatus(t, "expanding")
	startOperator(t, f, f.localRunner(t), func(o *manager.Options) { o.Backup.StartTimeout = 5 * time.Second })

	b := newBackup(f, "blocked", "fs:///backups", nil)
	g.Expect(env.Client.Create(ctx, b)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur := get(g, b)
		g.Expect(cur.Status.Phase).To(Equal(opsv1.BackupPhasePending))
		c := readyCondition(cur)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(opsv1.BlockedReason))
		g.Expect(c.Message).To(Equal("Waiting: VMCluster " + f.ns + "/vmc is expanding"))
		g.Expect(apimeta.IsStatusConditionTrue(cur.Status.Conditions, opsv1.ReconcilingCondition)).To(BeTrue())
		g.Expect(cur.Status.Replicas).To(BeEmpty())
	}, 4*time.Second, 50*time.Millisecond).Should(Succeed())

	// Operational, but the StatefulSet is rolling out.
	f.setVMClusterStatus(t, vmstorage.UpdateStatusOperational)
	f.setSTSStatus(t, 1)
	g.Eventually(func(g Gomega) {
		c := readyCondition(get(g, b))
		g.Expect(c.Message).To(ContainSubstring("1/2 replicas updated"))
	}, 4*time.Second, 50*time.Millisecond).Should(Succeed())

	done := waitPhase(t, b, opsv1.BackupPhaseFailed, 30*time.Second)
	c := readyCondition(done)
	g.Expect(c.Reason).To(Equal(opsv1.FailedReason))
	g.Expect(c.Message).To(HavePrefix("Not started within 5s: StatefulSet " + f.ns + "/vmstorage-vmc: 1/2 replicas updated"))

	// A VMCluster that does not exist fails at once.
	missing := newBackup(f, "missing", "fs:///backups", func(b *opsv1.ClusterBackup) { b.Spec.VMCluster.Name = "nope" })
	g.Expect(env.Client.Create(ctx, missing)).To(Succeed())
	done = waitPhase(t, missing, opsv1.BackupPhaseFailed, 30*time.Second)
	g.Expect(done.Status.Progress).To(Equal("0/0"))
	c = readyCondition(done)
	g.Expect(c.Reason).To(Equal(opsv1.VMClusterNotFoundReason))
	g.Expect(c.Message).To(Equal("VMCluster " + f.ns + "/nope not found"))
	stalled := apimeta.FindStatusCondition(done.Status.Conditions, opsv1.StalledCondition)
	g.Expect(stalled.Reason).To(Equal(opsv1.VMClusterNotFoundReason))
}

// TestPodRecreatedMidBackup: a vmstorage pod replaced (new UID) while its
// upload runs fails that replica, stops its upload and deletes its
// snapshot; the other replica finishes.
func TestPodRecreatedMidBackup(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	nodes := startVMStorages(t, 2)
	f := newFixture(t, nodes)
	hr := &holdingRunner{inner: f.localRunner(t), hold: map[string]bool{podName(f.name, 0): true}}
	op := startOperator(t, f, hr, nil)

	b := newBackup(f, "recreated", "fs://"+filepath.Join(t.TempDir(), "b"), nil)
	g.Expect(env.Client.Create(ctx, b)).To(Succeed())
	var before *opsv1.ClusterBackup
	g.Eventually(func(g Gomega) {
		before = get(g, b)
		g.Expect(before.Status.Replicas).To(HaveLen(2))
		g.Expect(before.Status.Replicas[0].State).To(Equal(opsv1.ReplicaStateUploading))
		g.Expect(before.Status.Replicas[1].State).To(Equal(opsv1.ReplicaStateSucceeded))
	}, time.Minute, 50*time.Millisecond).Should(Succeed())
	g.Expect(snapshots(t, nodes[0])).To(HaveLen(1))

	// Replace pod 0 while the operator is down, then let it look.
	op.stop()
	old := &corev1.Pod{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: podName(f.name, 0)}, old)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, old, client.GracePeriodSeconds(0))).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(old), &corev1.Pod{}))
	}, 10*time.Second, 50*time.Millisecond).Should(BeTrue())
	recreated := f.createPod(t, 0)
	startOperator(t, f, hr, nil)

	done := waitPhase(t, b, opsv1.BackupPhasePartiallyFailed, time.Minute)
	r0 := done.Status.Replicas[0]
	g.Expect(r0.State).To(Equal(opsv1.ReplicaStateFailed))
	g.Expect(r0.Error).To(Equal(fmt.Sprintf("Pod %s was recreated during the backup (UID %s, now %s); create a new ClusterBackup to back it up", r0.Pod, old.UID, recreated.UID)))
	g.Expect(hr.deletedIDs()).To(ContainElement(r0.JobName), "its upload is stopped")
	g.Expect(snapshots(t, nodes[0])).To(BeEmpty(), "its snapshot is deleted")
	g.Expect(done.Status.Replicas[1].State).To(Equal(opsv1.ReplicaStateSucceeded))
}

// TestDeletion: deleting a running backup stops its uploads and deletes
// the snapshots it holds; deleting a finished one with deletionPolicy
// Delete removes its data.
func TestDeletion(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	nodes := startVMStorages(t, 2)
	f := newFixture(t, nodes)
	hr := &holdingRunner{inner: f.localRunner(t), hold: map[string]bool{"held-": true}}
	startOperator(t, f, hr, nil)
	root := filepath.Join(t.TempDir(), "b")
	gone := func(b *opsv1.ClusterBackup) func() bool {
		return func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(b), &opsv1.ClusterBackup{}))
		}
	}

	held := newBackup(f, "held-backup", "fs://"+root, nil)
	g.Expect(env.Client.Create(ctx, held)).To(Succeed())
	var cur *opsv1.ClusterBackup
	g.Eventually(func(g Gomega) {
		cur = get(g, held)
		g.Expect(cur.Status.Replicas).To(HaveLen(2))
		for _, r := range cur.Status.Replicas {
			g.Expect(r.State).To(Equal(opsv1.ReplicaStateUploading))
		}
	}, time.Minute, 50*time.Millisecond).Should(Succeed())
	for _, n := range nodes {
		g.Expect(snapshots(t, n)).To(HaveLen(1))
	}
	g.Expect(env.Client.Delete(ctx, held)).To(Succeed())
	g.Eventually(gone(held), 30*time.Second, 50*time.Millisecond).Should(BeTrue())
	for _, n := range nodes {
		g.Expect(snapshots(t, n)).To(BeEmpty())
	}
	g.Expect(hr.deletedIDs()).To(ConsistOf(cur.Status.Replicas[0].JobName, cur.Status.Replicas[1].JobName))

	purge := newBackup(f, "purge", "fs://"+root, func(b *opsv1.ClusterBackup) { b.Spec.DeletionPolicy = opsv1.DeletionPolicyDelete })
	g.Expect(env.Client.Create(ctx, purge)).To(Succeed())
	waitPhase(t, purge, opsv1.BackupPhaseSucceeded, time.Minute)
	g.Expect(filepath.Join(root, "vmc", "purge", podName(f.name, 0))).To(BeADirectory())
	g.Expect(env.Client.Delete(ctx, purge)).To(Succeed())
	g.Eventually(gone(purge), 30*time.Second, 50*time.Millisecond).Should(BeTrue())
	g.Expect(filepath.Join(root, "vmc", "purge")).NotTo(BeAnExistingFile())
	entries, err := os.ReadDir(filepath.Join(root, "vmc"))
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	g.Expect(strings.Join(names, ",")).NotTo(ContainSubstring("purge"))
}

// TestConcurrentBackupsOfOneCluster: two backups of one VMCluster created
// together take their snapshots one after the other, each its own; both
// succeed.
func TestConcurrentBackupsOfOneCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	nodes := startVMStorages(t, 2)
	f := newFixture(t, nodes)
	runner := f.localRunner(t)
	startOperator(t, f, runner, nil)
	url := "fs://" + filepath.Join(t.TempDir(), "b")
	a, b := newBackup(f, "a", url, nil), newBackup(f, "b", url, nil)
	g.Expect(env.Client.Create(ctx, a)).To(Succeed())
	g.Expect(env.Client.Create(ctx, b)).To(Succeed())
	doneA := waitPhase(t, a, opsv1.BackupPhaseSucceeded, time.Minute)
	doneB := waitPhase(t, b, opsv1.BackupPhaseSucceeded, time.Minute)
	for i := range nodes {
		g.Expect(doneA.Status.Replicas[i].SnapshotName).NotTo(Equal(doneB.Status.Replicas[i].SnapshotName))
		g.Expect(snapshotCreates(t, nodes[i])).To(Equal(2))
		g.Expect(snapshots(t, nodes[i])).To(BeEmpty())
	}
	g.Expect(runner.Starts()).To(HaveLen(4))
}

// servedKstatus is the kstatus (cli-utils) of a ClusterBackup read from
// the API server: the same meaning of Ready/Reconciling/Stalled as a
// ClusterUpgradeOperation's (package skeleton).
func servedKstatus(g Gomega, b *opsv1.ClusterBackup) status.Status {
	st, msg, err := kstatustest.Compute(b, opsv1.GroupVersion.WithKind("ClusterBackup"))
	g.Expect(err).NotTo(HaveOccurred(), msg)
	return st
}
