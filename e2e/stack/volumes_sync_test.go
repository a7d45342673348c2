package stack

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// One pass of the provisioner's decisions on given objects (the fake
// clientset records what it does; the real binding and protection
// controllers are in TestStatefulSetVolumes).
func TestVolumeProvisionerSync(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	claim := func(name, uid string, class *string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + uid)},
			Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: class,
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}},
			},
		}
	}
	volume := func(name, path string, phase corev1.PersistentVolumePhase, provisioner string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{annProvisionedBy: provisioner}, Finalizers: []string{volumeFinalizer}},
			Spec: corev1.PersistentVolumeSpec{
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
				ClaimRef:                      &corev1.ObjectReference{Namespace: "ns", Name: name},
				PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}},
			},
			Status: corev1.PersistentVolumeStatus{Phase: phase},
		}
	}
	ours := ptr.To(StorageClassName)
	fresh := claim("fresh", "1", ours)
	noClass := claim("no-class", "2", ptr.To(""))
	other := claim("other", "3", ptr.To("other"))
	bound := claim("bound", "4", ours)
	bound.Spec.VolumeName = "pvc-uid-4"
	waiting := claim("waiting", "5", ours)
	selector := claim("selector", "6", ours)
	selector.Spec.Selector = &metav1.LabelSelector{}
	// Provisioned a moment ago: its volume exists but is not in the lister
	// yet.
	recent := claim("recent", "7", ours)
	recentPV := volume("pvc-uid-7", filepath.Join(root, "ns", "recent"), corev1.VolumeAvailable, VolumeProvisioner)

	released := volume("released", filepath.Join(root, "ns", "released"), corev1.VolumeReleased, VolumeProvisioner)
	// An older volume of the claim "waiting", still being deleted.
	olderWaiting := volume("older-waiting", filepath.Join(root, "ns", "waiting"), corev1.VolumeReleased, VolumeProvisioner)
	olderWaiting.DeletionTimestamp = ptr.To(metav1.Now())
	deletedBound := volume("deleted-bound", filepath.Join(root, "ns", "deleted-bound"), corev1.VolumeBound, VolumeProvisioner)
	deletedBound.DeletionTimestamp = ptr.To(metav1.Now())
	// A claim deleted and re-created faster than the provisioner saw it:
	// the old volume is released while the new one already uses the
	// directory.
	releasedShared := volume("released-shared", filepath.Join(root, "ns", "shared"), corev1.VolumeReleased, VolumeProvisioner)
	boundShared := volume("bound-shared", filepath.Join(root, "ns", "shared"), corev1.VolumeBound, VolumeProvisioner)
	foreign := volume("foreign", filepath.Join(root, "ns", "foreign"), corev1.VolumeReleased, "example.com/other")
	outside := volume("outside", filepath.Join(t.TempDir(), "outside"), corev1.VolumeReleased, VolumeProvisioner)
	for _, d := range []string{
		filepath.Join(root, "ns", "fresh"), // a leftover of an interrupted provisioning
		released.Spec.HostPath.Path, olderWaiting.Spec.HostPath.Path, deletedBound.Spec.HostPath.Path, boundShared.Spec.HostPath.Path,
		foreign.Spec.HostPath.Path, outside.Spec.HostPath.Path, recentPV.Spec.HostPath.Path,
	} {
		g.Expect(os.MkdirAll(d, 0o755)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(d, "data"), []byte("x"), 0o644)).To(Succeed())
	}

	claims := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	volumes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	var objs []runtime.Object
	for _, c := range []*corev1.PersistentVolumeClaim{fresh, noClass, other, bound, waiting, selector, recent} {
		g.Expect(claims.Add(c)).To(Succeed())
		objs = append(objs, c)
	}
	for _, v := range []*corev1.PersistentVolume{released, olderWaiting, deletedBound, releasedShared, boundShared, foreign, outside} {
		g.Expect(volumes.Add(v)).To(Succeed())
		objs = append(objs, v)
	}
	cs := fake.NewClientset(append(objs, recentPV)...)
	p := &volumeProvisioner{cs: cs, root: root, logf: t.Logf}
	ctx := context.Background()
	p.sync(ctx, listersv1.NewPersistentVolumeClaimLister(claims), listersv1.NewPersistentVolumeLister(volumes))

	pvs := cs.CoreV1().PersistentVolumes()
	// The fresh claim: a pre-bound volume on a new, empty directory.
	pv, err := pvs.Get(ctx, "pvc-uid-1", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pv.Annotations).To(HaveKeyWithValue(annProvisionedBy, VolumeProvisioner))
	g.Expect(pv.Finalizers).To(ConsistOf(volumeFinalizer))
	g.Expect(pv.Spec.ClaimRef).NotTo(BeNil())
	g.Expect(*pv.Spec.ClaimRef).To(Equal(corev1.ObjectReference{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: "ns", Name: "fresh", UID: "uid-1"}))
	g.Expect(pv.Spec.StorageClassName).To(Equal(StorageClassName))
	g.Expect(pv.Spec.PersistentVolumeReclaimPolicy).To(Equal(corev1.PersistentVolumeReclaimDelete))
	g.Expect(pv.Spec.AccessModes).To(ConsistOf(corev1.ReadWriteOnce))
	g.Expect(pv.Spec.Capacity.Storage().String()).To(Equal("2Gi"))
	g.Expect(pv.Spec.NodeAffinity).To(BeNil(), "reachable from every Node")
	g.Expect(pv.Spec.HostPath.Path).To(Equal(filepath.Join(root, "ns", "fresh")))
	entries, err := os.ReadDir(pv.Spec.HostPath.Path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(BeEmpty(), "a new volume starts empty")

	// Not ours, already bound, with a selector, or waiting for an older
	// volume of its directory: nothing.
	for _, name := range []string{"pvc-uid-2", "pvc-uid-3", "pvc-uid-4", "pvc-uid-5", "pvc-uid-6"} {
		_, err := pvs.Get(ctx, name, metav1.GetOptions{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s: %v", name, err)
	}
	g.Expect(filepath.Join(root, "ns", "no-class")).NotTo(BeAnExistingFile())
	g.Expect(filepath.Join(recentPV.Spec.HostPath.Path, "data")).To(BeAnExistingFile(), "a volume just provisioned is not provisioned again")

	// Released: directory, then object deleted.
	g.Expect(released.Spec.HostPath.Path).NotTo(BeAnExistingFile())
	_, err = pvs.Get(ctx, "released", metav1.GetOptions{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
	// Being deleted and not bound: directory removed, finalizer dropped.
	g.Expect(olderWaiting.Spec.HostPath.Path).NotTo(BeAnExistingFile())
	pv, err = pvs.Get(ctx, "older-waiting", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pv.Finalizers).NotTo(ContainElement(volumeFinalizer))
	// Being deleted but still bound: kept.
	g.Expect(filepath.Join(deletedBound.Spec.HostPath.Path, "data")).To(BeAnExistingFile())
	pv, err = pvs.Get(ctx, "deleted-bound", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pv.Finalizers).To(ContainElement(volumeFinalizer))
	// Released, but its directory is the newer volume's: object deleted,
	// directory kept.
	_, err = pvs.Get(ctx, "released-shared", metav1.GetOptions{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
	g.Expect(filepath.Join(boundShared.Spec.HostPath.Path, "data")).To(BeAnExistingFile())
	// Another provisioner's volume, or one outside the root: never touched.
	g.Expect(filepath.Join(foreign.Spec.HostPath.Path, "data")).To(BeAnExistingFile())
	g.Expect(filepath.Join(outside.Spec.HostPath.Path, "data")).To(BeAnExistingFile())
	for _, name := range []string{"foreign", "outside"} {
		_, err := pvs.Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred(), name)
	}
}
