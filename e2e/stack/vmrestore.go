package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"

	"github.com/tidbcloud/ops-server/operator/testenv"
)

// How ops-operator restores on the local stack: as in a real cluster
// (--restore-runner=job), a ClusterRestore holds a vmstorage replica with
// a key in its VMCluster's hold ConfigMap and runs vmrestore as a Job per
// replica. kwok runs no containers, so the stack stands in for the
// kubelet: the backer keeps a held Pod's vmstorage stopped and reports its
// ops-hold init container running (hold, holdKey, reportHold), and
// vmrestoreBacker runs the real vmrestore of each vmrestore Job Pod.
const (
	// holdInitContainer is the vmcluster chart's init container
	// (restore.HoldInitContainer, which this module cannot import).
	holdInitContainer = "ops-hold"
	// vmrestoreName is the app.kubernetes.io/name label of the vmrestore
	// Job Pods and the name of their container (restore.VMRestoreContainer).
	vmrestoreName = "vmrestore"
)

// podCompleteStage is kwok's pod-complete stage (Job Pods Succeed at
// once) except for vmrestore Job Pods, whose outcome is vmrestore's
// (vmrestoreBacker).
func podCompleteStage() string {
	const anchor = "    matchExpressions:\n"
	if !strings.Contains(podfast.DefaultPodComplete, anchor) {
		// A kwok release with another layout: fail loudly in the stage
		// file rather than Succeed vmrestore Pods that never ran.
		panic("kwok's pod-complete stage has no matchExpressions to extend")
	}
	return strings.Replace(podfast.DefaultPodComplete, anchor, anchor+
		"    - key: '.metadata.labels[\"app.kubernetes.io/name\"]'\n"+
		"      operator: 'NotIn'\n"+
		"      values:\n"+
		"      - '"+vmrestoreName+"'\n", 1)
}

// holdConfigMapOf is the ConfigMap the Pod's ops-hold init container
// mounts, "" when it has none.
func holdConfigMapOf(p *corev1.Pod) string {
	for _, c := range p.Spec.InitContainers {
		if c.Name != holdInitContainer {
			continue
		}
		for _, m := range c.VolumeMounts {
			for _, v := range p.Spec.Volumes {
				if v.Name == m.Name && v.ConfigMap != nil {
					return v.ConfigMap.Name
				}
			}
		}
	}
	return ""
}

// holdKey is the value of the Pod's key in its hold ConfigMap ("<restore>
// <uid>"), "" when the Pod is not held (no ops-hold container, no
// ConfigMap, no key).
func (b *podBacker) holdKey(p *corev1.Pod) (string, error) {
	name := holdConfigMapOf(p)
	if name == "" {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cm, err := b.cs.CoreV1().ConfigMaps(p.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading its hold ConfigMap %s: %w", name, err)
	}
	return cm.Data[p.Name], nil
}

// reportHold makes the Pod's ops-hold init container status say what the
// kubelet would: running while the Pod is held (the Pod not Initialized),
// terminated with 0 once it is not. kwok's pod-ready stage reports it
// terminated when the Pod starts; the status is ours only once the Pod
// Runs (or kwok would never run it).
func (b *podBacker) reportHold(ctx context.Context, p *corev1.Pod, held bool) error {
	if p.Status.Phase != corev1.PodRunning || holdConfigMapOf(p) == "" {
		return nil
	}
	statuses := append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...)
	i := -1
	for j := range statuses {
		if statuses[j].Name == holdInitContainer {
			i = j
		}
	}
	if i < 0 {
		return nil
	}
	cur := statuses[i].State
	if held == (cur.Running != nil) && (held || (cur.Terminated != nil && cur.Terminated.ExitCode == 0)) {
		return nil
	}
	now := metav1.Now()
	init := corev1.ConditionTrue
	if held {
		statuses[i].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
		statuses[i].Ready, init = false, corev1.ConditionFalse
	} else {
		statuses[i].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}}
		statuses[i].Ready = true
	}
	return b.patch(ctx, p, map[string]any{
		"metadata": map[string]any{"uid": p.UID},
		"status": map[string]any{
			"initContainerStatuses": statuses,
			"conditions":            []corev1.PodCondition{{Type: corev1.PodInitialized, Status: init, LastTransitionTime: now}},
		},
	}, "status")
}

// vmrestoreBacker runs the real vmrestore (bin/vmrestore) for every
// vmrestore Job Pod scheduled on a kwok Node, once per Pod: with the Pod's
// flags, its -storageDataPath mapped to the local directory of the claim
// the Pod mounts (the directory the replica's vmstorage process uses) and
// fs:// sources as they are (a hostPath mounted at its own path). When
// vmrestore exits, the Pod's container is reported terminated with its
// exit code and the Pod Succeeded or Failed, so kube-controller-manager's
// Job controller completes or retries the Job. Every start is appended to
// startsLog ("<namespace>/<Job name>"), for tests to count runs.
type vmrestoreBacker struct {
	cs        kubernetes.Interface
	dataRoot  string
	podRoot   string
	startsLog string
	env       []string
	logf      func(format string, args ...any)
	pods      listersv1.PodLister
	cancel    context.CancelFunc
	done      chan struct{}

	mu    sync.Mutex
	procs map[types.UID]*testenv.Process
	// finished are the Pods whose outcome was reported.
	finished map[types.UID]bool
}

// startRestoreJobs starts the vmrestoreBacker unless it runs.
func (s *Stack) startRestoreJobs() error {
	if s.restoreJobs != nil {
		return nil
	}
	if _, err := testenv.Binary(vmrestoreName); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(s.Env.Config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &vmrestoreBacker{
		cs: cs, dataRoot: s.VMStorageRoot(), podRoot: filepath.Join(s.stateDir, "pods"), startsLog: s.RestoreStartsLog(),
		env: []string{StackEnv + "=" + s.stateDir}, logf: s.step, cancel: cancel, done: make(chan struct{}),
		procs: map[types.UID]*testenv.Process{}, finished: map[types.UID]bool{},
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app.kubernetes.io/name=" + vmrestoreName }))
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
	b.pods = pods.Lister()
	factory.Start(ctx.Done())
	go func() {
		defer close(b.done)
		defer factory.Shutdown()
		defer b.stopAll()
		if !cache.WaitForCacheSync(ctx.Done(), pods.Informer().HasSynced) {
			return
		}
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			b.sync(ctx)
			select {
			case <-ctx.Done():
				return
			case <-kick:
			case <-tick.C:
			}
		}
	}()
	s.restoreJobs = b
	return nil
}

func (b *vmrestoreBacker) stop() {
	b.cancel()
	<-b.done
}

func (b *vmrestoreBacker) stopAll() {
	b.mu.Lock()
	procs := b.procs
	b.procs = map[types.UID]*testenv.Process{}
	b.mu.Unlock()
	for _, p := range procs {
		_ = p.Kill()
	}
}

// jobName is the Job owning the Pod ("" for none).
func jobName(p *corev1.Pod) string {
	for _, o := range p.OwnerReferences {
		if o.Kind == "Job" {
			return o.Name
		}
	}
	return ""
}

// sync starts vmrestore for new running Pods, reports the ones that
// exited, and kills the ones whose Pod is gone.
func (b *vmrestoreBacker) sync(ctx context.Context) {
	pods, err := b.pods.List(labels.Everything())
	if err != nil {
		b.logf("vmrestore backer: listing Pods: %v", err)
		return
	}
	live := map[types.UID]bool{}
	for _, p := range pods {
		if ctx.Err() != nil {
			return
		}
		if p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
			continue
		}
		live[p.UID] = true
		b.mu.Lock()
		proc, finished := b.procs[p.UID], b.finished[p.UID]
		b.mu.Unlock()
		switch {
		case finished:
		case proc == nil && p.Status.Phase == corev1.PodRunning:
			// kwok's pod-ready stage made it Running: the container runs.
			if err := b.start(ctx, p); err != nil {
				b.logf("vmrestore backer: Pod %s/%s: %v", p.Namespace, p.Name, err)
				b.finish(ctx, p, 1, err.Error())
			}
		case proc != nil && proc.Exited():
			msg := ""
			if proc.ExitCode() != 0 {
				msg = proc.Log(2000)
			}
			b.finish(ctx, p, int32(proc.ExitCode()), msg)
		}
	}
	b.mu.Lock()
	var gone []*testenv.Process
	for uid, p := range b.procs {
		if !live[uid] {
			gone = append(gone, p)
			delete(b.procs, uid)
		}
	}
	for uid := range b.finished {
		if !live[uid] {
			delete(b.finished, uid)
		}
	}
	b.mu.Unlock()
	for _, p := range gone {
		_ = p.Kill()
	}
}

// start runs vmrestore for the Pod, once.
func (b *vmrestoreBacker) start(ctx context.Context, p *corev1.Pod) error {
	var c *corev1.Container
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == vmrestoreName {
			c = &p.Spec.Containers[i]
		}
	}
	if c == nil {
		return fmt.Errorf("no %s container", vmrestoreName)
	}
	vol, sub := dataVolumeOf(p, vmrestoreName)
	if claimName(p, vol) == "" {
		return fmt.Errorf("its -storageDataPath is not on a PersistentVolumeClaim")
	}
	dir, err := claimDataDir(ctx, b.cs, b.dataRoot, p, vol, sub)
	if err != nil {
		return err
	}
	args := vmrestoreArgs(c.Args, dir)
	if err := appendLine(b.startsLog, p.Namespace+"/"+jobName(p)); err != nil {
		return fmt.Errorf("recording the start: %w", err)
	}
	logPath := filepath.Join(b.podRoot, p.Namespace, p.Name, vmrestoreName+".log")
	proc, err := startContainerProcess(vmrestoreName, logPath, args, b.env)
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.procs[p.UID] = proc
	b.mu.Unlock()
	b.logf("vmrestore for Pod %s/%s runs: %s", p.Namespace, p.Name, strings.Join(args, " "))
	return nil
}

// vmrestoreArgs are the container's flags with -storageDataPath set to the
// local directory dir (added when missing).
func vmrestoreArgs(args []string, dir string) []string {
	out := make([]string, 0, len(args)+1)
	for _, a := range args {
		if name, _, ok := strings.Cut(strings.TrimLeft(a, "-"), "="); ok && name == "storageDataPath" {
			continue
		}
		out = append(out, a)
	}
	return append(out, "-storageDataPath="+dir)
}

// finish reports the Pod's container terminated with code and the Pod
// Succeeded (0) or Failed.
func (b *vmrestoreBacker) finish(ctx context.Context, p *corev1.Pod, code int32, message string) {
	phase, reason := corev1.PodSucceeded, "Completed"
	if code != 0 {
		phase, reason = corev1.PodFailed, "Error"
	}
	now := metav1.Now()
	statuses := []corev1.ContainerStatus{}
	for _, c := range p.Spec.Containers {
		statuses = append(statuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: message, StartedAt: now, FinishedAt: now},
		}})
	}
	conds := []corev1.PodCondition{}
	for _, t := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
		conds = append(conds, corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: "PodCompleted", LastTransitionTime: now})
	}
	raw, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": p.UID},
		"status":   map[string]any{"phase": phase, "containerStatuses": statuses, "conditions": conds},
	})
	if err == nil {
		_, err = b.cs.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, raw, metav1.PatchOptions{FieldManager: "ops-dev"}, "status")
	}
	if err != nil {
		// Tried again on the next pass.
		b.logf("vmrestore backer: reporting Pod %s/%s %s: %v", p.Namespace, p.Name, phase, err)
		return
	}
	b.mu.Lock()
	b.finished[p.UID] = true
	delete(b.procs, p.UID)
	b.mu.Unlock()
	b.logf("vmrestore for Pod %s/%s exited with %d", p.Namespace, p.Name, code)
}

func appendLine(path, line string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
