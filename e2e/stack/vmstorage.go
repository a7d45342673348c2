package stack

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// The annotations the backer (backer.go) sets on each Pod it backs with a
// local process: the endpoint on every one, the data path on vmstorage's. ops-operator reads them with --backup-runner=local
// (the same names as LocalEndpointAnnotation and
// LocalStorageDataPathAnnotation in operator/internal/controller/backup,
// which this module cannot import; docs/backups.md documents them).
const (
	// VMStorageEndpointAnnotation: http://127.0.0.1:<port>, the process's
	// HTTP API (health, metrics, snapshots; for vminsert and vmselect
	// their APIs).
	VMStorageEndpointAnnotation = "local.ops.observability.tidbcloud.com/http-endpoint"
	// VMStorageDataPathAnnotation: the process's -storageDataPath.
	VMStorageDataPathAnnotation = "local.ops.observability.tidbcloud.com/storage-data-path"
	// StoppedAnnotation: "true" while the process of a held Pod (hold)
	// is stopped; removed when it runs again. For tests to see that a
	// restore stopped the Pod; ops-operator reads the ops-hold init
	// container's status instead.
	StoppedAnnotation = "local.ops.observability.tidbcloud.com/stopped"
)

// hold stops the process of a vmstorage Pod that ops-operator holds and
// keeps it stopped; it reports whether the Pod is held. A Pod is held, as
// the vmcluster chart's ops-hold init container would hold it, while the
// hold ConfigMap its ops-hold container mounts has a key named after the
// Pod (restore.ConfigMapStopper; holdKey). A release (the key removed) lets
// run start the process again, on whatever vmrestore wrote into its data
// directory. A Pod whose ConfigMap cannot be read is held this round.
//
// Like the init container it stands for, the hold is decided only before
// the Pod's vmstorage first starts: once it ran, the ConfigMap is not read
// again for this Pod (a key added later holds its replacement, which
// ConfigMapStopper creates by deleting the Pod), so neither a new key nor a
// failed read ever stops a running vmstorage.
func (b *podBacker) hold(k types.NamespacedName, p *corev1.Pod, bp *backedPod) bool {
	b.mu.Lock()
	started := (bp.proc != nil || !bp.startedAt.IsZero()) && !bp.held
	b.mu.Unlock()
	if started {
		return false
	}
	holder := ""
	if bp.comp.name == "vmstorage" {
		var err error
		if holder, err = b.holdKey(p); err != nil {
			b.logf("backer: Pod %s: %v", k, err)
			holder = "(unknown: the hold ConfigMap cannot be read)"
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.reportHold(ctx, p, holder != ""); err != nil {
		b.logf("backer: reporting the hold of Pod %s: %v", k, err)
	}
	if holder == "" {
		b.mu.Lock()
		wasHeld := bp.held
		bp.held = false
		b.mu.Unlock()
		if wasHeld {
			b.logf("vmstorage for Pod %s released", k)
		}
		return false
	}
	b.mu.Lock()
	proc, already := bp.proc, bp.held
	b.mu.Unlock()
	if proc != nil {
		b.logf("vmstorage for Pod %s held by %s: stopping it", k, holder)
		_ = proc.Stop(30 * time.Second)
		b.mu.Lock()
		bp.proc, bp.wasHealthy, bp.healthy = nil, false, false
		b.mu.Unlock()
	}
	if !already {
		b.mu.Lock()
		bp.held = true
		b.mu.Unlock()
	}
	return true
}

// dataDir is where the vmstorage process of Pod p keeps its data: inside
// the provisioner's directory of the Pod's claim, or for a Pod without one
// VMStorageRoot()/_emptydir/<namespace>/<pod>.
func (b *podBacker) dataDir(ctx context.Context, p *corev1.Pod) (string, error) {
	vol, sub := storageDataVolume(p)
	return claimDataDir(ctx, b.cs, b.dataRoot, p, vol, sub)
}

// claimDataDir is the local directory of the data at sub in the Pod's
// volume vol: inside the provisioner's directory of its claim, or for a
// volume without one dataRoot/_emptydir/<namespace>/<pod>.
func claimDataDir(ctx context.Context, cs kubernetes.Interface, dataRoot string, p *corev1.Pod, vol *corev1.Volume, sub string) (string, error) {
	claim := claimName(p, vol)
	if claim == "" {
		return filepath.Join(dataRoot, emptyDirRoot, p.Namespace, p.Name), nil
	}
	pvc, err := cs.CoreV1().PersistentVolumeClaims(p.Namespace).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("getting its PersistentVolumeClaim: %w", err)
	}
	if pvc.Spec.VolumeName == "" {
		return "", fmt.Errorf("its PersistentVolumeClaim %s is not bound yet", claim)
	}
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("getting the PersistentVolume of claim %s: %w", claim, err)
	}
	if pv.Annotations[annProvisionedBy] != VolumeProvisioner || pv.Spec.HostPath == nil || !insideDir(dataRoot, pv.Spec.HostPath.Path) {
		return "", fmt.Errorf("PersistentVolume %s of claim %s is not a volume of the stack's provisioner %s", pv.Name, claim, VolumeProvisioner)
	}
	dir := filepath.Join(pv.Spec.HostPath.Path, sub)
	if dir != pv.Spec.HostPath.Path && !insideDir(pv.Spec.HostPath.Path, dir) {
		return "", fmt.Errorf("data path %s of claim %s leaves its volume", dir, claim)
	}
	return dir, nil
}

// storageDataVolume returns the Pod volume that holds the vmstorage
// container's -storageDataPath and the data's path inside it ("" for its
// root); nil when no volume does (the data would be in the container's own
// filesystem).
func storageDataVolume(p *corev1.Pod) (*corev1.Volume, string) {
	return dataVolumeOf(p, "vmstorage")
}

// dataVolumeOf is storageDataVolume for the -storageDataPath of any
// container of the Pod (vmstorage's, or a vmrestore Job's).
func dataVolumeOf(p *corev1.Pod, container string) (*corev1.Volume, string) {
	for _, c := range p.Spec.Containers {
		if c.Name != container {
			continue
		}
		path := "/vmstorage-data"
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(strings.TrimLeft(a, "-"), "storageDataPath="); ok && v != "" {
				path = v
			}
		}
		path = filepath.Clean(path)
		var best *corev1.VolumeMount
		for i, m := range c.VolumeMounts {
			mp := filepath.Clean(m.MountPath)
			if (path == mp || strings.HasPrefix(path, strings.TrimSuffix(mp, "/")+"/")) && (best == nil || len(mp) > len(filepath.Clean(best.MountPath))) {
				best = &c.VolumeMounts[i]
			}
		}
		if best == nil {
			return nil, ""
		}
		rel, err := filepath.Rel(filepath.Clean(best.MountPath), path)
		if err != nil {
			return nil, ""
		}
		sub := filepath.Join(best.SubPath, rel)
		if sub == "." {
			sub = ""
		}
		for i := range p.Spec.Volumes {
			if p.Spec.Volumes[i].Name == best.Name {
				return &p.Spec.Volumes[i], sub
			}
		}
		return nil, ""
	}
	return nil, ""
}

// claimName is the PersistentVolumeClaim behind a Pod volume: its claim, or
// for a generic ephemeral volume the claim Kubernetes creates for it
// (<pod>-<volume>); "" for any other volume.
func claimName(p *corev1.Pod, v *corev1.Volume) string {
	switch {
	case v == nil:
		return ""
	case v.PersistentVolumeClaim != nil:
		return v.PersistentVolumeClaim.ClaimName
	case v.Ephemeral != nil:
		return p.Name + "-" + v.Name
	}
	return ""
}
