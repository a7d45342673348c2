package restore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/controller/backup"
	"github.com/tidbcloud/ops-server/operator/internal/controller/restore"
)

// clusterFixture is a vmstorage StatefulSet as the vmcluster chart renders
// it — the ops-hold init container mounting the hold ConfigMap, the data
// on a claim — and a Succeeded ClusterBackup. No StatefulSet, Job or
// kubelet controller runs in envtest: cluster() plays them.
type clusterFixture struct {
	ns   string
	sts  *appsv1.StatefulSet
	pods []string
	// uids are every pod UID the "kubelet" saw per pod name, in order;
	// deleted counts the pods that disappeared per name.
	uids    map[string][]types.UID
	deleted map[string]int
	// jobs are the names of every Job ever seen.
	jobs map[string]bool
	// withHold: the template has the init container.
	withHold bool
}

func podTemplate(withHold bool) corev1.PodTemplateSpec {
	spec := corev1.PodSpec{
		Containers: []corev1.Container{{Name: "vmstorage", Image: "victoriametrics/vmstorage:v1.100.0-cluster",
			Args:         []string{"-storageDataPath=/vm-data", "-retentionPeriod=1"},
			VolumeMounts: []corev1.VolumeMount{{Name: "vmstorage-db", MountPath: "/vm-data"}}}},
		Volumes: []corev1.Volume{{Name: "vmstorage-db", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "placeholder"}}}},
	}
	if withHold {
		spec.InitContainers = []corev1.Container{{Name: restore.HoldInitContainer, Image: "busybox:1.36.1",
			Command:      []string{"sh", "-c", "while [ -e \"/ops-hold/$POD_NAME\" ]; do sleep 2; done"},
			VolumeMounts: []corev1.VolumeMount{{Name: "ops-hold", MountPath: "/ops-hold", ReadOnly: true}}}}
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "ops-hold", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: restore.HoldConfigMapName("vmc")}, Optional: ptr.To(true)}}})
	}
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}
}

func newClusterFixture(t *testing.T, n int, withHold bool) *clusterFixture {
	return newClusterFixtureIn(t, env.NewNamespace(t), n, withHold)
}

// newClusterFixtureIn is newClusterFixture in namespace ns, whose objects
// (a hold ConfigMap written before the pods) the caller may have created.
func newClusterFixtureIn(t *testing.T, ns string, n int, withHold bool) *clusterFixture {
	g := NewWithT(t)
	ctx := context.Background()
	f := &clusterFixture{ns: ns, uids: map[string][]types.UID{}, deleted: map[string]int{}, jobs: map[string]bool{}, withHold: withHold}
	f.sts = &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "vmstorage-vmc"},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(n)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			ServiceName: "vmstorage-vmc", Template: podTemplate(withHold)},
	}
	g.Expect(env.Client.Create(ctx, f.sts)).To(Succeed())
	b := &opsv1.ClusterBackup{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "nightly"},
		Spec: opsv1.ClusterBackupSpec{VMCluster: opsv1.VMClusterReference{Name: "vmc"}, Destination: opsv1.BackupDestination{URL: "fs:///backups"}}}
	g.Expect(env.Client.Create(ctx, b)).To(Succeed())
	for i := range n {
		name := fmt.Sprintf("vmstorage-vmc-%d", i)
		f.pods = append(f.pods, name)
		b.Status.Replicas = append(b.Status.Replicas, opsv1.ReplicaBackup{Pod: name, State: opsv1.ReplicaStateSucceeded,
			Destination: "fs:///backups/vmc/nightly/" + name})
	}
	f.cluster(t)
	b.Status.Phase = opsv1.BackupPhaseSucceeded
	g.Expect(env.Client.Status().Update(ctx, b)).To(Succeed())
	return f
}

// cluster plays the StatefulSet controller (a missing pod is created from
// the template), the kubelet (a new pod's ops-hold init container runs
// while the hold ConfigMap has its key, else it finished and the pod is
// Ready) and the Job controller (every Job completes). It returns the
// pods held in their init container now.
func (f *clusterFixture) cluster(t *testing.T) []string {
	g := NewWithT(t)
	ctx := context.Background()
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: f.ns, Name: restore.HoldConfigMapName("vmc")}, cm); err != nil {
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	}
	var held []string
	for _, name := range f.pods {
		pod := &corev1.Pod{}
		err := env.Client.Get(ctx, types.NamespacedName{Namespace: f.ns, Name: name}, pod)
		if err == nil && pod.DeletionTimestamp != nil {
			// The kubelet confirms a graceful deletion.
			g.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, pod, client.GracePeriodSeconds(0)))).To(Succeed())
			err = env.Client.Get(ctx, types.NamespacedName{Namespace: f.ns, Name: name}, pod)
		}
		if apierrors.IsNotFound(err) {
			if len(f.uids[name]) > 0 {
				f.deleted[name]++
			}
			tmpl := f.sts.Spec.Template.DeepCopy()
			for i := range tmpl.Spec.Volumes {
				if tmpl.Spec.Volumes[i].PersistentVolumeClaim != nil {
					tmpl.Spec.Volumes[i].PersistentVolumeClaim.ClaimName = "vmstorage-db-" + name
				}
			}
			pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name, Labels: labels,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: f.sts.Name, UID: f.sts.UID, Controller: ptr.To(true)}}},
				Spec: tmpl.Spec}
			pod.Spec.NodeName = "node-" + name[len(name)-1:]
			g.Expect(env.Client.Create(ctx, pod)).To(Succeed())
		} else {
			g.Expect(err).NotTo(HaveOccurred())
		}
		uids := f.uids[name]
		isNew := len(uids) == 0 || uids[len(uids)-1] != pod.UID
		if isNew {
			f.uids[name] = append(uids, pod.UID)
		}
		_, listed := cm.Data[name]
		ready := corev1.ConditionTrue
		var init []corev1.ContainerStatus
		if f.withHold {
			state := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}
			wasWaiting := len(pod.Status.InitContainerStatuses) > 0 && pod.Status.InitContainerStatuses[0].State.Running != nil
			if listed && (isNew || wasWaiting) {
				state, ready = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, corev1.ConditionFalse
				held = append(held, name)
			}
			init = []corev1.ContainerStatus{{Name: restore.HoldInitContainer, State: state}}
		}
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, InitContainerStatuses: init,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}}
		if ready == corev1.ConditionFalse {
			pod.Status.Phase = corev1.PodPending
		}
		g.Expect(env.Client.Status().Update(ctx, pod)).To(Succeed())
	}
	jobs := &batchv1.JobList{}
	g.Expect(env.Client.List(ctx, jobs, client.InNamespace(f.ns))).To(Succeed())
	for i := range jobs.Items {
		j := &jobs.Items[i]
		f.jobs[j.Name] = true
		if len(j.Status.Conditions) > 0 {
			continue
		}
		now := metav1.Now()
		j.Status = batchv1.JobStatus{StartTime: &now, CompletionTime: &now, Succeeded: 1, Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}}
		g.Expect(env.Client.Status().Update(ctx, j)).To(Succeed())
	}
	return held
}

// reconcileJobMode runs a fresh reconciler (ops-operator restarted) for
// every reconcile, with the cluster played after each, until the restore
// is terminal; check sees the held pods after every round.
func reconcileJobMode(t *testing.T, f *clusterFixture, key types.NamespacedName, check func(held []string)) *opsv1.ClusterRestore {
	g := NewWithT(t)
	ctx := context.Background()
	rs := &opsv1.ClusterRestore{}
	g.Eventually(func(g Gomega) {
		r := &restore.Reconciler{Client: env.Client, APIReader: env.Client, Now: time.Now, Options: restore.Options{
			PollInterval: time.Millisecond, StartTimeout: time.Minute, FSRoots: []string{"/backups"},
			Runner:  &restore.JobRunner{Client: env.Client, Reader: env.Client, Options: restore.DefaultJobOptions()},
			Stopper: restore.ConfigMapStopper{Client: env.Client, Reader: env.Client},
		}}
		_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key})
		g.Expect(err).NotTo(HaveOccurred())
		check(f.cluster(t))
		g.Expect(env.Client.Get(ctx, key, rs)).To(Succeed())
		g.Expect(rs.Status.Phase.IsTerminal()).To(BeTrue(), "phase %s: %+v %+v", rs.Status.Phase, rs.Status.Replicas, rs.Status.Conditions)
	}, 30*time.Second, 10*time.Millisecond).Should(Succeed())
	return rs
}

func TestJobModeRestoreSurvivesARestartAtEveryStatusChange(t *testing.T) {
	for _, strategy := range []opsv1.RestoreStrategy{opsv1.RestoreOneAtATime, opsv1.RestoreAllAtOnce} {
		t.Run(string(strategy), func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			f := newClusterFixture(t, 3, true)
			rs := &opsv1.ClusterRestore{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "back"},
				Spec: opsv1.ClusterRestoreSpec{Backup: "nightly", Strategy: strategy}}
			g.Expect(env.Client.Create(ctx, rs)).To(Succeed())
			maxHeld := 0
			rs = reconcileJobMode(t, f, client.ObjectKeyFromObject(rs), func(held []string) { maxHeld = max(maxHeld, len(held)) })

			g.Expect(rs.Status.Phase).To(Equal(opsv1.RestorePhaseSucceeded), "%+v", rs.Status)
			if strategy == opsv1.RestoreOneAtATime {
				g.Expect(maxHeld).To(Equal(1))
			} else {
				g.Expect(maxHeld).To(Equal(3))
			}
			for _, name := range f.pods {
				g.Expect(f.deleted[name]).To(Equal(1), "pod %s deleted exactly once", name)
				g.Expect(f.uids[name]).To(HaveLen(2))
			}
			g.Expect(f.jobs).To(HaveLen(3), "one vmrestore Job per replica")
			for i, rep := range rs.Status.Replicas {
				g.Expect(rep.State).To(Equal(opsv1.ReplicaRestoreSucceeded))
				g.Expect(f.jobs).To(HaveKey(rep.RunID))
				job := &batchv1.Job{}
				g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: f.ns, Name: rep.RunID}, job)).To(Succeed())
				spec := job.Spec.Template.Spec
				g.Expect(spec.Containers).To(HaveLen(1))
				c := spec.Containers[0]
				g.Expect(c.Name).To(Equal("vmrestore"))
				g.Expect(c.Image).To(Equal("victoriametrics/vmrestore:v1.100.0"))
				g.Expect(c.Args).To(Equal([]string{fmt.Sprintf("-src=fs:///backups/vmc/nightly/vmstorage-vmc-%d", i), "-storageDataPath=/vm-data", "-httpListenAddr="}))
				g.Expect(spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values).To(Equal([]string{fmt.Sprintf("node-%d", i)}))
				g.Expect(spec.Volumes[0].PersistentVolumeClaim.ClaimName).To(Equal("vmstorage-db-" + rep.Pod))
				g.Expect(spec.Volumes[0].PersistentVolumeClaim.ReadOnly).To(BeFalse(), "vmrestore writes the volume")
				g.Expect(c.VolumeMounts[0].ReadOnly).To(BeFalse())
				g.Expect(spec.Volumes[1].HostPath.Path).To(Equal(fmt.Sprintf("/backups/vmc/nightly/vmstorage-vmc-%d", i)))
				g.Expect(*spec.Volumes[1].HostPath.Type).To(Equal(corev1.HostPathDirectory))
				g.Expect(c.VolumeMounts[1].ReadOnly).To(BeTrue(), "the backup is only read")
				g.Expect(job.OwnerReferences).To(HaveLen(1))
				g.Expect(job.OwnerReferences[0].Kind).To(Equal("ClusterRestore"))
			}
			cm := &corev1.ConfigMap{}
			g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: f.ns, Name: restore.HoldConfigMapName("vmc")}, cm)).To(Succeed())
			g.Expect(cm.Data).To(BeEmpty(), "every hold released")
			g.Expect(f.cluster(t)).To(BeEmpty())
		})
	}
}

func TestJobModeRefusesPodsWithoutTheHoldInitContainer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newClusterFixture(t, 2, false)
	rs := &opsv1.ClusterRestore{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "back"}, Spec: opsv1.ClusterRestoreSpec{Backup: "nightly"}}
	g.Expect(env.Client.Create(ctx, rs)).To(Succeed())
	rs = reconcileJobMode(t, f, client.ObjectKeyFromObject(rs), func([]string) {})

	g.Expect(rs.Status.Phase).To(Equal(opsv1.RestorePhaseFailed))
	g.Expect(rs.Status.Replicas).To(BeEmpty(), "refused before anything was touched")
	var ready metav1.Condition
	for _, c := range rs.Status.Conditions {
		if c.Type == opsv1.ReadyCondition {
			ready = c
		}
	}
	g.Expect(ready.Reason).To(Equal(opsv1.InvalidSpecReason))
	g.Expect(ready.Message).To(ContainSubstring("vmstorage pod " + f.ns + "/vmstorage-vmc-0 cannot be stopped for a restore: it has no init container ops-hold"))
	g.Expect(f.deleted).To(BeEmpty())
	g.Expect(f.jobs).To(BeEmpty())
	err := env.Client.Get(ctx, types.NamespacedName{Namespace: f.ns, Name: restore.HoldConfigMapName("vmc")}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no hold written")
}

func TestBuildJobCredentialsAndValidity(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newClusterFixture(t, 1, true)
	pod := &corev1.Pod{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: f.ns, Name: f.pods[0]}, pod)).To(Succeed())
	rs := &opsv1.ClusterRestore{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "back", UID: "1234"}}
	job, err := restore.BuildJob(backup.UploadRef{Namespace: f.ns, ID: "restore-back-1234-0"}, rs, pod, "s3://bucket/vmc/nightly/"+pod.Name,
		&opsv1.SecretKeyReference{Name: "s3-creds", Key: "credentials"}, restore.DefaultJobOptions())
	g.Expect(err).NotTo(HaveOccurred())
	c := job.Spec.Template.Spec.Containers[0]
	g.Expect(c.Args).To(ContainElement("-credsFilePath=/etc/vmbackup/credentials/credentials"))
	g.Expect(c.Args).To(ContainElement("-src=s3://bucket/vmc/nightly/" + pod.Name))
	g.Expect(job.Spec.Template.Spec.Volumes).To(HaveLen(2), "data and credentials, no hostPath for s3")
	job.OwnerReferences = nil // its owner does not exist
	g.Expect(env.Client.Create(ctx, job, client.DryRunAll)).To(Succeed(), "a valid Job")
}

// A vmcluster created from a backup: its hold ConfigMap, pre-held for the
// seeding restore (opsv1.SeedHoldConfigMap), exists before its pods, which
// wait in ops-hold from their start. The restore (ops-operator restarted
// before every reconcile) never deletes a pod: each replica's only pod
// started vmstorage after its vmrestore Job.
func TestSeededReplicasAreRestoredWithoutDeletingThem(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	g.Expect(env.Client.Create(ctx, opsv1.SeedHoldConfigMap(ns, "vmc", ns, 3))).To(Succeed())
	f := newClusterFixtureIn(t, ns, 3, true)
	rs := &opsv1.ClusterRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: opsv1.SeedRestoreName("vmc")},
		Spec: opsv1.ClusterRestoreSpec{Backup: "nightly", Strategy: opsv1.RestoreAllAtOnce}}
	g.Expect(env.Client.Create(ctx, rs)).To(Succeed())
	startedBeforeRestore := map[string]bool{}
	rs = reconcileJobMode(t, f, client.ObjectKeyFromObject(rs), func(held []string) {
		cur := &opsv1.ClusterRestore{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rs), cur)).To(Succeed())
		for _, name := range f.pods {
			if slices.Contains(held, name) {
				continue
			}
			done := false
			for _, rep := range cur.Status.Replicas {
				done = done || (rep.Pod == name && (rep.State == opsv1.ReplicaRestoreStarting || rep.State == opsv1.ReplicaRestoreSucceeded))
			}
			if !done {
				startedBeforeRestore[name] = true
			}
		}
	})

	g.Expect(rs.Status.Phase).To(Equal(opsv1.RestorePhaseSucceeded), "%+v", rs.Status)
	g.Expect(startedBeforeRestore).To(BeEmpty(), "no replica left ops-hold before its vmrestore finished")
	g.Expect(f.deleted).To(BeEmpty(), "a pre-held pod is never deleted")
	for _, name := range f.pods {
		g.Expect(f.uids[name]).To(HaveLen(1), "pod %s: one pod, never replaced", name)
	}
	g.Expect(f.jobs).To(HaveLen(3), "one vmrestore Job per replica")
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: restore.HoldConfigMapName("vmc")}, cm)).To(Succeed())
	g.Expect(cm.Data).To(BeEmpty(), "every hold released")
	g.Expect(f.cluster(t)).To(BeEmpty())
}

// A pre-held key written after its pod already started vmstorage (a
// GitOps user committing the ConfigMap late): that pod is recorded and
// deleted exactly once, like the pod of any running replica.
func TestLatePreHeldReplicaIsDeletedOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newClusterFixture(t, 2, true)
	g.Expect(env.Client.Create(ctx, opsv1.SeedHoldConfigMap(f.ns, "vmc", f.ns, 2))).To(Succeed())
	rs := &opsv1.ClusterRestore{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: opsv1.SeedRestoreName("vmc")},
		Spec: opsv1.ClusterRestoreSpec{Backup: "nightly", Strategy: opsv1.RestoreAllAtOnce}}
	g.Expect(env.Client.Create(ctx, rs)).To(Succeed())
	rs = reconcileJobMode(t, f, client.ObjectKeyFromObject(rs), func([]string) {})

	g.Expect(rs.Status.Phase).To(Equal(opsv1.RestorePhaseSucceeded), "%+v", rs.Status)
	for _, name := range f.pods {
		g.Expect(f.deleted[name]).To(Equal(1), "pod %s deleted exactly once", name)
		g.Expect(f.uids[name]).To(HaveLen(2))
	}
	g.Expect(f.jobs).To(HaveLen(2))
}
