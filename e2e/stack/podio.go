package stack

// kubectl logs and kubectl exec of backed Pods, through kwok's own
// mechanisms rather than a stand-in of ours:
//
//   - kwok runs its kubelet server (--server-address, --node-port) and every
//     kwok Node publishes it as its kubelet endpoint: InternalIP 127.0.0.1 and
//     status.daemonEndpoints.kubeletEndpoint.Port, set by a kwok Stage
//     (kubeletEndpointStage) that re-applies whenever a Node names another
//     port or lacks the InternalIP (Nodes outlive a `make dev` run; the port
//     is new each run).
//     kube-apiserver reaches it with --kubelet-preferred-address-types=
//     InternalIP; kwok serves HTTPS with its own certificate and asks for no
//     client certificate, and kube-apiserver, without
//     --kubelet-certificate-authority, does not verify it.
//   - kwok reads its Logs, Exec and PortForward resources (kwok.x-k8s.io/v1alpha1) from
//     the API server (--enable-crds=Logs,Exec; the CRDs come from kwok's own
//     module). They select one Pod by namespace and name, and kwok has no
//     path templates, so podIO keeps one Logs and one Exec per backed Pod,
//     owned by the Pod (the garbage collector deletes them with it).
//
// The contract with the process backer: a backed Pod carries the
// http-endpoint annotation; the log of its container <c> is
// PodLogPath(<namespace>, <pod>, <c>), written in the kubelet's (CRI) log
// format, which is the only format kwok's log reader accepts
// (startContainerProcess writes it); and `kubectl exec` runs the command on
// the host in the Pod's data directory (the storage-data-path annotation,
// else the Pod's directory beside its logs), with POD_NAME and
// POD_NAMESPACE set.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	kwokcrd "sigs.k8s.io/kwok/kustomize/crd"
	kwokv1 "sigs.k8s.io/kwok/pkg/apis/v1alpha1"

	"github.com/tidbcloud/ops-server/operator/testenv"
)

// kwokCRDKinds are the kwok resources the stack's kwok reads from the API
// server (--enable-crds).
const kwokCRDKinds = kwokv1.LogsKind + "," + kwokv1.ExecKind + "," + kwokv1.PortForwardKind

// withKwokIO adds to o what kubectl logs/exec through kwok need from the
// control plane: kwok's Logs and Exec CRDs (written into dir), their Go
// types, and how kube-apiserver reaches kwok's kubelet server.
func withKwokIO(o testenv.Options, dir string) (testenv.Options, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return o, err
	}
	for name, crd := range map[string][]byte{"logs.yaml": kwokcrd.Logs, "execs.yaml": kwokcrd.Exec, "portforwards.yaml": kwokcrd.PortForward} {
		if err := os.WriteFile(filepath.Join(dir, name), crd, 0o644); err != nil {
			return o, err
		}
	}
	o.ExtraCRDDirs = append(o.ExtraCRDDirs, dir)
	o.AddToScheme = append(o.AddToScheme, kwokv1.AddToScheme)
	if o.APIServerFlags == nil {
		o.APIServerFlags = map[string]string{}
	}
	// kwok Nodes are also named by their Hostname address, which does not
	// resolve; InternalIP is 127.0.0.1 (kwok --node-ip).
	o.APIServerFlags["kubelet-preferred-address-types"] = "InternalIP"
	return o, nil
}

// kwokNodeIP is every kwok Node's InternalIP (kwok --node-ip).
const kwokNodeIP = "127.0.0.1"

// kubeletEndpointStage is a kwok Stage that points every kwok Node's
// kubelet endpoint at kwok's server on port: it applies to a Node whose
// status names another port (or none) or lacks the InternalIP, and
// outweighs the other Node stages while it does. It also sets the Hostname
// address, which kwok's node-initialize stage otherwise tries to add and,
// for these Nodes, renders as an empty address list that wipes the
// InternalIP.
func kubeletEndpointStage(port int) string {
	return fmt.Sprintf(`apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-kubelet-endpoint
spec:
  resourceRef:
    apiGroup: v1
    kind: Node
  selector:
    matchExpressions:
    - key: '"\(.status.daemonEndpoints.kubeletEndpoint.Port) \([.status.addresses[]? | select(.type == "InternalIP") | .address] | .[0])"'
      operator: NotIn
      values:
      - '%d %s'
  weight: 1000
  next:
    statusTemplate: |
      addresses:
      - address: {{ NodeIP | Quote }}
        type: InternalIP
      - address: {{ .metadata.name | Quote }}
        type: Hostname
      daemonEndpoints:
        kubeletEndpoint:
          Port: {{ NodePort }}
`, port, kwokNodeIP)
}

// PodLogPath is the log file of container in a backed Pod:
// <state>/pods/<namespace>/<pod>/<container>.log, in the kubelet's format.
func (s *Stack) PodLogPath(namespace, pod, container string) string {
	return podLogPath(s.stateDir, namespace, pod, container)
}

func podLogPath(state, namespace, pod, container string) string {
	return filepath.Join(podDir(state, namespace, pod), container+".log")
}

// podDir is the directory of a backed Pod in the state directory.
func podDir(state, namespace, pod string) string {
	return filepath.Join(state, "pods", namespace, pod)
}

// startContainerProcess starts binary from bin/ as the process of a Pod's
// container, appending its output to logPath (see PodLogPath) in the
// kubelet's log format.
func startContainerProcess(binary, logPath string, args, env []string) (*testenv.Process, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	l := newCRILog(f, time.Now)
	return testenv.StartProcessTo(binary, testenv.ProcessOutput{LogPath: logPath, Stdout: l.stdout, Stderr: l.stderr, Closer: l}, args, env)
}

// criLog writes a process's standard output and error into one file in the
// kubelet's container log format (the CRI format: "<RFC 3339 time>
// <stdout|stderr> <F|P> <text>", F ending a line, P a part of a longer one),
// which is what kwok's server reads for `kubectl logs`.
type criLog struct {
	mu             sync.Mutex
	w              io.WriteCloser
	now            func() time.Time
	stdout, stderr *criStream
}

// maxCRILine is the longest text of one log entry; a longer line is split
// into partial (P) entries, as the kubelet does.
const maxCRILine = 16 << 10

func newCRILog(w io.WriteCloser, now func() time.Time) *criLog {
	l := &criLog{w: w, now: now}
	l.stdout = &criStream{log: l, name: "stdout"}
	l.stderr = &criStream{log: l, name: "stderr"}
	return l
}

// Close writes what is left of an unfinished last line of either stream
// and closes the file.
func (l *criLog) Close() error {
	l.stdout.flush()
	l.stderr.flush()
	return l.w.Close()
}

func (l *criLog) entry(stream, tag string, text []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = fmt.Fprintf(l.w, "%s %s %s %s\n", l.now().UTC().Format(time.RFC3339Nano), stream, tag, text)
}

// criStream is one stream of a criLog; exec.Cmd writes each stream from
// one goroutine.
type criStream struct {
	log  *criLog
	name string
	buf  []byte
}

func (s *criStream) Write(p []byte) (int, error) {
	s.buf = append(s.buf, p...)
	for {
		i := bytes.IndexByte(s.buf, '\n')
		switch {
		case i >= 0 && i <= maxCRILine:
			s.log.entry(s.name, "F", s.buf[:i])
			s.buf = s.buf[i+1:]
		case len(s.buf) > maxCRILine:
			s.log.entry(s.name, "P", s.buf[:maxCRILine])
			s.buf = s.buf[maxCRILine:]
		default:
			return len(p), nil
		}
	}
}

func (s *criStream) flush() {
	if len(s.buf) > 0 {
		s.log.entry(s.name, "F", s.buf)
		s.buf = nil
	}
}

// podIO keeps a kwok Logs and Exec object for every backed Pod.
type podIO struct {
	c     client.Client
	state string
	logf  func(format string, args ...any)

	cancel context.CancelFunc
	done   chan struct{}
}

// startPodIO starts podIO against the stack's API server.
func (s *Stack) startPodIO() error {
	cs, err := kubernetes.NewForConfig(s.Env.Config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	pio := &podIO{c: s.Env.Client, state: s.stateDir, logf: s.step, cancel: cancel, done: make(chan struct{})}
	// Every event of a backed Pod, and the resync, reads its Logs and Exec
	// and writes them if they differ: a failed or undone write is repaired.
	factory := informers.NewSharedInformerFactory(cs, 30*time.Second)
	informer := factory.Core().V1().Pods().Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { pio.sync(ctx, o) },
		UpdateFunc: func(_, o any) { pio.sync(ctx, o) },
	}); err != nil {
		cancel()
		return err
	}
	factory.Start(ctx.Done())
	go func() {
		defer close(pio.done)
		<-ctx.Done()
		factory.Shutdown()
	}()
	s.podIO = pio
	return nil
}

func (pio *podIO) stop() {
	pio.cancel()
	<-pio.done
}

// sync writes the Logs and Exec of a backed Pod.
func (pio *podIO) sync(ctx context.Context, o any) {
	p, ok := o.(*corev1.Pod)
	if !ok || p.Annotations[VMStorageEndpointAnnotation] == "" || p.DeletionTimestamp != nil {
		return
	}
	workDir := p.Annotations[VMStorageDataPathAnnotation]
	if workDir == "" {
		workDir = podDir(pio.state, p.Namespace, p.Name)
	}
	if err := pio.write(ctx, p, workDir); err != nil {
		pio.logf("kubectl logs/exec: Pod %s/%s: %v", p.Namespace, p.Name, err)
	}
}

func (pio *podIO) write(ctx context.Context, p *corev1.Pod, workDir string) error {
	if err := os.MkdirAll(podDir(pio.state, p.Namespace, p.Name), 0o755); err != nil {
		return err
	}
	// The Pod of this UID owns both: the garbage collector deletes them
	// with it, and a Pod re-created under the same name takes them over.
	owner := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID}}
	logs := &kwokv1.Logs{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}
	if _, err := controllerutil.CreateOrUpdate(ctx, pio.c, logs, func() error {
		logs.OwnerReferences, logs.Spec = owner, podLogsSpec(pio.state, p)
		return nil
	}); err != nil {
		return fmt.Errorf("writing its kwok Logs: %w", err)
	}
	exec := &kwokv1.Exec{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}
	if _, err := controllerutil.CreateOrUpdate(ctx, pio.c, exec, func() error {
		exec.OwnerReferences, exec.Spec = owner, podExecSpec(p, workDir)
		return nil
	}); err != nil {
		return fmt.Errorf("writing its kwok Exec: %w", err)
	}
	// Port-forwards through the API server (kubectl port-forward, the
	// REST API's diagnostics bundle) reach the process's local ports.
	pf := &kwokv1.PortForward{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}
	if _, err := controllerutil.CreateOrUpdate(ctx, pio.c, pf, func() error {
		pf.OwnerReferences, pf.Spec = owner, podPortForwardSpec(p.Annotations[PortsAnnotation])
		return nil
	}); err != nil {
		return fmt.Errorf("writing its kwok PortForward: %w", err)
	}
	return nil
}

// podPortForwardSpec forwards each container port of the Pod's ports
// annotation ("8482=127.0.0.1:40001,...") to its local address.
func podPortForwardSpec(ports string) kwokv1.PortForwardSpec {
	spec := kwokv1.PortForwardSpec{Forwards: []kwokv1.Forward{}}
	for _, entry := range strings.Split(ports, ",") {
		port, addr, ok := strings.Cut(entry, "=")
		host, local, ok2 := strings.Cut(addr, ":")
		p, err := strconv.ParseInt(port, 10, 32)
		l, err2 := strconv.ParseInt(local, 10, 32)
		if !ok || !ok2 || err != nil || err2 != nil {
			continue
		}
		spec.Forwards = append(spec.Forwards, kwokv1.Forward{Ports: []int32{int32(p)}, Target: &kwokv1.ForwardTarget{Port: int32(l), Address: host}})
	}
	return spec
}

// podLogsSpec names the log file of each of the Pod's containers.
func podLogsSpec(state string, p *corev1.Pod) kwokv1.LogsSpec {
	spec := kwokv1.LogsSpec{Logs: []kwokv1.Log{}}
	for _, c := range p.Spec.Containers {
		spec.Logs = append(spec.Logs, kwokv1.Log{
			Containers: []string{c.Name},
			LogsFile:   ptr.To(podLogPath(state, p.Namespace, p.Name, c.Name)),
		})
	}
	return spec
}

// podExecSpec runs `kubectl exec` commands of every container locally, in
// workDir.
func podExecSpec(p *corev1.Pod, workDir string) kwokv1.ExecSpec {
	return kwokv1.ExecSpec{Execs: []kwokv1.ExecTarget{{Local: &kwokv1.ExecTargetLocal{
		WorkDir: workDir,
		Envs:    []kwokv1.EnvVar{{Name: "POD_NAME", Value: p.Name}, {Name: "POD_NAMESPACE", Value: p.Namespace}},
	}}}}
}
