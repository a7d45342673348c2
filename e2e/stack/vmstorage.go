package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

// The annotations the vmstorage backer sets on each vmstorage Pod it backs
// with a local process. ops-operator reads them with --backup-runner=local
// (the same names as LocalEndpointAnnotation and
// LocalStorageDataPathAnnotation in operator/internal/controller/backup,
// which this module cannot import; docs/backups.md documents them).
const (
	// VMStorageEndpointAnnotation: http://127.0.0.1:<port>, the process's
	// HTTP API (health, metrics, snapshots).
	VMStorageEndpointAnnotation = "local.ops.observability.tidbcloud.com/http-endpoint"
	// VMStorageDataPathAnnotation: the process's -storageDataPath.
	VMStorageDataPathAnnotation = "local.ops.observability.tidbcloud.com/storage-data-path"
)

// vmstoragePodSelector selects the Pods the VictoriaMetrics operator
// creates for vmstorage.
const vmstoragePodSelector = "app.kubernetes.io/name=vmstorage"

// vmstorageBacker stands in for the kubelet's containers for vmstorage:
// kwok Pods run no process, so for every vmstorage Pod scheduled on a kwok
// Node it runs a real vmstorage from bin/ on 127.0.0.1 and publishes the
// process's address and data directory on the Pod as annotations. The data
// directory is the one the Pod's container would see at its
// -storageDataPath: inside the volume of the Pod's PersistentVolumeClaim
// (Pod volume -> claim -> the stack provisioner's PersistentVolume, see
// volumes.go), so a re-created Pod finds its data again; for a Pod whose
// data volume is an emptyDir, VMStorageRoot()/_emptydir/<namespace>/<pod>
// (also kept across Pod re-creations, as it always was here). A Pod re-created under the same name
// (new UID) gets a new process; a Pod being deleted loses its process; a
// process that exits is started again.
//
// One goroutine does all the work, level-triggered: it compares the Pods
// in its informer's cache with the processes it runs, on every Pod event
// and every few seconds.
type vmstorageBacker struct {
	cs       kubernetes.Interface
	dataRoot string
	// state is the stack's state directory, where each Pod's container
	// log is (PodLogPath).
	state string
	logf  func(format string, args ...any)

	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	procs map[types.NamespacedName]*backedPod
}

// backedPod is the process backing one Pod.
type backedPod struct {
	uid      types.UID
	proc     *testenv.Process
	endpoint string
	dataDir  string
}

// startVMStorageBacker starts the backer unless it runs.
func (s *Stack) startVMStorageBacker() error {
	if s.backer != nil {
		return nil
	}
	if _, err := testenv.Binary("vmstorage"); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(s.Env.Config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &vmstorageBacker{
		cs: cs, dataRoot: s.VMStorageRoot(), state: s.stateDir, logf: s.step,
		cancel: cancel, done: make(chan struct{}), procs: map[types.NamespacedName]*backedPod{},
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = vmstoragePodSelector }))
	pods := factory.Core().V1().Pods()
	kick := make(chan struct{}, 1)
	notify := func(any) {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: notify, DeleteFunc: notify, UpdateFunc: func(_, o any) { notify(o) },
	}); err != nil {
		cancel()
		return err
	}
	lister := pods.Lister()
	factory.Start(ctx.Done())
	go func() {
		defer close(b.done)
		defer factory.Shutdown()
		defer b.stopAll()
		if !cache.WaitForCacheSync(ctx.Done(), pods.Informer().HasSynced) {
			return
		}
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			b.sync(ctx, lister)
			select {
			case <-ctx.Done():
				return
			case <-kick:
			case <-tick.C:
			}
		}
	}()
	s.backer = b
	return nil
}

// stop stops the backer and every vmstorage process it runs.
func (b *vmstorageBacker) stop() {
	b.cancel()
	<-b.done
}

// processes returns the running vmstorage processes, for logs on failure.
func (b *vmstorageBacker) processes() []*testenv.Process {
	b.mu.Lock()
	defer b.mu.Unlock()
	keys := make([]types.NamespacedName, 0, len(b.procs))
	for k := range b.procs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	out := make([]*testenv.Process, 0, len(keys))
	for _, k := range keys {
		out = append(out, b.procs[k].proc)
	}
	return out
}

// sync makes the processes match the Pods.
func (b *vmstorageBacker) sync(ctx context.Context, lister listersv1.PodLister) {
	pods, err := lister.List(labels.Everything())
	if err != nil {
		b.logf("vmstorage backer: listing Pods: %v", err)
		return
	}
	want := map[types.NamespacedName]*corev1.Pod{}
	for _, p := range pods {
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		want[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
	}
	b.mu.Lock()
	var gone []types.NamespacedName
	for k, bp := range b.procs {
		if p, ok := want[k]; !ok || p.UID != bp.uid || bp.proc.Exited() {
			gone = append(gone, k)
		}
	}
	b.mu.Unlock()
	for _, k := range gone {
		b.stopOne(k)
	}
	for k, p := range want {
		if ctx.Err() != nil {
			return
		}
		b.mu.Lock()
		bp := b.procs[k]
		b.mu.Unlock()
		if bp == nil {
			if bp, err = b.startOne(ctx, p); err != nil {
				b.logf("vmstorage backer: Pod %s: %v", k, err)
				continue
			}
		}
		if p.Annotations[VMStorageEndpointAnnotation] != bp.endpoint || p.Annotations[VMStorageDataPathAnnotation] != bp.dataDir {
			if err := b.annotate(ctx, p, bp); err != nil {
				b.logf("vmstorage backer: annotating Pod %s: %v", k, err)
			}
		}
	}
}

// startOne starts the vmstorage of a Pod on a kwok Node and waits until it
// is healthy.
func (b *vmstorageBacker) startOne(ctx context.Context, p *corev1.Pod) (*backedPod, error) {
	node, err := b.cs.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("getting its Node %s: %w", p.Spec.NodeName, err)
	}
	if node.Annotations[mock.KwokAnnotation] == "" {
		return nil, fmt.Errorf("Node %s is not a kwok Node: its kubelet runs the containers", node.Name)
	}
	var ports [3]int
	for i := range ports {
		if ports[i], err = testenv.FreePort(); err != nil {
			return nil, err
		}
	}
	dataDir, err := b.dataDir(ctx, p)
	if err != nil {
		return nil, err
	}
	bp := &backedPod{
		uid:      p.UID,
		endpoint: fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		dataDir:  dataDir,
	}
	if err := os.MkdirAll(bp.dataDir, 0o755); err != nil {
		return nil, err
	}
	bp.proc, err = startContainerProcess("vmstorage", podLogPath(b.state, p.Namespace, p.Name, "vmstorage"), []string{
		"-storageDataPath=" + bp.dataDir,
		fmt.Sprintf("-httpListenAddr=127.0.0.1:%d", ports[0]),
		fmt.Sprintf("-vminsertAddr=127.0.0.1:%d", ports[1]),
		fmt.Sprintf("-vmselectAddr=127.0.0.1:%d", ports[2]),
		"-retentionPeriod=" + retentionPeriod(p),
	}, nil)
	if err != nil {
		return nil, err
	}
	if err := bp.proc.WaitHTTPOK(ctx, bp.endpoint+"/health", time.Minute); err != nil {
		_ = bp.proc.Stop(10 * time.Second)
		return nil, err
	}
	b.mu.Lock()
	b.procs[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = bp
	b.mu.Unlock()
	b.logf("vmstorage for Pod %s/%s (node %s) runs on %s, data in %s", p.Namespace, p.Name, p.Spec.NodeName, bp.endpoint, bp.dataDir)
	return bp, nil
}

// annotate publishes where the Pod's vmstorage listens. The patch names the
// Pod's UID, so it never lands on a Pod re-created under the same name.
func (b *vmstorageBacker) annotate(ctx context.Context, p *corev1.Pod, bp *backedPod) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": bp.uid,
		"annotations": map[string]string{
			VMStorageEndpointAnnotation: bp.endpoint,
			VMStorageDataPathAnnotation: bp.dataDir,
		},
	}})
	if err != nil {
		return err
	}
	_, err = b.cs.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "ops-dev"})
	return err
}

func (b *vmstorageBacker) stopOne(k types.NamespacedName) {
	b.mu.Lock()
	bp := b.procs[k]
	delete(b.procs, k)
	b.mu.Unlock()
	if bp == nil {
		return
	}
	if bp.proc.Exited() {
		b.logf("vmstorage for Pod %s exited; log tail:\n%s", k, bp.proc.Log(2000))
		return
	}
	_ = bp.proc.Stop(10 * time.Second)
}

func (b *vmstorageBacker) stopAll() {
	b.mu.Lock()
	keys := make([]types.NamespacedName, 0, len(b.procs))
	for k := range b.procs {
		keys = append(keys, k)
	}
	b.mu.Unlock()
	for _, k := range keys {
		b.stopOne(k)
	}
}

// retentionPeriod is the -retentionPeriod the VictoriaMetrics operator gave
// the Pod's vmstorage container (from the VMCluster's retentionPeriod), or
// vmstorage's default of one month.
func retentionPeriod(p *corev1.Pod) string {
	for _, c := range p.Spec.Containers {
		if c.Name != "vmstorage" {
			continue
		}
		for _, a := range c.Args {
			a = strings.TrimLeft(a, "-")
			if v, ok := strings.CutPrefix(a, "retentionPeriod="); ok && v != "" {
				return v
			}
		}
	}
	return "1"
}

// dataDir is where the vmstorage process of Pod p keeps its data: inside
// the provisioner's directory of the Pod's claim, or for a Pod without one
// VMStorageRoot()/_emptydir/<namespace>/<pod>.
func (b *vmstorageBacker) dataDir(ctx context.Context, p *corev1.Pod) (string, error) {
	vol, sub := storageDataVolume(p)
	claim := claimName(p, vol)
	if claim == "" {
		return filepath.Join(b.dataRoot, emptyDirRoot, p.Namespace, p.Name), nil
	}
	pvc, err := b.cs.CoreV1().PersistentVolumeClaims(p.Namespace).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("getting its PersistentVolumeClaim: %w", err)
	}
	if pvc.Spec.VolumeName == "" {
		return "", fmt.Errorf("its PersistentVolumeClaim %s is not bound yet", claim)
	}
	pv, err := b.cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("getting the PersistentVolume of claim %s: %w", claim, err)
	}
	if pv.Annotations[annProvisionedBy] != VolumeProvisioner || pv.Spec.HostPath == nil || !insideDir(b.dataRoot, pv.Spec.HostPath.Path) {
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
	for _, c := range p.Spec.Containers {
		if c.Name != "vmstorage" {
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
