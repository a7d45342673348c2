package backup

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// Log lines as vmbackup v1.100.0 prints them.
const (
	okLog = "2026-12-01T04:10:06.100Z\tinfo\tVictoriaMetrics/lib/backup/actions/backup.go:110\tstarting backup from fslocal \"/data/snapshots/x\" to fsremote \"/b\" using origin fsnil\n" +
		"2026-12-01T04:10:06.300Z\tinfo\tVictoriaMetrics/lib/backup/actions/backup.go:176\tbackup from fslocal \"/data/snapshots/x\" to fsremote \"/b\" with origin fsnil is complete; backed up 123456 bytes in 0.200 seconds; server-side deleted 0 bytes; server-side copied 0 bytes; uploaded 123456 bytes\n"
	fatalLog = "2026-12-01T04:10:06.100Z\tinfo\tVictoriaMetrics/app/vmbackup/main.go:50\tstarting\n" +
		"2026-12-01T04:10:06.200Z\terror\tVictoriaMetrics/lib/x.go:1\tsomething earlier\n" +
		"2026-12-01T04:10:06.300Z\tfatal\tVictoriaMetrics/app/vmbackup/main.go:104\tcannot create backup: cannot create dir \"/ro/x\": mkdir /ro/x: permission denied\n"
)

func TestParseVMBackupLog(t *testing.T) {
	cases := []struct {
		name  string
		log   string
		bytes int64
		err   string
	}{
		{name: "success", log: okLog, bytes: 123456},
		{name: "fatal", log: fatalLog, bytes: -1, err: `cannot create backup: cannot create dir "/ro/x": mkdir /ro/x: permission denied`},
		{name: "error only", log: "2026-12-01T04:10:06.200Z\terror\tx.go:1\tupload failed\n", bytes: -1, err: "upload failed"},
		{name: "json format", log: `{"ts":"2026-12-01T04:10:06.300Z","level":"fatal","caller":"main.go:104","msg":"cannot create backup: \"quoted\" reason"}`, bytes: -1, err: `cannot create backup: "quoted" reason`},
		{name: "no timestamps", log: "fatal\tmain.go:104\tcannot parse `-dst`\n", bytes: -1, err: "cannot parse `-dst`"},
		{name: "nothing", log: "", bytes: -1},
		{
			name:  "presigned URL query stripped",
			log:   "2026-12-01T04:10:06.300Z\tfatal\tmain.go:1\tcannot upload to https://user:pw@s3.example/b/x?X-Amz-Signature=abc&X-Amz-Credential=AKIA: 403\n",
			bytes: -1,
			err:   "cannot upload to https://s3.example/b/x: 403",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(parseBackedUpBytes(tc.log)).To(Equal(tc.bytes))
			g.Expect(vmbackupError(tc.log)).To(Equal(tc.err))
		})
	}
}

func TestReplicaDestinationAndOrigin(t *testing.T) {
	g := NewWithT(t)
	b := mkBackup(func(b *opsv1.ClusterBackup) { b.Spec.Destination.URL = "s3://bucket/prefix/" })
	g.Expect(replicaDestination(b, "vmstorage-vmc-0")).To(Equal("s3://bucket/prefix/vmc/nightly/vmstorage-vmc-0"))

	done := func(name, uid, url string, at time.Time, reps ...opsv1.ReplicaBackup) opsv1.ClusterBackup {
		o := mkBackup(func(o *opsv1.ClusterBackup) {
			o.Name, o.UID, o.Spec.Destination.URL = name, types.UID("uid-"+uid), url
			o.Status.Replicas = reps
		})
		return *o
	}
	rep := func(pod string, state opsv1.ReplicaBackupState, at time.Time, dst string) opsv1.ReplicaBackup {
		t := metav1.NewTime(at)
		return opsv1.ReplicaBackup{Pod: pod, State: state, CompletionTime: &t, Destination: dst}
	}
	others := []opsv1.ClusterBackup{
		done("old", "o", b.Spec.Destination.URL, t0, rep("vmstorage-vmc-0", ok, t0, "s3://bucket/prefix/vmc/old/vmstorage-vmc-0")),
		done("newer", "n", b.Spec.Destination.URL, t0, rep("vmstorage-vmc-0", ok, t0.Add(time.Hour), "s3://bucket/prefix/vmc/newer/vmstorage-vmc-0"),
			rep("vmstorage-vmc-1", failed, t0.Add(time.Hour), "s3://bucket/prefix/vmc/newer/vmstorage-vmc-1")),
		done("newest-elsewhere", "e", "s3://other", t0, rep("vmstorage-vmc-0", ok, t0.Add(2*time.Hour), "s3://other/vmc/x/vmstorage-vmc-0")),
		*b, // itself
	}
	g.Expect(chooseOrigin(b, "vmstorage-vmc-0", others)).To(Equal("s3://bucket/prefix/vmc/newer/vmstorage-vmc-0"))
	g.Expect(chooseOrigin(b, "vmstorage-vmc-1", others)).To(BeEmpty(), "a failed replica is no origin")
	g.Expect(chooseOrigin(b, "vmstorage-vmc-2", others)).To(BeEmpty())
	otherCluster := mkBackup(func(o *opsv1.ClusterBackup) { o.Spec.VMCluster.Name = "other"; o.UID = "x" })
	g.Expect(chooseOrigin(otherCluster, "vmstorage-vmc-0", others)).To(BeEmpty())
}

func TestInspectAndRemoveFSBackup(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	dir := filepath.Join(root, "vmc", "nightly", "vmstorage-vmc-0")
	g.Expect(os.MkdirAll(filepath.Join(dir, "data"), 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "data", "part"), make([]byte, 1000), 0o644)).To(Succeed())

	_, err := inspectFSBackup(dir)
	g.Expect(err).To(MatchError(ContainSubstring("backup_complete.ignore is missing")))
	g.Expect(os.WriteFile(filepath.Join(dir, BackupCompleteFile), nil, 0o644)).To(Succeed())
	_, err = inspectFSBackup(dir)
	g.Expect(err).To(MatchError(ContainSubstring("backup_metadata.ignore")))
	md := `{"created_at":"2026-12-01T04:10:06Z","completed_at":"2026-12-01T04:10:07Z"}`
	g.Expect(os.WriteFile(filepath.Join(dir, BackupMetadataFile), []byte(md), 0o644)).To(Succeed())
	n, err := inspectFSBackup(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(Equal(int64(1000 + len(md))))

	g.Expect(removeFSBackup("fs://"+root, "fs://"+root)).To(MatchError(ContainSubstring("not below")))
	g.Expect(removeFSBackup("fs://"+root, "fs://"+root+"/../etc")).To(MatchError(ContainSubstring("not below")))
	g.Expect(removeFSBackup("s3://b", "s3://b/x")).To(HaveOccurred())
	g.Expect(removeFSBackup("fs://"+root, "fs://"+dir)).To(Succeed())
	g.Expect(dir).NotTo(BeADirectory())
	g.Expect(root).To(BeADirectory())
}

// fakeVMBackup is a stand-in for bin/vmbackup: it prints vmbackup's log
// lines and exits as told by its -dst (ok, fail or slow).
const fakeVMBackup = `#!/bin/sh
for a in "$@"; do case "$a" in -dst=*) dst="${a#-dst=}";; esac; done
case "$dst" in
  *fail*) printf '2026-12-01T04:10:06.300Z\tfatal\tmain.go:104\tcannot create backup: destination is read-only\n' >&2; exit 255;;
  *slow*) sleep 30;;
esac
printf '2026-12-01T04:10:06.300Z\tinfo\tbackup.go:176\tbackup from a to b with origin c is complete; backed up 42 bytes in 0.1 seconds; server-side deleted 0 bytes\n' >&2
`

func TestLocalRunner(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "vmbackup")
	NewWithT(t).Expect(os.WriteFile(bin, []byte(fakeVMBackup), 0o755)).To(Succeed())
	newRunner := func() *LocalRunner {
		return &LocalRunner{Binary: bin, StateDir: filepath.Join(dir, "state"), StorageDataPath: func(*corev1.Pod) (string, error) { return "/data", nil }}
	}
	ctx := context.Background()
	wait := func(g Gomega, r *LocalRunner, ref UploadRef, want UploadState) UploadStatus {
		var st UploadStatus
		g.Eventually(func() UploadState {
			var err error
			st, err = r.Status(ctx, ref)
			g.Expect(err).NotTo(HaveOccurred())
			return st.State
		}, 10*time.Second, 20*time.Millisecond).Should(Equal(want))
		return st
	}
	cases := []struct {
		name string
		dst  string
		want UploadStatus
	}{
		{"success reports the size", "fs:///b/ok", UploadStatus{State: UploadSucceeded, Bytes: 42}},
		{"failure reports vmbackup's message", "fs:///b/fail", UploadStatus{State: UploadFailed, Message: "cannot create backup: destination is read-only"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := newRunner()
			u := upload(func(u *Upload) { u.ID = "id-" + filepath.Base(tc.dst); u.Destination = tc.dst })
			st, err := r.Status(ctx, u.UploadRef)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st.State).To(Equal(UploadNotFound))
			g.Expect(r.Start(ctx, u)).To(Succeed())
			g.Expect(wait(g, r, u.UploadRef, tc.want.State)).To(Equal(tc.want))
			// Started once: a second Start, and one from a new runner on
			// the same state (an operator restart), only observe.
			g.Expect(r.Start(ctx, u)).To(Succeed())
			r2 := newRunner()
			g.Expect(r2.Start(ctx, u)).To(Succeed())
			g.Expect(wait(g, r2, u.UploadRef, tc.want.State)).To(Equal(tc.want))
			g.Expect(r.Starts()).To(Equal(map[string]int{"observability/" + u.ID: 1}))
			g.Expect(r2.Starts()).To(BeEmpty())
			g.Expect(r.Delete(ctx, u.UploadRef)).To(Succeed())
			st, _ = r.Status(ctx, u.UploadRef)
			g.Expect(st.State).To(Equal(UploadNotFound))
		})
	}
	t.Run("a running upload is seen running by a new runner and can be stopped", func(t *testing.T) {
		g := NewWithT(t)
		r := newRunner()
		u := upload(func(u *Upload) { u.ID = "id-slow"; u.Destination = "fs:///b/slow" })
		g.Expect(r.Start(ctx, u)).To(Succeed())
		wait(g, newRunner(), u.UploadRef, UploadRunning)
		g.Expect(r.Delete(ctx, u.UploadRef)).To(Succeed())
		st, _ := r.Status(ctx, u.UploadRef)
		g.Expect(st.State).To(Equal(UploadNotFound))
	})
	t.Run("credentials are refused", func(t *testing.T) {
		g := NewWithT(t)
		u := upload(func(u *Upload) { u.ID = "id-creds"; u.Credentials = &opsv1.SecretKeyReference{Name: "s"} })
		err := newRunner().Start(ctx, u)
		g.Expect(IsPermanent(err)).To(BeTrue())
	})
}
