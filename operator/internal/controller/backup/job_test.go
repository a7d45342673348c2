package backup

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// vmstoragePod is a vmstorage pod as the VictoriaMetrics operator (v0.74)
// renders it: container vmstorage, -storageDataPath=/vmstorage-data on the
// claim of the volumeClaimTemplate vmstorage-db.
func vmstoragePod(mut func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "observability", Name: "vmstorage-vmc-0", UID: "pod-uid"},
		Spec: corev1.PodSpec{
			NodeName:         "ip-10-0-12-34",
			Tolerations:      []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "vmstorage", Effect: corev1.TaintEffectNoSchedule}},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}},
			SecurityContext:  &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](65534), FSGroup: ptr.To[int64](65534)},
			Containers: []corev1.Container{
				{Name: "config-reloader", Image: "reloader"},
				{
					Name:  "vmstorage",
					Image: "victoriametrics/vmstorage:v1.100.0-cluster",
					Args:  []string{"-retentionPeriod=1", "-storageDataPath=/vmstorage-data", "-httpListenAddr=:8482"},
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8482}},
					VolumeMounts: []corev1.VolumeMount{
						{Name: "config", MountPath: "/etc/vm"},
						{Name: "vmstorage-db", MountPath: "/vmstorage-data"},
					},
					SecurityContext: &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true)},
				},
			},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "vmstorage-db", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "vmstorage-db-vmstorage-vmc-0"}}},
			},
		},
	}
	if mut != nil {
		mut(p)
	}
	return p
}

func upload(mut func(*Upload)) Upload {
	b := mkBackup(nil)
	u := Upload{
		UploadRef:    UploadRef{Namespace: "observability", ID: jobName(b, "vmstorage-vmc-0")},
		Backup:       b,
		Pod:          vmstoragePod(nil),
		SnapshotName: "20260506020000-18ED05CB8B1B6538",
		Destination:  "s3://bucket/prefix/vmc/nightly/vmstorage-vmc-0",
	}
	if mut != nil {
		mut(&u)
	}
	return u
}

func TestBuildJob(t *testing.T) {
	g := NewWithT(t)
	o := DefaultJobOptions()
	o.ServiceAccountName = "vmbackup"
	o.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}
	job, err := BuildJob(upload(func(u *Upload) { u.Origin = "s3://bucket/prefix/vmc/previous/vmstorage-vmc-0" }), o)
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(job.Name).To(HavePrefix("nightly-vmstorage-vmc-0-"))
	g.Expect(job.Namespace).To(Equal("observability"))
	g.Expect(job.Labels).To(HaveKeyWithValue(LabelClusterBackup, "uid-1"))
	g.Expect(job.Annotations).To(HaveKeyWithValue(AnnotationBackup, "observability/nightly"))
	g.Expect(job.OwnerReferences).To(HaveLen(1))
	g.Expect(job.OwnerReferences[0].Kind).To(Equal("ClusterBackup"))
	g.Expect(*job.Spec.BackoffLimit).To(Equal(int32(2)))
	g.Expect(*job.Spec.ActiveDeadlineSeconds).To(Equal(int64(12 * 3600)))

	spec := job.Spec.Template.Spec
	g.Expect(spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
	g.Expect(spec.ServiceAccountName).To(Equal("vmbackup"))
	g.Expect(*spec.AutomountServiceAccountToken).To(BeFalse())
	terms := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	g.Expect(terms).To(HaveLen(1))
	g.Expect(terms[0].MatchFields).To(ConsistOf(corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"ip-10-0-12-34"}}))
	g.Expect(spec.Tolerations).To(Equal(vmstoragePod(nil).Spec.Tolerations))
	g.Expect(spec.ImagePullSecrets).To(Equal(vmstoragePod(nil).Spec.ImagePullSecrets))
	g.Expect(*spec.SecurityContext.RunAsUser).To(Equal(int64(65534)))
	g.Expect(spec.Volumes).To(ConsistOf(corev1.Volume{Name: "vmstorage-data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "vmstorage-db-vmstorage-vmc-0", ReadOnly: true},
	}}))

	g.Expect(spec.Containers).To(HaveLen(1))
	c := spec.Containers[0]
	g.Expect(c.Image).To(Equal("victoriametrics/vmbackup:v1.100.0"))
	g.Expect(c.Args).To(Equal([]string{
		"-snapshotName=20260506020000-18ED05CB8B1B6538",
		"-storageDataPath=/vmstorage-data",
		"-dst=s3://bucket/prefix/vmc/nightly/vmstorage-vmc-0",
		"-httpListenAddr=127.0.0.1:8420",
		"-origin=s3://bucket/prefix/vmc/previous/vmstorage-vmc-0",
	}))
	g.Expect(c.VolumeMounts).To(ConsistOf(corev1.VolumeMount{Name: "vmstorage-data", MountPath: "/vmstorage-data", ReadOnly: true}))
	g.Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
	g.Expect(c.TerminationMessagePolicy).To(Equal(corev1.TerminationMessageFallbackToLogsOnError))
	g.Expect(c.Resources.Requests.Cpu().String()).To(Equal("100m"))
}

func TestBuildJobVariants(t *testing.T) {
	cases := []struct {
		name  string
		u     Upload
		check func(g Gomega, spec corev1.PodSpec)
		err   string
	}{
		{
			name: "credentials file from a Secret key",
			u: upload(func(u *Upload) {
				u.Credentials = &opsv1.SecretKeyReference{Name: "backup-credentials", Key: "credentials"}
			}),
			check: func(g Gomega, spec corev1.PodSpec) {
				c := spec.Containers[0]
				g.Expect(c.Args).To(ContainElement("-credsFilePath=/etc/vmbackup/credentials/credentials"))
				g.Expect(c.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "credentials", MountPath: "/etc/vmbackup/credentials", ReadOnly: true}))
				g.Expect(spec.Volumes).To(ContainElement(corev1.Volume{Name: "credentials", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: "backup-credentials", Items: []corev1.KeyToPath{{Key: "credentials", Path: "credentials"}},
				}}}))
				g.Expect(c.EnvFrom).To(BeEmpty())
			},
		},
		{
			name: "credentials as environment without a key",
			u:    upload(func(u *Upload) { u.Credentials = &opsv1.SecretKeyReference{Name: "azure"} }),
			check: func(g Gomega, spec corev1.PodSpec) {
				c := spec.Containers[0]
				g.Expect(c.EnvFrom).To(ConsistOf(corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "azure"}}}))
				for _, a := range c.Args {
					g.Expect(a).NotTo(HavePrefix("-credsFilePath"))
				}
			},
		},
		{
			name: "fs destination is a hostPath on the node",
			u: upload(func(u *Upload) {
				u.Backup.Spec.Destination.URL = "fs:///backups/vm/"
				u.Destination = "fs:///backups/vm/vmc/nightly/vmstorage-vmc-0"
			}),
			check: func(g Gomega, spec corev1.PodSpec) {
				g.Expect(spec.Volumes).To(ContainElement(corev1.Volume{Name: "backup-destination", VolumeSource: corev1.VolumeSource{
					HostPath: &corev1.HostPathVolumeSource{Path: "/backups/vm", Type: ptr.To(corev1.HostPathDirectoryOrCreate)},
				}}))
				g.Expect(spec.Containers[0].VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "backup-destination", MountPath: "/backups/vm"}))
			},
		},
		{
			name: "data path below the mount, with a subPath and a space-separated flag",
			u: upload(func(u *Upload) {
				c := &u.Pod.Spec.Containers[1]
				c.Args = []string{"--storageDataPath", "/data/vm/storage"}
				c.VolumeMounts = []corev1.VolumeMount{{Name: "vmstorage-db", MountPath: "/data", SubPath: "vm"}, {Name: "config", MountPath: "/data/config"}}
			}),
			check: func(g Gomega, spec corev1.PodSpec) {
				c := spec.Containers[0]
				g.Expect(c.Args).To(ContainElement("-storageDataPath=/data/vm/storage"))
				g.Expect(c.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "vmstorage-data", MountPath: "/data", SubPath: "vm", ReadOnly: true}))
			},
		},
		{
			name: "the VictoriaMetrics operator's relative default: the working directory's (/)",
			u: upload(func(u *Upload) {
				c := &u.Pod.Spec.Containers[1]
				c.Args = []string{"-storageDataPath=vmstorage-data"}
				c.VolumeMounts = []corev1.VolumeMount{{Name: "vmstorage-db", MountPath: "vmstorage-data"}, {Name: "config", MountPath: "/etc/vm"}}
			}),
			check: func(g Gomega, spec corev1.PodSpec) {
				c := spec.Containers[0]
				g.Expect(c.Args).To(ContainElement("-storageDataPath=/vmstorage-data"))
				g.Expect(c.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "vmstorage-data", MountPath: "/vmstorage-data", ReadOnly: true}))
			},
		},
		{
			name: "a relative path with a working directory",
			u: upload(func(u *Upload) {
				c := &u.Pod.Spec.Containers[1]
				c.WorkingDir = "/var/lib"
				c.Args = []string{"-storageDataPath=vm/data"}
				c.VolumeMounts = []corev1.VolumeMount{{Name: "vmstorage-db", MountPath: "/var/lib/vm"}}
			}),
			check: func(g Gomega, spec corev1.PodSpec) {
				c := spec.Containers[0]
				g.Expect(c.Args).To(ContainElement("-storageDataPath=/var/lib/vm/data"))
				g.Expect(c.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "vmstorage-data", MountPath: "/var/lib/vm", ReadOnly: true}))
			},
		},
		{
			name: "generic ephemeral volume is its claim",
			u: upload(func(u *Upload) {
				u.Pod.Spec.Volumes[1].VolumeSource = corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}
			}),
			check: func(g Gomega, spec corev1.PodSpec) {
				g.Expect(spec.Volumes[0].PersistentVolumeClaim.ClaimName).To(Equal("vmstorage-vmc-0-vmstorage-db"))
			},
		},
		{
			name: "hostPath data is the same hostPath",
			u: upload(func(u *Upload) {
				u.Pod.Spec.Volumes[1].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/mnt/vm"}}
			}),
			check: func(g Gomega, spec corev1.PodSpec) {
				g.Expect(spec.Volumes[0].HostPath.Path).To(Equal("/mnt/vm"))
			},
		},
		{
			name:  "a VMCluster in another namespace: no owner reference",
			u:     upload(func(u *Upload) { u.Namespace = "vm" }),
			check: func(g Gomega, spec corev1.PodSpec) {},
		},
		{
			name: "emptyDir cannot be mounted",
			u: upload(func(u *Upload) {
				u.Pod.Spec.Volumes[1].VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
			}),
			err: "is an emptyDir",
		},
		{
			name: "no storageDataPath",
			u:    upload(func(u *Upload) { u.Pod.Spec.Containers[1].Args = nil }),
			err:  "has no -storageDataPath",
		},
		{
			name: "nothing mounted at the data path",
			u:    upload(func(u *Upload) { u.Pod.Spec.Containers[1].VolumeMounts = u.Pod.Spec.Containers[1].VolumeMounts[:1] }),
			err:  "no volume of pod vmstorage-vmc-0 is mounted at -storageDataPath=/vmstorage-data",
		},
		{
			name: "unscheduled pod",
			u:    upload(func(u *Upload) { u.Pod.Spec.NodeName = "" }),
			err:  "not scheduled",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			job, err := BuildJob(tc.u, DefaultJobOptions())
			if tc.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			tc.check(g, job.Spec.Template.Spec)
			if tc.u.Namespace != tc.u.Backup.Namespace {
				g.Expect(job.OwnerReferences).To(BeEmpty())
			}
		})
	}
}

func TestJobName(t *testing.T) {
	g := NewWithT(t)
	b := mkBackup(nil)
	n := jobName(b, "vmstorage-vmc-0")
	g.Expect(n).To(MatchRegexp(`^nightly-vmstorage-vmc-0-[0-9a-f]{8}$`))
	g.Expect(jobName(b, "vmstorage-vmc-0")).To(Equal(n), "deterministic")
	g.Expect(jobName(b, "vmstorage-vmc-1")).NotTo(Equal(n))
	other := mkBackup(func(b *opsv1.ClusterBackup) { b.UID = "uid-2" })
	g.Expect(jobName(other, "vmstorage-vmc-0")).NotTo(Equal(n), "a recreated backup of the same name gets new Jobs")

	long := mkBackup(func(b *opsv1.ClusterBackup) { b.Name = "a.very.long.backup." + strings.Repeat("x", 200) })
	ln := jobName(long, "vmstorage-vmc-0")
	g.Expect(len(ln)).To(BeNumerically("<=", 63))
	g.Expect(ln).To(MatchRegexp(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`))
}

func TestFlagValue(t *testing.T) {
	g := NewWithT(t)
	g.Expect(flagValue([]string{"-a=1", "-storageDataPath=/x"}, "storageDataPath")).To(Equal("/x"))
	g.Expect(flagValue([]string{"--storageDataPath=/y"}, "storageDataPath")).To(Equal("/y"))
	g.Expect(flagValue([]string{"-storageDataPath", "/z"}, "storageDataPath")).To(Equal("/z"))
	g.Expect(flagValue([]string{"-storageDataPathX=/z"}, "storageDataPath")).To(BeEmpty())
	g.Expect(flagValue([]string{"-storageDataPath"}, "storageDataPath")).To(BeEmpty())
}

func TestPodIPResolver(t *testing.T) {
	g := NewWithT(t)
	p := vmstoragePod(func(p *corev1.Pod) { p.Status.PodIP = "10.0.0.12" })
	ep, err := PodIPResolver(context.Background(), p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ep).To(Equal("http://10.0.0.12:8482"))
	p.Spec.Containers[1].Ports[0].ContainerPort = 9482
	p.Status.PodIP = "fd00::1"
	ep, _ = PodIPResolver(context.Background(), p)
	g.Expect(ep).To(Equal("http://[fd00::1]:9482"))
	_, err = PodIPResolver(context.Background(), vmstoragePod(nil))
	g.Expect(err).To(MatchError(ContainSubstring("has no IP")))
}
