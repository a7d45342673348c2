package stack

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/apis/v1alpha1"
	"sigs.k8s.io/kwok/pkg/utils/lifecycle"
	"sigs.k8s.io/yaml"
)

// The pod-complete stage, evaluated by kwok's own matcher, leaves
// vmrestore Job Pods alone (the backer reports their outcome) and still
// completes every other running Job Pod.
func TestPodCompleteStage(t *testing.T) {
	g := NewWithT(t)
	stage := &v1alpha1.Stage{}
	g.Expect(yaml.UnmarshalStrict([]byte(podCompleteStage()), stage)).To(Succeed())
	internal, err := internalversion.ConvertToInternalStage(stage)
	g.Expect(err).NotTo(HaveOccurred())
	lc, err := lifecycle.NewLifecycle([]*internalversion.Stage{internal})
	g.Expect(err).NotTo(HaveOccurred())
	matches := func(name string) bool {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{},
				OwnerReferences: []metav1.OwnerReference{{Kind: "Job", Name: "j"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		}
		if name != "" {
			pod.Labels["app.kubernetes.io/name"] = name
		}
		m, err := lc.Match(context.Background(), &lifecycle.Event{Labels: pod.Labels, Data: pod})
		g.Expect(err).NotTo(HaveOccurred())
		return m != nil
	}
	g.Expect(matches("vmrestore")).To(BeFalse())
	g.Expect(matches("vmbackup")).To(BeTrue())
	g.Expect(matches("")).To(BeTrue())
}

func TestVMRestoreArgs(t *testing.T) {
	g := NewWithT(t)
	g.Expect(vmrestoreArgs([]string{"-src=fs:///b/x/vmstorage-a-0", "-storageDataPath=/vmstorage-data", "-httpListenAddr="}, "/state/volumes/ns/claim")).
		To(Equal([]string{"-src=fs:///b/x/vmstorage-a-0", "-httpListenAddr=", "-storageDataPath=/state/volumes/ns/claim"}))
	g.Expect(vmrestoreArgs([]string{"--src=fs:///b"}, "/d")).To(Equal([]string{"--src=fs:///b", "-storageDataPath=/d"}))
}

func TestHoldConfigMapOf(t *testing.T) {
	g := NewWithT(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "vmstorage-a-0"}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "ops-hold", VolumeMounts: []corev1.VolumeMount{{Name: "ops-hold", MountPath: "/ops-hold"}}}},
		Volumes: []corev1.Volume{{Name: "ops-hold", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "a-vmstorage-hold"}}}}},
	}}
	g.Expect(holdConfigMapOf(pod)).To(Equal("a-vmstorage-hold"))
	pod.Spec.InitContainers[0].Name = "other"
	g.Expect(holdConfigMapOf(pod)).To(Equal(""))
}
