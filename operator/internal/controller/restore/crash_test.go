package restore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/controller/backup"
	"github.com/tidbcloud/ops-server/operator/internal/controller/restore"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.RunMain(m, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{opsv1.AddToScheme}},
		func(e *testenv.Environment) error { env = e; return nil }))
}

var labels = map[string]string{"app.kubernetes.io/name": "vmstorage", "app.kubernetes.io/instance": "vmc"}

// fixture: a vmstorage StatefulSet of n Ready pods (annotated with their
// data directories, as local mode reads them) and a Succeeded
// ClusterBackup of n replicas, in a fresh namespace.
type fixture struct {
	ns, root, state string
	pods            []string
}

func newFixture(t *testing.T, n int) *fixture {
	g := NewWithT(t)
	ctx := context.Background()
	f := &fixture{ns: env.NewNamespace(t), root: t.TempDir(), state: t.TempDir()}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "vmstorage-vmc"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(int32(n)), Selector: &metav1.LabelSelector{MatchLabels: labels}, ServiceName: "vmstorage-vmc",
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "vmstorage", Image: "victoriametrics/vmstorage"}}}},
		},
	}
	g.Expect(env.Client.Create(ctx, sts)).To(Succeed())
	b := &opsv1.ClusterBackup{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "nightly"},
		Spec: opsv1.ClusterBackupSpec{VMCluster: opsv1.VMClusterReference{Name: "vmc"}, Destination: opsv1.BackupDestination{URL: "fs:///backups"}}}
	g.Expect(env.Client.Create(ctx, b)).To(Succeed())
	for i := range n {
		name := fmt.Sprintf("vmstorage-vmc-%d", i)
		f.pods = append(f.pods, name)
		dir := filepath.Join(f.root, name)
		g.Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name, Labels: labels,
				Annotations:     map[string]string{backup.LocalStorageDataPathAnnotation: dir},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts.Name, UID: sts.UID, Controller: ptr.To(true)}}},
			Spec: sts.Spec.Template.Spec,
		}
		g.Expect(env.Client.Create(ctx, pod)).To(Succeed())
		b.Status.Replicas = append(b.Status.Replicas, opsv1.ReplicaBackup{Pod: name, State: opsv1.ReplicaStateSucceeded,
			Destination: "fs:///backups/vmc/nightly/" + name})
	}
	f.kubelet(t)
	b.Status.Phase = opsv1.BackupPhaseSucceeded
	g.Expect(env.Client.Status().Update(ctx, b)).To(Succeed())
	return f
}

// kubelet plays the local stack's backer for the pods: a held pod's
// process stops (stopped annotation, NotReady), a released one runs again
// (Ready). It returns the pods held now.
func (f *fixture) kubelet(t *testing.T) []string {
	g := NewWithT(t)
	ctx := context.Background()
	var held []string
	for _, name := range f.pods {
		pod := &corev1.Pod{}
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: f.ns, Name: name}, pod)).To(Succeed())
		_, isHeld := pod.Annotations[restore.HoldAnnotation]
		var stopped any
		ready := corev1.ConditionTrue
		if isHeld {
			held = append(held, name)
			stopped, ready = "true", corev1.ConditionFalse
		}
		patch := client.MergeFrom(pod.DeepCopy())
		if stopped == nil {
			delete(pod.Annotations, restore.LocalStoppedAnnotation)
		} else {
			pod.Annotations[restore.LocalStoppedAnnotation] = "true"
		}
		g.Expect(env.Client.Patch(ctx, pod, patch)).To(Succeed())
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}}
		g.Expect(env.Client.Status().Update(ctx, pod)).To(Succeed())
	}
	return held
}

// fakeVMRestore writes an executable standing in for vmrestore: it
// records its arguments and exits with code.
func fakeVMRestore(t *testing.T, code int) (bin, calls string) {
	dir := t.TempDir()
	bin, calls = filepath.Join(dir, "vmrestore"), filepath.Join(dir, "calls")
	script := fmt.Sprintf("#!/bin/sh\necho \"$@\" >> %s\nprintf '2026-05-06T00:00:00.000Z\\tfatal\\tapp/vmrestore/main.go:1\\tcannot restore: boom\\n' >&2\nexit %d\n", calls, code)
	if code == 0 {
		script = fmt.Sprintf("#!/bin/sh\necho \"$@\" >> %s\nexit 0\n", calls)
	}
	NewWithT(t).Expect(os.WriteFile(bin, []byte(script), 0o755)).To(Succeed())
	return bin, calls
}

// reconcileWithRestarts runs the reconciler until the restore is terminal,
// with a new reconciler (and runner) for every reconcile: ops-operator
// restarted after every status change, each reconcile writing status at
// most once. check is called after every round with the pods held.
func reconcileWithRestarts(t *testing.T, f *fixture, bin string, key types.NamespacedName, check func(held []string)) *opsv1.ClusterRestore {
	g := NewWithT(t)
	ctx := context.Background()
	rs := &opsv1.ClusterRestore{}
	g.Eventually(func(g Gomega) {
		runner, err := restore.NewLocalRunner(backup.LocalModeOptions{StateDir: f.state, StorageRoot: f.root}, bin)
		g.Expect(err).NotTo(HaveOccurred())
		r := &restore.Reconciler{Client: env.Client, APIReader: env.Client, Now: time.Now, Options: restore.Options{
			PollInterval: time.Millisecond, StartTimeout: time.Minute, FSRoots: []string{"/backups"},
			Runner: runner, Stopper: restore.AnnotationStopper{Client: env.Client},
		}}
		_, err = r.Reconcile(ctx, reconcile.Request{NamespacedName: key})
		g.Expect(err).NotTo(HaveOccurred())
		check(f.kubelet(t))
		g.Expect(env.Client.Get(ctx, key, rs)).To(Succeed())
		g.Expect(rs.Status.Phase.IsTerminal()).To(BeTrue(), "phase %s", rs.Status.Phase)
	}, time.Minute, 10*time.Millisecond).Should(Succeed())
	return rs
}

func startsLog(t *testing.T, f *fixture) map[string]int {
	raw, err := os.ReadFile(filepath.Join(f.state, ".restores", backup.StartsLog))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	out := map[string]int{}
	for _, l := range strings.Fields(string(raw)) {
		out[l]++
	}
	return out
}

func TestRestoreSurvivesARestartAtEveryStatusChange(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, 3)
	bin, calls := fakeVMRestore(t, 0)
	rs := &opsv1.ClusterRestore{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "back"}, Spec: opsv1.ClusterRestoreSpec{Backup: "nightly"}}
	g.Expect(env.Client.Create(context.Background(), rs)).To(Succeed())
	maxHeld := 0
	rs = reconcileWithRestarts(t, f, bin, client.ObjectKeyFromObject(rs), func(held []string) { maxHeld = max(maxHeld, len(held)) })

	g.Expect(rs.Status.Phase).To(Equal(opsv1.RestorePhaseSucceeded))
	g.Expect(rs.Status.Progress).To(Equal("3/3"))
	g.Expect(maxHeld).To(Equal(1), "OneAtATime holds one replica at a time")
	starts := startsLog(t, f)
	g.Expect(starts).To(HaveLen(3))
	for _, rep := range rs.Status.Replicas {
		g.Expect(rep.State).To(Equal(opsv1.ReplicaRestoreSucceeded))
		g.Expect(starts[f.ns+"/"+rep.RunID]).To(Equal(1), "vmrestore started once for %s", rep.Pod)
	}
	raw, err := os.ReadFile(calls)
	g.Expect(err).NotTo(HaveOccurred())
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	g.Expect(lines).To(HaveLen(3), "vmrestore ran once per replica")
	for i, l := range lines {
		g.Expect(l).To(Equal(fmt.Sprintf("-src=fs:///backups/vmc/nightly/vmstorage-vmc-%d -storageDataPath=%s -httpListenAddr=", i, filepath.Join(f.root, f.pods[i]))))
	}
	g.Expect(f.kubelet(t)).To(BeEmpty(), "every replica released")
}

func TestFailedVMRestoreKeepsTheReplicaStopped(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, 2)
	bin, _ := fakeVMRestore(t, 1)
	rs := &opsv1.ClusterRestore{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "back"}, Spec: opsv1.ClusterRestoreSpec{Backup: "nightly"}}
	g.Expect(env.Client.Create(context.Background(), rs)).To(Succeed())
	rs = reconcileWithRestarts(t, f, bin, client.ObjectKeyFromObject(rs), func([]string) {})

	g.Expect(rs.Status.Phase).To(Equal(opsv1.RestorePhaseFailed))
	g.Expect(rs.Status.Replicas[0].State).To(Equal(opsv1.ReplicaRestoreFailed))
	g.Expect(rs.Status.Replicas[0].Error).To(ContainSubstring("vmrestore failed: cannot restore: boom"))
	g.Expect(rs.Status.Replicas[1].Error).To(Equal("not restored: another replica's restore failed"))
	g.Expect(f.kubelet(t)).To(Equal([]string{"vmstorage-vmc-0"}), "the half-restored replica stays stopped; the other was never touched")
	g.Expect(startsLog(t, f)).To(HaveLen(1))
}

func TestRefusedBeforeAnythingIsTouched(t *testing.T) {
	for name, tc := range map[string]struct {
		spec opsv1.ClusterRestoreSpec
		msg  string
	}{
		"unknown backup":    {opsv1.ClusterRestoreSpec{Backup: "nope"}, "spec.backup: ClusterBackup"},
		"counts differ":     {opsv1.ClusterRestoreSpec{Backup: "nightly", VMCluster: &opsv1.VMClusterReference{Name: "vmc"}, ReplicaMapping: []opsv1.ReplicaMapping{{Replica: 0, FromReplica: 0}}}, "spec.replicaMapping: replicaMapping must name every vmstorage replica"},
		"another namespace": {opsv1.ClusterRestoreSpec{Backup: "nightly", VMCluster: &opsv1.VMClusterReference{Namespace: "other", Name: "vmc"}}, "a ClusterRestore may only restore into a VMCluster in its own namespace"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFixture(t, 2)
			bin, _ := fakeVMRestore(t, 0)
			rs := &opsv1.ClusterRestore{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "back"}, Spec: tc.spec}
			g.Expect(env.Client.Create(context.Background(), rs)).To(Succeed())
			rs = reconcileWithRestarts(t, f, bin, client.ObjectKeyFromObject(rs), func(held []string) { g.Expect(held).To(BeEmpty()) })
			g.Expect(rs.Status.Phase).To(Equal(opsv1.RestorePhaseFailed))
			ready := rs.Status.Conditions[0]
			for _, c := range rs.Status.Conditions {
				if c.Type == opsv1.ReadyCondition {
					ready = c
				}
			}
			g.Expect(ready.Reason).To(Equal(opsv1.InvalidSpecReason))
			g.Expect(ready.Message).To(ContainSubstring(tc.msg))
			g.Expect(rs.Status.Replicas).To(BeEmpty())
		})
	}
}
