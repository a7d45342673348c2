package stack

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A StatefulSet with a volumeClaimTemplate that names no StorageClass, on
// the real kube-controller-manager (StatefulSet, PersistentVolume binder,
// PVC/PV protection), kube-scheduler and kwok: its claims get the default
// class and volumes in the state directory, a re-created Pod keeps its
// volume, a deleted claim loses volume and directory, and a claim
// re-created under the same name starts empty.
func TestStatefulSetVolumes(t *testing.T) {
	s := controlPlane(t)
	g := NewWithT(t)
	ctx := context.Background()
	c := s.Env.Client
	ns := s.Env.NewNamespace(t)

	sc := &storagev1.StorageClass{}
	g.Expect(c.Get(ctx, client.ObjectKey{Name: StorageClassName}, sc)).To(Succeed())
	g.Expect(sc.Annotations).To(HaveKeyWithValue("storageclass.kubernetes.io/is-default-class", "true"))
	g.Expect(sc.Provisioner).To(Equal(VolumeProvisioner))
	g.Expect(sc.ReclaimPolicy).To(HaveValue(Equal(corev1.PersistentVolumeReclaimDelete)))
	g.Expect(sc.VolumeBindingMode).To(HaveValue(Equal(storagev1.VolumeBindingImmediate)))

	labels := map[string]string{"app": "data"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To[int32](2),
			ServiceName:         "data",
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"node-role.observability/vmstorage": "true"},
					Containers: []corev1.Container{{
						Name: "c", Image: "local/placeholder:1",
						VolumeMounts: []corev1.VolumeMount{{Name: "db", MountPath: "/db"}},
					}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "db"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("3Gi")}},
				},
			}},
		},
	}
	g.Expect(c.Create(ctx, sts)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(sts), sts)).To(Succeed())
		g.Expect(sts.Status.ReadyReplicas).To(BeEquivalentTo(2))
	}, 3*time.Minute, time.Second).Should(Succeed(), "the StatefulSet's Pods become Ready on their bound claims")

	// volumeOf checks a claim and its volume, and returns the volume's name.
	volumeOf := func(g Gomega, claim string) string {
		pvc := &corev1.PersistentVolumeClaim{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim}, pvc)).To(Succeed())
		g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound))
		g.Expect(pvc.Spec.StorageClassName).To(HaveValue(Equal(StorageClassName)), "the default class")
		g.Expect(pvc.Spec.VolumeName).To(Equal("pvc-" + string(pvc.UID)))
		pv := &corev1.PersistentVolume{}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv)).To(Succeed())
		g.Expect(pv.Status.Phase).To(Equal(corev1.VolumeBound))
		g.Expect(pv.Spec.ClaimRef).NotTo(BeNil())
		g.Expect(pv.Spec.ClaimRef.UID).To(Equal(pvc.UID))
		g.Expect(pv.Spec.StorageClassName).To(Equal(StorageClassName))
		g.Expect(pv.Spec.PersistentVolumeReclaimPolicy).To(Equal(corev1.PersistentVolumeReclaimDelete))
		g.Expect(pv.Spec.Capacity.Storage().String()).To(Equal("3Gi"))
		g.Expect(pv.Spec.HostPath).NotTo(BeNil())
		g.Expect(pv.Spec.HostPath.Path).To(Equal(s.VolumeDir(ns, claim)))
		g.Expect(pv.Spec.HostPath.Path).To(BeADirectory())
		return pv.Name
	}
	vol0 := volumeOf(g, "db-data-0")
	vol1 := volumeOf(g, "db-data-1")
	g.Expect(filepath.Join(s.stateDir, "volumes", ns, "db-data-0")).To(BeADirectory(), "in the state directory")
	marker0 := filepath.Join(s.VolumeDir(ns, "db-data-0"), "marker")
	marker1 := filepath.Join(s.VolumeDir(ns, "db-data-1"), "marker")
	g.Expect(os.WriteFile(marker0, []byte("0"), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(marker1, []byte("1"), 0o644)).To(Succeed())

	// A re-created Pod gets the same claim, volume and directory.
	pod := &corev1.Pod{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-0"}, pod)).To(Succeed())
	oldUID := pod.UID
	g.Expect(c.Delete(ctx, pod)).To(Succeed())
	g.Eventually(func(g Gomega) {
		p := &corev1.Pod{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-0"}, p)).To(Succeed())
		g.Expect(p.UID).NotTo(Equal(oldUID))
		g.Expect(p.Spec.NodeName).NotTo(BeEmpty())
		g.Expect(p.Status.Conditions).To(ContainElement(And(
			HaveField("Type", corev1.PodReady), HaveField("Status", corev1.ConditionTrue))))
	}, 3*time.Minute, time.Second).Should(Succeed(), "the Pod is re-created and Ready")
	g.Expect(volumeOf(g, "db-data-0")).To(Equal(vol0))
	g.Expect(os.ReadFile(marker0)).To(Equal([]byte("0")), "the data is still there")

	// Scaled down, the second claim stays (the StatefulSet retains claims);
	// deleted, it takes its volume and directory along.
	g.Expect(c.Patch(ctx, sts, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":1}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-1"}, &corev1.Pod{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Pod data-1 is gone: %v", err)
	}, 3*time.Minute, time.Second).Should(Succeed())
	g.Expect(marker1).To(BeAnExistingFile())
	g.Expect(c.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-data-1"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := c.Get(ctx, client.ObjectKey{Name: vol1}, &corev1.PersistentVolume{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "PersistentVolume %s is deleted: %v", vol1, err)
	}, 2*time.Minute, time.Second).Should(Succeed())
	g.Expect(s.VolumeDir(ns, "db-data-1")).NotTo(BeAnExistingFile(), "its directory is removed")
	g.Expect(marker0).To(BeAnExistingFile(), "the other volume is untouched")

	// Scaled up again, a new claim of the same name gets a new, empty volume
	// in the same place.
	g.Expect(c.Patch(ctx, sts, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":2}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(sts), sts)).To(Succeed())
		g.Expect(sts.Status.ReadyReplicas).To(BeEquivalentTo(2))
		g.Expect(volumeOf(g, "db-data-1")).NotTo(Equal(vol1))
	}, 3*time.Minute, time.Second).Should(Succeed())
	entries, err := os.ReadDir(s.VolumeDir(ns, "db-data-1"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(BeEmpty(), "a new volume starts empty")
}

// Deleting a PersistentVolume object itself (while no claim uses it) also
// removes its directory; a claim with storageClassName "" (no class, not
// the default one) is left to static binding, as on any cluster.
func TestVolumeDeletedDirectly(t *testing.T) {
	s := controlPlane(t)
	g := NewWithT(t)
	ctx := context.Background()
	c := s.Env.Client
	ns := s.Env.NewNamespace(t)

	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "direct"},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(StorageClassName),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	noClass := pvc.DeepCopy()
	noClass.Name = "no-class"
	noClass.Spec.StorageClassName = ptr.To("")
	g.Expect(c.Create(ctx, noClass)).To(Succeed())
	g.Expect(c.Create(ctx, pvc)).To(Succeed())

	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(pvc), pvc)).To(Succeed())
		g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound))
	}, 2*time.Minute, time.Second).Should(Succeed())
	dir := s.VolumeDir(ns, "direct")
	g.Expect(dir).To(BeADirectory())
	// The claim with class "" is not ours: it was created first, so the
	// provisioner saw it before it provisioned the other one, and left it
	// alone.
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(noClass), noClass)).To(Succeed())
	g.Expect(noClass.Spec.VolumeName).To(BeEmpty())
	g.Expect(noClass.Status.Phase).To(Equal(corev1.ClaimPending))
	g.Expect(s.VolumeDir(ns, "no-class")).NotTo(BeAnExistingFile())

	// Deleting the volume while bound waits (PV protection and our
	// finalizer); once the claim is gone it completes and the directory
	// goes.
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvc.Spec.VolumeName}}
	g.Expect(c.Delete(ctx, pv)).To(Succeed())
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(pv), pv)).To(Succeed())
	g.Expect(pv.Finalizers).To(ContainElement(volumeFinalizer))
	g.Expect(dir).To(BeADirectory(), "kept while the volume is bound")
	g.Expect(c.Delete(ctx, pvc)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := c.Get(ctx, client.ObjectKeyFromObject(pv), pv)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "PersistentVolume %s is deleted: %v", pv.Name, err)
	}, 2*time.Minute, time.Second).Should(Succeed())
	g.Expect(dir).NotTo(BeAnExistingFile())
}

// A VMCluster with storage.volumeClaimTemplate, through the real
// VictoriaMetrics operator: the backer runs the Pod's vmstorage
// process on the directory of the Pod's volume, and again on the same
// directory when the Pod is re-created.
func TestVMClusterStorageOnVolume(t *testing.T) {
	s := vmWorkloads(t)
	g := NewWithT(t)
	ctx := context.Background()
	c := s.Env.Client
	ns := s.Env.NewNamespace(t)

	createVMCluster(g, c, ns, "vol", map[string]any{
		"nodeSelector": onVMStorageNodes,
		"storage": map[string]any{"volumeClaimTemplate": map[string]any{"spec": map[string]any{
			"resources": map[string]any{"requests": map[string]any{"storage": "2Gi"}},
		}}},
	}, nil)

	// podData waits for the vmstorage Pod's process and returns the Pod and
	// the directory of its claim's volume.
	podData := func(notUID types.UID) (*corev1.Pod, string) {
		var pod *corev1.Pod
		var dir string
		g.Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/name": "vmstorage"})).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(1))
			p := pods.Items[0]
			g.Expect(p.UID).NotTo(Equal(notUID))
			vol, sub := storageDataVolume(&p)
			g.Expect(vol).NotTo(BeNil())
			g.Expect(vol.PersistentVolumeClaim).NotTo(BeNil(), "the data volume is a claim")
			g.Expect(sub).To(BeEmpty())
			claim := vol.PersistentVolumeClaim.ClaimName
			pvc := &corev1.PersistentVolumeClaim{}
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim}, pvc)).To(Succeed())
			g.Expect(pvc.Spec.StorageClassName).To(HaveValue(Equal(StorageClassName)))
			g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound))
			dir = s.VolumeDir(ns, claim)
			g.Expect(p.Annotations).To(HaveKeyWithValue(VMStorageDataPathAnnotation, dir))
			ep := p.Annotations[VMStorageEndpointAnnotation]
			g.Expect(ep).To(HavePrefix("http://127.0.0.1:"))
			resp, err := http.Get(ep + "/health")
			g.Expect(err).NotTo(HaveOccurred())
			_ = resp.Body.Close()
			g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
			pod = &p
		}, 4*time.Minute, time.Second).Should(Succeed())
		return pod, dir
	}
	pod, dir := podData("")
	// vmstorage lays out its storage in the volume's directory.
	g.Eventually(filepath.Join(dir, "indexdb"), time.Minute, time.Second).Should(BeADirectory())
	g.Expect(filepath.Join(dir, "data")).To(BeADirectory())
	g.Expect(os.WriteFile(filepath.Join(dir, "marker"), []byte("kept"), 0o644)).To(Succeed())

	g.Expect(c.Delete(ctx, pod)).To(Succeed())
	_, again := podData(pod.UID)
	g.Expect(again).To(Equal(dir), "the re-created Pod's vmstorage runs on the same volume")
	g.Expect(os.ReadFile(filepath.Join(dir, "marker"))).To(Equal([]byte("kept")))
	g.Expect(filepath.Join(dir, "indexdb")).To(BeADirectory())
}
