package stack

import (
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestStorageDataVolume(t *testing.T) {
	claim := corev1.Volume{Name: "vmstorage-db", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "vmstorage-db-vmstorage-a-0"}}}
	empty := corev1.Volume{Name: "vmstorage-db", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	ephemeral := corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}}
	config := corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}
	pod := func(args []string, mounts []corev1.VolumeMount, vols ...corev1.Volume) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "observability", Name: "vmstorage-a-0"},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{
					{Name: "sidecar", VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/vmstorage-data"}}},
					{Name: "vmstorage", Args: args, VolumeMounts: mounts},
				},
				Volumes: vols,
			},
		}
	}
	for _, tc := range []struct {
		name      string
		pod       *corev1.Pod
		wantVol   string
		wantSub   string
		wantClaim string
	}{
		{
			name:      "the VictoriaMetrics operator's layout with a volumeClaimTemplate",
			pod:       pod([]string{"-retentionPeriod=1", "-storageDataPath=/vmstorage-data"}, []corev1.VolumeMount{{Name: "config", MountPath: "/etc/vm"}, {Name: "vmstorage-db", MountPath: "/vmstorage-data"}}, config, claim),
			wantVol:   "vmstorage-db",
			wantClaim: "vmstorage-db-vmstorage-a-0",
		},
		{
			name:    "emptyDir: a volume without a claim",
			pod:     pod([]string{"--storageDataPath=/vmstorage-data"}, []corev1.VolumeMount{{Name: "vmstorage-db", MountPath: "/vmstorage-data/"}}, empty),
			wantVol: "vmstorage-db",
		},
		{
			name:      "data below the mount point, and a subPath",
			pod:       pod([]string{"-storageDataPath=/data/vm/db"}, []corev1.VolumeMount{{Name: "vmstorage-db", MountPath: "/data", SubPath: "s"}}, claim),
			wantVol:   "vmstorage-db",
			wantSub:   filepath.Join("s", "vm", "db"),
			wantClaim: "vmstorage-db-vmstorage-a-0",
		},
		{
			name:      "the deepest mount holding the path wins",
			pod:       pod([]string{"-storageDataPath=/data/db"}, []corev1.VolumeMount{{Name: "config", MountPath: "/data"}, {Name: "vmstorage-db", MountPath: "/data/db"}, {Name: "scratch", MountPath: "/data/dbx"}}, config, claim, ephemeral),
			wantVol:   "vmstorage-db",
			wantClaim: "vmstorage-db-vmstorage-a-0",
		},
		{
			name:      "generic ephemeral volume: the claim Kubernetes creates for it",
			pod:       pod([]string{"-storageDataPath=/scratch"}, []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}, ephemeral),
			wantVol:   "scratch",
			wantClaim: "vmstorage-a-0-scratch",
		},
		{
			name: "no -storageDataPath: the operator's default path",
			pod:  pod(nil, []corev1.VolumeMount{{Name: "vmstorage-db", MountPath: "/vmstorage-data"}}, claim), wantVol: "vmstorage-db",
			wantClaim: "vmstorage-db-vmstorage-a-0",
		},
		{
			name: "a mount that is only a prefix of the name does not hold the path",
			pod:  pod([]string{"-storageDataPath=/vmstorage-data"}, []corev1.VolumeMount{{Name: "vmstorage-db", MountPath: "/vmstorage"}}, claim),
		},
		{
			name: "a mount without its volume",
			pod:  pod([]string{"-storageDataPath=/vmstorage-data"}, []corev1.VolumeMount{{Name: "vmstorage-db", MountPath: "/vmstorage-data"}}),
		},
		{
			name: "no vmstorage container",
			pod:  &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "other", VolumeMounts: []corev1.VolumeMount{{Name: "vmstorage-db", MountPath: "/vmstorage-data"}}}}, Volumes: []corev1.Volume{claim}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			vol, sub := storageDataVolume(tc.pod)
			if tc.wantVol == "" {
				g.Expect(vol).To(BeNil())
			} else {
				g.Expect(vol).NotTo(BeNil())
				g.Expect(vol.Name).To(Equal(tc.wantVol))
			}
			g.Expect(sub).To(Equal(tc.wantSub))
			g.Expect(claimName(tc.pod, vol)).To(Equal(tc.wantClaim))
		})
	}
}

func TestInsideDir(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"/state/volumes/ns/claim", true},
		{"/state/volumes/_emptydir/ns/pod", true},
		{"/state/volumes", false},
		{"/state/volumes/", false},
		{"/state/volumes/..", false},
		{"/state/volumes/ns/../../etcd", false},
		{"/state/volumesx/ns", false},
		{"/state", false},
		{"state/volumes/ns", false},
		{"", false},
	} {
		t.Run(tc.path, func(t *testing.T) {
			NewWithT(t).Expect(insideDir("/state/volumes", tc.path)).To(Equal(tc.want))
		})
	}
}

func FuzzInsideDir(f *testing.F) {
	for _, s := range []string{"/r/a", "/r", "/r/../x", "/rr/a", "a", "/r/a/../../b", "/r//a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		if !insideDir("/r", path) {
			return
		}
		// Whatever it accepts is a clean path below /r and never /r itself.
		if !strings.HasPrefix(path, "/r/") || filepath.Clean(path) != path || path == "/r" {
			t.Fatalf("insideDir(/r, %q) = true", path)
		}
	})
}
