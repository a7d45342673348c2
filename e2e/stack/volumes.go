package stack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// The local stack's storage: kwok Nodes have no disks and no CSI driver,
// so the stack ships a default StorageClass whose volumes are directories in
// its state directory, provisioned by a small controller in the stack's own
// process (see volumeProvisioner). A PersistentVolumeClaim that names no
// class gets one; the backer runs each vmstorage process on the
// directory of its Pod's claim, so data outlives the Pod as it would on a
// real PersistentVolume.
const (
	// StorageClassName is the stack's default StorageClass.
	StorageClassName = "local-hostpath"
	// VolumeProvisioner is its provisioner name. It must not start with
	// "kubernetes.io/": kube-controller-manager then leaves provisioning and
	// deletion to us.
	VolumeProvisioner = "local.ops.observability.tidbcloud.com/hostpath"
	// volumeFinalizer keeps a PersistentVolume until its directory is gone,
	// also when someone deletes the PV object itself.
	volumeFinalizer = "local.ops.observability.tidbcloud.com/hostpath-volume"
	// annProvisionedBy is the annotation kube-controller-manager reads to
	// tell an externally provisioned volume from an in-tree one.
	annProvisionedBy = "pv.kubernetes.io/provisioned-by"
	annDefaultClass  = "storageclass.kubernetes.io/is-default-class"
	// emptyDirRoot, inside VMStorageRoot, holds the data of vmstorage Pods
	// without a claim (<ns>/<pod>). No namespace can be called that.
	emptyDirRoot = "_emptydir"
)

// VMStorageRoot is where every vmstorage process keeps its data: the
// provisioner's volumes, VolumeDir(namespace, claim), and for vmstorage Pods
// without a claim (emptyDir) _emptydir/<namespace>/<pod>. ops-operator's
// local backup runner may read only inside it.
func (s *Stack) VMStorageRoot() string { return filepath.Join(s.stateDir, "volumes") }

// VolumeDir is the directory of the volume provisioned for a claim.
func (s *Stack) VolumeDir(namespace, claim string) string {
	return filepath.Join(s.VMStorageRoot(), namespace, claim)
}

// localStorageClass is the stack's default StorageClass. Volumes are bound
// as soon as their claim exists (Immediate) and carry no node affinity: on
// one machine every directory is reachable from every kwok Node, so a Pod
// keeps its volume when it moves to another Node, as with a network disk,
// and the blue-green upgrades, which replace the vmstorage Nodes, work.
func localStorageClass() *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: StorageClassName, Annotations: map[string]string{annDefaultClass: "true"}},
		Provisioner:          VolumeProvisioner,
		ReclaimPolicy:        ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode:    ptr.To(storagev1.VolumeBindingImmediate),
		AllowVolumeExpansion: ptr.To(false),
	}
}

// volumeProvisioner provisions and deletes the volumes of StorageClassName,
// level-triggered like the backer: on every claim or volume event
// and every few seconds it compares the two listers with the directories.
//
//   - A claim of the class without a volume gets a hostPath PersistentVolume
//     pvc-<claim UID>, pre-bound to it (claimRef with the UID; the
//     PersistentVolume controller of kube-controller-manager completes the
//     binding), with the requested capacity and access modes, and a fresh
//     directory VolumeDir(namespace, claim). While an older volume of the
//     same directory is still being deleted, the claim waits.
//   - A volume of ours that is Released with reclaim policy Delete, or
//     being deleted and no longer Bound, loses its directory, then its
//     object (our finalizer goes last).
type volumeProvisioner struct {
	cs   kubernetes.Interface
	root string
	logf func(format string, args ...any)
	// reported is the last problem logged per object, so that a claim the
	// provisioner cannot serve is logged once, not on every pass.
	reported map[string]string

	cancel context.CancelFunc
	done   chan struct{}
}

// report logs a problem with an object unless it was the last one logged
// for it; a nil err forgets it.
func (p *volumeProvisioner) report(object string, err error) {
	if p.reported == nil {
		p.reported = map[string]string{}
	}
	if err == nil {
		delete(p.reported, object)
		return
	}
	if p.reported[object] == err.Error() {
		return
	}
	p.reported[object] = err.Error()
	p.logf("volume provisioner: %s: %v", object, err)
}

// startVolumeProvisioner creates the StorageClass (kept from an earlier run)
// and starts the provisioner.
func (s *Stack) startVolumeProvisioner(ctx context.Context) error {
	if s.volumes != nil {
		return nil
	}
	cs, err := kubernetes.NewForConfig(s.Env.Config)
	if err != nil {
		return err
	}
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, localStorageClass(), metav1.CreateOptions{FieldManager: "ops-dev"}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating StorageClass %s: %w", StorageClassName, err)
	}
	if err := os.MkdirAll(s.VMStorageRoot(), 0o755); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	p := &volumeProvisioner{cs: cs, root: s.VMStorageRoot(), logf: s.step, cancel: cancel, done: make(chan struct{})}
	factory := informers.NewSharedInformerFactory(cs, 0)
	claims := factory.Core().V1().PersistentVolumeClaims()
	volumes := factory.Core().V1().PersistentVolumes()
	kick := make(chan struct{}, 1)
	notify := func(any) {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: notify, DeleteFunc: notify, UpdateFunc: func(_, o any) { notify(o) }}
	for _, inf := range []cache.SharedIndexInformer{claims.Informer(), volumes.Informer()} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			cancel()
			return err
		}
	}
	factory.Start(runCtx.Done())
	go func() {
		defer close(p.done)
		defer factory.Shutdown()
		if !cache.WaitForCacheSync(runCtx.Done(), claims.Informer().HasSynced, volumes.Informer().HasSynced) {
			return
		}
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			p.sync(runCtx, claims.Lister(), volumes.Lister())
			select {
			case <-runCtx.Done():
				return
			case <-kick:
			case <-tick.C:
			}
		}
	}()
	s.volumes = p
	return nil
}

// stop stops the provisioner; volumes and directories stay.
func (p *volumeProvisioner) stop() {
	p.cancel()
	<-p.done
}

// sync deletes what is released, then provisions what is claimed.
func (p *volumeProvisioner) sync(ctx context.Context, claims listersv1.PersistentVolumeClaimLister, volumes listersv1.PersistentVolumeLister) {
	pvs, err := volumes.List(labels.Everything())
	if err != nil {
		p.logf("volume provisioner: listing PersistentVolumes: %v", err)
		return
	}
	// How many of our volumes name each directory, and the volumes by name.
	inUse := map[string]int{}
	byName := map[string]bool{}
	for _, pv := range pvs {
		byName[pv.Name] = true
		if p.owns(pv) {
			inUse[pv.Spec.HostPath.Path]++
		}
	}
	for _, pv := range pvs {
		if ctx.Err() != nil {
			return
		}
		if p.owns(pv) {
			p.report("PersistentVolume "+pv.Name, p.reclaim(ctx, pv, inUse[pv.Spec.HostPath.Path] > 1))
		}
	}
	pvcs, err := claims.List(labels.Everything())
	if err != nil {
		p.logf("volume provisioner: listing PersistentVolumeClaims: %v", err)
		return
	}
	for _, pvc := range pvcs {
		if ctx.Err() != nil {
			return
		}
		if ptr.Deref(pvc.Spec.StorageClassName, "") != StorageClassName || pvc.Spec.VolumeName != "" ||
			pvc.DeletionTimestamp != nil || byName[volumeName(pvc)] {
			continue
		}
		if inUse[p.dir(pvc)] > 0 {
			continue // an older volume of that name is being deleted
		}
		p.report("PersistentVolumeClaim "+pvc.Namespace+"/"+pvc.Name, p.provision(ctx, pvc))
	}
}

// owns reports whether pv is one of our volumes, with its directory inside
// the root (anything else is left alone: never remove a path we did not
// create).
func (p *volumeProvisioner) owns(pv *corev1.PersistentVolume) bool {
	return pv.Annotations[annProvisionedBy] == VolumeProvisioner && pv.Spec.HostPath != nil &&
		insideDir(p.root, pv.Spec.HostPath.Path)
}

func (p *volumeProvisioner) dir(pvc *corev1.PersistentVolumeClaim) string {
	return filepath.Join(p.root, pvc.Namespace, pvc.Name)
}

// volumeName is the PersistentVolume provisioned for a claim, named after
// its UID as the external provisioners do: a claim re-created under the same
// name gets a new volume.
func volumeName(pvc *corev1.PersistentVolumeClaim) string { return "pvc-" + string(pvc.UID) }

// provision creates the directory and the volume pre-bound to the claim.
func (p *volumeProvisioner) provision(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	if pvc.Spec.Selector != nil {
		return fmt.Errorf("claims with a selector are not supported by %s", VolumeProvisioner)
	}
	if ptr.Deref(pvc.Spec.VolumeMode, corev1.PersistentVolumeFilesystem) != corev1.PersistentVolumeFilesystem {
		return fmt.Errorf("volumeMode %s is not supported by %s (directories only)", *pvc.Spec.VolumeMode, VolumeProvisioner)
	}
	size, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return fmt.Errorf("no storage request")
	}
	// The lister may not show a volume we created a moment ago: ask.
	if _, err := p.cs.CoreV1().PersistentVolumes().Get(ctx, volumeName(pvc), metav1.GetOptions{}); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	dir := p.dir(pvc)
	// A new volume is empty: a directory no volume names is a leftover of
	// an interrupted provisioning.
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        volumeName(pvc),
			Annotations: map[string]string{annProvisionedBy: VolumeProvisioner},
			Finalizers:  []string{volumeFinalizer},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   pvc.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              StorageClassName,
			VolumeMode:                    ptr.To(corev1.PersistentVolumeFilesystem),
			ClaimRef: &corev1.ObjectReference{
				APIVersion: "v1", Kind: "PersistentVolumeClaim",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: ptr.To(corev1.HostPathDirectory)},
			},
		},
	}
	if _, err := p.cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{FieldManager: "ops-dev"}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("creating PersistentVolume %s: %w", pv.Name, err)
	}
	p.logf("Volume %s (%s) for PersistentVolumeClaim %s/%s in %s", pv.Name, size.String(), pvc.Namespace, pvc.Name, dir)
	return nil
}

// reclaim removes the directory of a volume that is released (reclaim
// policy Delete) or being deleted, then the volume. shared: another volume
// of ours names the same directory (a claim deleted and re-created faster
// than this controller saw it): the directory is the newer volume's now
// and stays.
func (p *volumeProvisioner) reclaim(ctx context.Context, pv *corev1.PersistentVolume, shared bool) error {
	released := pv.Status.Phase == corev1.VolumeReleased && pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete
	deleting := pv.DeletionTimestamp != nil && pv.Status.Phase != corev1.VolumeBound
	if !released && !deleting {
		return nil
	}
	dir := pv.Spec.HostPath.Path
	if !shared {
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		// The namespace's directory goes with its last volume (Remove
		// fails on a directory that is not empty).
		_ = os.Remove(filepath.Dir(dir))
	}
	if pv.DeletionTimestamp == nil {
		err := p.cs.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pv.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting: %w", err)
		}
		if shared {
			p.logf("Volume %s released and deleted; %s belongs to a newer volume", pv.Name, dir)
		} else {
			p.logf("Volume %s released and deleted with %s", pv.Name, dir)
		}
		return nil
	}
	if !slices.Contains(pv.Finalizers, volumeFinalizer) {
		return nil
	}
	pv = pv.DeepCopy()
	pv.Finalizers = slices.DeleteFunc(pv.Finalizers, func(f string) bool { return f == volumeFinalizer })
	// Update carries the resourceVersion: on a conflict the next sync tries
	// again with the newer object.
	if _, err := p.cs.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{FieldManager: "ops-dev"}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing finalizer %s: %w", volumeFinalizer, err)
	}
	return nil
}

// insideDir reports whether path is a clean absolute path strictly inside
// root.
func insideDir(root, path string) bool {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return false
	}
	rel, err := filepath.Rel(filepath.Clean(root), path)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
