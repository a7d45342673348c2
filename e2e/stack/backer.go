package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

// PortsAnnotation lists, on every Pod the backer backs, which local port
// stands in for each container port: "8400=127.0.0.1:40001,8482=...".
const PortsAnnotation = "local.ops.observability.tidbcloud.com/ports"

// StackEnv is set, to the stack's state directory, in the environment of
// every process the backer starts, so that a leftover one can be found.
const StackEnv = "OPS_STACK_STATE"

// component is a VictoriaMetrics binary the backer runs for Pods. Its name
// is the binary in bin/, the container name and the value of the
// app.kubernetes.io/name label the VictoriaMetrics operator gives the Pods.
type component struct {
	name string
	// listen are the flags that take a listen address, with the container
	// port the binary uses without the flag (0: not listening without it).
	listen map[string]int
	// extra are flags added to the Pod's, to keep the local stack light.
	extra []string
	// image is the image's name when it is not name (the VictoriaMetrics
	// operator's image is victoriametrics/operator).
	image string
	// httpFlag is the listen flag of the address health is asked at
	// (httpListenAddr when empty), healthPath the path (/health when
	// empty).
	httpFlag, healthPath string
	// podEnv: the process gets the container's environment (its literal
	// values) and KUBECONFIG, the stack's admin kubeconfig (an operator
	// talks to the API server as its in-cluster client would).
	podEnv bool
	// scrapeConfig: the process is vmagent, its scrape configuration is
	// the operator's Secret translated for the local stack and its
	// remote-write URLs point at the Service proxy (backer_vmagent.go).
	scrapeConfig bool
}

// httpListenFlag is the listen flag of the address health is asked at.
func (c *component) httpListenFlag() string {
	if c.httpFlag != "" {
		return c.httpFlag
	}
	return "httpListenAddr"
}

// components are the binaries the backer knows.
var components = []component{
	{name: "vmstorage", listen: map[string]int{"httpListenAddr": 8482, "vminsertAddr": 8400, "vmselectAddr": 8401}},
	{name: "vminsert", listen: map[string]int{"httpListenAddr": 8480, "clusternativeListenAddr": 0},
		extra: []string{"-memory.allowedPercent=10"}},
	{name: "vmselect", listen: map[string]int{"httpListenAddr": 8481, "clusternativeListenAddr": 0},
		extra: []string{"-memory.allowedPercent=10", "-search.maxConcurrentRequests=2", "-search.disableCache"}},
	// The VictoriaMetrics operator of the stack's vm-operator component
	// (deploy/charts/vm-operator): its webhook is off by default.
	{name: "vm-operator", image: "operator", listen: map[string]int{"health-probe-bind-address": 8081, "metrics-bind-address": 8080},
		httpFlag: "health-probe-bind-address", healthPath: "/ready", podEnv: true},
	// The vmagent of a VMAgent (the stack's vmagent component).
	{name: "vmagent", listen: map[string]int{"httpListenAddr": 8429}, scrapeConfig: true,
		extra: []string{"-memory.allowedPercent=10", "-promscrape.configCheckInterval=2s", "-remoteWrite.flushInterval=1s"}},
}

// backedPodSelector selects the Pods of every component.
func backedPodSelector() string {
	names := make([]string, 0, len(components))
	for _, c := range components {
		names = append(names, c.name)
	}
	return "app.kubernetes.io/name in (" + strings.Join(names, ",") + ")"
}

// componentOf returns the component of a Pod and its container: the
// container named after a known component, else one whose image is one
// (victoriametrics/vmstorage:<tag>; a vmagent Pod's config-reloader
// sidecar has the operator's image, so names go first).
func componentOf(p *corev1.Pod) (*component, *corev1.Container) {
	for i := range p.Spec.Containers {
		for j := range components {
			if p.Spec.Containers[i].Name == components[j].name {
				return &components[j], &p.Spec.Containers[i]
			}
		}
	}
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		image := c.Image
		if at := strings.IndexByte(image, '@'); at >= 0 {
			image = image[:at]
		}
		image = image[strings.LastIndexByte(image, '/')+1:]
		if colon := strings.IndexByte(image, ':'); colon >= 0 {
			image = image[:colon]
		}
		for j := range components {
			if image == components[j].name || (components[j].image != "" && image == components[j].image) {
				return &components[j], c
			}
		}
	}
	return nil, nil
}

// podBacker stands in for the kubelet's containers for VictoriaMetrics:
// kwok Pods run no process, so for every vmstorage, vminsert and vmselect
// Pod scheduled on a kwok Node it runs the real binary from bin/ on
// 127.0.0.1 with the flags of the Pod's container, in-cluster addresses
// translated (see localArgs): every container port of a Pod gets a local
// port, kept for the Pod's name, so that -storageNode=<pod>.<svc>.<ns>:8401
// reaches the process of that Pod, also after it is re-created. It
// publishes the process's address (and for vmstorage its data directory,
// see vmstorage.go) on the Pod as annotations, and the Pod's readiness
// follows the process's /health. A Pod re-created under the same name (new
// UID) gets a new process; a Pod being deleted loses its process; a process
// that exits makes the Pod NotReady and is started again after a back-off,
// as a kubelet would, counting restarts in the container status, and
// records the kubelet's Events on the Pod (source component "kubelet"):
// Warning Unhealthy when a process that was healthy stops answering
// /health, Warning BackOff when its process exited, Normal Started when it
// is started again. Each process logs to
// <state>/pods/<namespace>/<pod>/<container>.log.
//
// One goroutine does all the work, level-triggered: it compares the Pods
// in its informer's cache with the processes it runs, on every Pod event
// and every second.
type podBacker struct {
	cs       kubernetes.Interface
	dataRoot string
	podRoot  string
	env      []string
	logf     func(format string, args ...any)
	health   *http.Client
	events   record.EventRecorder

	pods  listersv1.PodLister
	ports *portRegistry

	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	procs map[types.NamespacedName]*backedPod
	// foreign are the Pods on Nodes that are not kwok's: their kubelet
	// runs them, the backer leaves them alone (and says so once).
	foreign map[types.UID]bool

	// kubeconfig is the stack's admin kubeconfig (podEnv components, and
	// vmagent's Kubernetes service discovery).
	kubeconfig string
	// servicesURL is the Service proxy's base URL (vmagent's remote
	// write).
	servicesURL string
	// vmstorageStarts is Stack.VMStorageStartsLog.
	vmstorageStarts string
}

// backedPod is the process backing one Pod.
type backedPod struct {
	uid       types.UID
	comp      *component
	container string
	args      []string
	// env is the process's environment beyond the backer's (podEnv).
	env []string
	// config is vmagent's local scrape configuration file, wrote what
	// was last written to it.
	config    string
	wrote     []byte
	ports     map[int]int
	proc      *testenv.Process
	endpoint  string
	dataDir   string
	startedAt time.Time
	// restarts counts the process's exits; crashes the exits in a row of
	// a process that ran less than a minute, for the back-off.
	restarts  int32
	crashes   int
	notBefore time.Time
	healthy   bool
	// wasHealthy: the process answered /health since it started (an
	// Unhealthy Event is for a process that stopped answering).
	wasHealthy bool
	// held: the Pod is held (its hold ConfigMap key) and its process was stopped
	// for it (vmstorage.go).
	held bool
}

// ref is the Pod of bp, for its Events.
func (bp *backedPod) ref(k types.NamespacedName) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: k.Namespace, Name: k.Name, UID: bp.uid}
}

// startBacker starts the backer and the Service proxy unless they run.
func (s *Stack) startBacker() error {
	if s.backer != nil {
		return nil
	}
	for _, c := range components {
		if _, err := testenv.Binary(c.name); err != nil {
			return err
		}
	}
	cs, err := kubernetes.NewForConfig(s.Env.Config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	b := &podBacker{
		events: broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet"}),
		cs:     cs, kubeconfig: s.Env.KubeconfigPath, dataRoot: s.VMStorageRoot(), podRoot: filepath.Join(s.stateDir, "pods"),
		env: []string{StackEnv + "=" + s.stateDir}, logf: s.step, health: &http.Client{Timeout: time.Second},
		ports:  newPortRegistry(),
		cancel: cancel, done: make(chan struct{}), procs: map[types.NamespacedName]*backedPod{}, foreign: map[types.UID]bool{},
	}
	b.vmstorageStarts = s.VMStorageStartsLog()
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = backedPodSelector() }))
	pods := factory.Core().V1().Pods()
	services := informers.NewSharedInformerFactory(cs, 0)
	svcs := services.Core().V1().Services()
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
	_ = svcs.Informer()
	b.pods = pods.Lister()
	factory.Start(ctx.Done())
	services.Start(ctx.Done())
	proxy, err := startServiceProxy(s.servicesAddr, b, svcs.Lister())
	if err != nil {
		cancel()
		return fmt.Errorf("starting the Service proxy: %w", err)
	}
	s.servicesAddr = proxy.addr
	b.servicesURL = "http://" + proxy.addr
	go func() {
		defer close(b.done)
		defer broadcaster.Shutdown()
		defer services.Shutdown()
		defer factory.Shutdown()
		defer b.stopAll()
		defer proxy.stop()
		if !cache.WaitForCacheSync(ctx.Done(), pods.Informer().HasSynced, svcs.Informer().HasSynced) {
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
	s.backer = b
	return nil
}

// stop stops the backer, the Service proxy and every process.
func (b *podBacker) stop() {
	b.cancel()
	<-b.done
}

// processes returns the running processes, for logs on failure.
func (b *podBacker) processes() []*testenv.Process {
	b.mu.Lock()
	defer b.mu.Unlock()
	keys := make([]types.NamespacedName, 0, len(b.procs))
	for k := range b.procs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	out := make([]*testenv.Process, 0, len(keys))
	for _, k := range keys {
		if p := b.procs[k].proc; p != nil {
			out = append(out, p)
		}
	}
	return out
}

// endpointOf returns the HTTP address of the healthy process of a Pod.
func (b *podBacker) endpointOf(p *corev1.Pod) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	bp := b.procs[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}]
	if bp == nil || bp.uid != p.UID || !bp.healthy {
		return "", false
	}
	return bp.endpoint, true
}

// restartDelay is the back-off before the next start of a process that
// exited after crashes quick exits in a row: 2 s, doubling, at most 1 min.
func restartDelay(crashes int) time.Duration {
	d := 2 * time.Second
	for i := 1; i < crashes && d < time.Minute; i++ {
		d *= 2
	}
	return min(d, time.Minute)
}

// sync makes the processes match the Pods, and the Pods' readiness match
// the processes' health.
func (b *podBacker) sync(ctx context.Context) {
	pods, err := b.pods.List(labels.Everything())
	if err != nil {
		b.logf("backer: listing Pods: %v", err)
		return
	}
	want := map[types.NamespacedName]*corev1.Pod{}
	for _, p := range pods {
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if c, _ := componentOf(p); c == nil || b.foreign[p.UID] {
			continue
		}
		want[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
	}
	b.mu.Lock()
	var gone []types.NamespacedName
	for k, bp := range b.procs {
		if p, ok := want[k]; !ok || p.UID != bp.uid {
			gone = append(gone, k)
		}
	}
	b.mu.Unlock()
	for _, k := range gone {
		b.stopOne(k)
	}
	keys := make([]types.NamespacedName, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	// vmstorage first: the others connect to it.
	sort.Slice(keys, func(i, j int) bool {
		ci, _ := componentOf(want[keys[i]])
		cj, _ := componentOf(want[keys[j]])
		if ci.name != cj.name {
			return ci.name == "vmstorage"
		}
		return keys[i].String() < keys[j].String()
	})
	for _, k := range keys {
		if ctx.Err() != nil {
			return
		}
		p := want[k]
		b.mu.Lock()
		bp := b.procs[k]
		b.mu.Unlock()
		if bp == nil {
			if bp, err = b.prepare(ctx, p); err != nil {
				b.logf("backer: Pod %s: %v", k, err)
				continue
			}
			b.mu.Lock()
			b.procs[k] = bp
			b.mu.Unlock()
		}
		if bp.comp.scrapeConfig {
			if err := b.writeScrapeConfig(ctx, p, bp); err != nil {
				b.logf("backer: Pod %s: %v", k, err)
				if bp.proc == nil {
					continue
				}
			}
		}
		held := b.hold(k, p, bp)
		if !held {
			b.run(k, bp)
		}
		healthy := b.healthy(ctx, bp)
		b.mu.Lock()
		lost := bp.wasHealthy && !healthy && bp.healthy
		bp.healthy = healthy
		bp.wasHealthy = bp.wasHealthy || healthy
		b.mu.Unlock()
		if lost {
			b.events.Eventf(bp.ref(k), corev1.EventTypeWarning, "Unhealthy", "Readiness probe failed: %s does not answer at %s/health", bp.comp.name, bp.endpoint)
		}
		if err := b.report(ctx, p, bp); err != nil && ctx.Err() == nil {
			b.logf("backer: updating Pod %s: %v", k, err)
		}
	}
}

// prepare works out how a Pod's process runs: its flags, ports and data
// directory. It refuses Pods that are not on a kwok Node.
func (b *podBacker) prepare(ctx context.Context, p *corev1.Pod) (*backedPod, error) {
	node, err := b.cs.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("getting its Node %s: %w", p.Spec.NodeName, err)
	}
	if node.Annotations[mock.KwokAnnotation] == "" {
		b.foreign[p.UID] = true
		return nil, fmt.Errorf("Node %s is not a kwok Node: its kubelet runs the containers", node.Name)
	}
	comp, c := componentOf(p)
	bp := &backedPod{uid: p.UID, comp: comp, container: c.Name}
	paths := map[string]string{}
	if comp.name == "vmstorage" {
		if bp.dataDir, err = b.dataDir(ctx, p); err != nil {
			return nil, err
		}
		paths["storageDataPath"] = bp.dataDir
	}
	self := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	args := c.Args
	if comp.scrapeConfig {
		dir := filepath.Join(b.podRoot, p.Namespace, p.Name)
		bp.config = filepath.Join(dir, "vmagent.yaml")
		paths["promscrape.config"] = bp.config
		paths["remoteWrite.tmpDataPath"] = filepath.Join(dir, "remotewrite-data")
		if args, err = localRemoteWrite(args, p.Namespace, b.servicesURL); err != nil {
			return nil, err
		}
	}
	bp.args, bp.ports, err = localArgs(comp, args, self, paths, b.ports.local)
	if err != nil {
		return nil, err
	}
	if comp.podEnv {
		bp.env = append(containerEnv(c), "KUBECONFIG="+b.kubeconfig)
	}
	bp.endpoint = fmt.Sprintf("http://127.0.0.1:%d", bp.ports[comp.listen[comp.httpListenFlag()]])
	return bp, nil
}

// run starts the process of a Pod unless it runs or waits for its
// back-off; a process that exited is counted and waits for it.
func (b *podBacker) run(k types.NamespacedName, bp *backedPod) {
	if bp.proc != nil && bp.proc.Exited() {
		b.logf("%s for Pod %s exited; log tail:\n%s", bp.comp.name, k, bp.proc.Log(2000))
		b.mu.Lock()
		if time.Since(bp.startedAt) > time.Minute {
			bp.crashes = 0
		}
		bp.crashes++
		bp.restarts++
		delay := restartDelay(bp.crashes)
		bp.notBefore = time.Now().Add(delay)
		ran := time.Since(bp.startedAt).Round(time.Second)
		bp.proc, bp.wasHealthy = nil, false
		b.mu.Unlock()
		b.events.Eventf(bp.ref(k), corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s: the %s process exited after %s; restarting in %s",
			bp.container, k.Name, bp.comp.name, ran, delay)
	}
	if bp.proc != nil || time.Now().Before(bp.notBefore) {
		return
	}
	if bp.dataDir != "" {
		if err := os.MkdirAll(bp.dataDir, 0o755); err != nil {
			b.logf("backer: Pod %s: %v", k, err)
			return
		}
	}
	// The Pod's container log, in the kubelet's format (kubectl logs reads
	// it through kwok, see podio.go).
	logPath := filepath.Join(b.podRoot, k.Namespace, k.Name, bp.container+".log")
	proc, err := startContainerProcess(bp.comp.name, logPath, bp.args, append(append([]string(nil), b.env...), bp.env...))
	if err != nil {
		b.logf("backer: Pod %s: %v", k, err)
		return
	}
	b.mu.Lock()
	bp.proc, bp.startedAt = proc, time.Now()
	restarts := bp.restarts
	b.mu.Unlock()
	if restarts > 0 {
		b.events.Eventf(bp.ref(k), corev1.EventTypeNormal, "Started", "Started container %s (restart %d)", bp.container, restarts)
	}
	if bp.comp.name == "vmstorage" {
		if err := appendLine(b.vmstorageStarts, k.String()+" "+string(bp.uid)); err != nil {
			b.logf("backer: recording the vmstorage start of Pod %s: %v", k, err)
		}
	}
	b.logf("%s for Pod %s runs on %s (ports %s)", bp.comp.name, k, bp.endpoint, portList(bp.ports))
}

// healthy reports whether the process answers 200 at /health.
func (b *podBacker) healthy(ctx context.Context, bp *backedPod) bool {
	if bp.proc == nil || bp.proc.Exited() {
		return false
	}
	path := bp.comp.healthPath
	if path == "" {
		path = "/health"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, bp.endpoint+path, nil)
	if err != nil {
		return false
	}
	resp, err := b.health.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// report publishes the process's addresses on the Pod and makes the Pod's
// Ready condition and container status follow the process's health. Both
// patches name the Pod's UID, so they never land on a Pod re-created
// under the same name.
func (b *podBacker) report(ctx context.Context, p *corev1.Pod, bp *backedPod) error {
	ann := map[string]any{VMStorageEndpointAnnotation: bp.endpoint, PortsAnnotation: portList(bp.ports)}
	if bp.dataDir != "" {
		ann[VMStorageDataPathAnnotation] = bp.dataDir
	}
	b.mu.Lock()
	held := bp.held
	b.mu.Unlock()
	if held {
		ann[StoppedAnnotation] = "true"
	} else if _, ok := p.Annotations[StoppedAnnotation]; ok {
		ann[StoppedAnnotation] = nil
	}
	for k, v := range ann {
		if cur, ok := p.Annotations[k]; (v == nil && ok) || (v != nil && cur != v) {
			if err := b.patch(ctx, p, map[string]any{"metadata": map[string]any{"uid": p.UID, "annotations": ann}}); err != nil {
				return err
			}
			break
		}
	}
	// kwok's pod-ready stage makes the Pod Running (and Ready) once;
	// readiness is ours only after that, or kwok would never run it.
	if p.Status.Phase != corev1.PodRunning {
		return nil
	}
	b.mu.Lock()
	healthy, restarts := bp.healthy, bp.restarts
	b.mu.Unlock()
	statuses, changed := containerStatuses(p, bp.container, healthy, restarts)
	if !changed && podReady(p) == healthy {
		return nil
	}
	status, reason, message := corev1.ConditionTrue, "ProcessHealthy", fmt.Sprintf("%s answers at %s/health", bp.comp.name, bp.endpoint)
	if !healthy {
		status, reason, message = corev1.ConditionFalse, "ProcessUnhealthy", fmt.Sprintf("%s does not answer at %s/health (restarts: %d)", bp.comp.name, bp.endpoint, restarts)
	}
	now := metav1.Now()
	var conds []corev1.PodCondition
	for _, t := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
		conds = append(conds, corev1.PodCondition{Type: t, Status: status, Reason: reason, Message: message, LastTransitionTime: now})
	}
	return b.patch(ctx, p, map[string]any{
		"metadata": map[string]any{"uid": p.UID},
		"status":   map[string]any{"conditions": conds, "containerStatuses": statuses},
	}, "status")
}

func (b *podBacker) patch(ctx context.Context, p *corev1.Pod, patch map[string]any, subresources ...string) error {
	raw, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = b.cs.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, raw, metav1.PatchOptions{FieldManager: "ops-dev"}, subresources...)
	return err
}

// podReady reports the Pod's Ready condition.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// containerStatuses returns the Pod's container statuses with the backed
// container's ready and restartCount set, and whether that changed them.
func containerStatuses(p *corev1.Pod, container string, ready bool, restarts int32) ([]corev1.ContainerStatus, bool) {
	out := append([]corev1.ContainerStatus(nil), p.Status.ContainerStatuses...)
	for i := range out {
		if out[i].Name != container {
			continue
		}
		changed := out[i].Ready != ready || out[i].RestartCount != restarts
		out[i].Ready, out[i].RestartCount = ready, restarts
		return out, changed
	}
	return out, false
}

func (b *podBacker) stopOne(k types.NamespacedName) {
	b.mu.Lock()
	bp := b.procs[k]
	delete(b.procs, k)
	b.mu.Unlock()
	if bp == nil || bp.proc == nil {
		return
	}
	if bp.proc.Exited() {
		b.logf("%s for Pod %s exited; log tail:\n%s", bp.comp.name, k, bp.proc.Log(2000))
		return
	}
	_ = bp.proc.Stop(10 * time.Second)
}

// stopAll stops every process, all at once.
func (b *podBacker) stopAll() {
	b.mu.Lock()
	keys := make([]types.NamespacedName, 0, len(b.procs))
	for k := range b.procs {
		keys = append(keys, k)
	}
	b.mu.Unlock()
	var wg sync.WaitGroup
	for _, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.stopOne(k)
		}()
	}
	wg.Wait()
}
