package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

// The local stack's HA mode (Options.Replicas 2, `OPS_REPLICAS=2 make
// dev`): two ops-apiservers, two Flux pairs and two ops-operators, the
// controllers leader-elected with short leases so a failover takes
// seconds (see docs/ha-local.md).
const (
	// LeaseDuration is how long a standby waits after the leader's last
	// renewal before it takes a Lease over: a SIGKILLed leader is
	// replaced within about LeaseDuration + RetryPeriod.
	LeaseDuration = 6 * time.Second
	// RenewDeadline is how long a leader retries renewing before it
	// gives up its leadership (and exits).
	RenewDeadline = 4 * time.Second
	// RetryPeriod is the wait between tries to acquire or renew.
	RetryPeriod = time.Second
)

// OperatorLease is the name of ops-operator's leader election Lease (in
// Namespace): its --leader-election-id.
const OperatorLease = "ops-operator.ops.observability.tidbcloud.com"

// HAOperatorArgs are the ops-operator flags the HA mode adds (after
// OperatorArgs: they win): leader election on, its Lease in Namespace,
// the short timings.
var HAOperatorArgs = []string{
	"--leader-elect=true",
	"--leader-election-id=" + OperatorLease,
	"--leader-election-namespace=" + Namespace,
	"--leader-election-lease-duration=" + LeaseDuration.String(),
	"--leader-election-renew-deadline=" + RenewDeadline.String(),
	"--leader-election-retry-period=" + RetryPeriod.String(),
}

// FluxShardSelector is the --watch-label-selector of the stack's Flux
// pairs: ops-server's shard, as the chart runs the sidecars (flux.shard).
var FluxShardSelector = opsv1.FluxShardLabel + "=" + opsv1.DefaultFluxShard

// FluxLeases are the names of the Leases (in Namespace) the stack's
// source-controllers and helm-controllers elect their leaders with in HA
// mode.
func FluxLeases() (source, helm string) { return testenv.FluxLeaseNames(FluxShardSelector) }

// ProcessesFile is the file in the state directory listing the stack's
// processes (Processes), rewritten whenever one starts or is killed.
const ProcessesFile = "processes.json"

// ProcessList is the content of ProcessesFile.
type ProcessList struct {
	// Replicas is the number of ops-apiservers, Flux pairs and
	// ops-operators the stack runs.
	Replicas  int           `json:"replicas"`
	Updated   time.Time     `json:"updated"`
	Processes []ProcessInfo `json:"processes"`
}

// ProcessInfo is one running process of the stack.
type ProcessInfo struct {
	// Name is unique: the component with its replica's number in HA mode
	// (ops-operator-1), the component otherwise.
	Name      string `json:"name"`
	Component string `json:"component"`
	Replica   int    `json:"replica"`
	PID       int    `json:"pid"`
	// Ports by use (http, metrics, health, storage).
	Ports map[string]int `json:"ports,omitempty"`
	// URL is an ops-apiserver's REST API.
	URL string `json:"url,omitempty"`
	// Lease is the "<namespace>/<name>" of the leader election Lease the
	// process takes part in (HA mode).
	Lease string `json:"lease,omitempty"`
	// Identity is the process's leader election identity: the Lease's
	// holderIdentity reads "<Identity>_<uuid>" while it leads.
	Identity string `json:"identity,omitempty"`
	Log      string `json:"log,omitempty"`
}

// registry is what ProcessesFile lists.
type registry struct {
	mu    sync.Mutex
	procs map[string]registered
}

type registered struct {
	info ProcessInfo
	proc *testenv.Process
}

// HA reports whether the stack runs in HA mode.
func (s *Stack) HA() bool { return s.replicas > 1 }

// Replicas is the number of ops-apiservers, Flux pairs and ops-operators
// (Options.Replicas, at least 1).
func (s *Stack) Replicas() int { return max(s.replicas, 1) }

// replicaName names replica i of a component in HA mode.
func replicaName(component string, i int) string {
	return component + "-" + strconv.Itoa(i)
}

// replicaLogDir is where replica i of a component logs: the log directory
// for replica 0, its replica-<i> subdirectory for the others.
func (s *Stack) replicaLogDir(i int) string {
	if i == 0 {
		return s.logDir
	}
	dir := filepath.Join(s.logDir, "replica-"+strconv.Itoa(i))
	_ = os.MkdirAll(dir, 0o755)
	return dir
}

// replicaAddrs are n listen addresses: first, then the next free ports
// after its port on its host.
func replicaAddrs(first string, n int) ([]string, error) {
	host, port, err := net.SplitHostPort(first)
	if err != nil {
		return nil, err
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, err
	}
	addrs := []string{first}
	for next := p + 1; len(addrs) < n && next < 65536; next++ {
		a := net.JoinHostPort(host, strconv.Itoa(next))
		ln, err := net.Listen("tcp", a)
		if err != nil {
			continue
		}
		_ = ln.Close()
		addrs = append(addrs, a)
	}
	if len(addrs) < n {
		return nil, fmt.Errorf("no free port after %s", first)
	}
	return addrs, nil
}

// register records a started process and rewrites ProcessesFile.
func (s *Stack) register(info ProcessInfo, p *testenv.Process) {
	info.PID, info.Log = p.Pid(), p.LogPath
	if !s.HA() && info.Replica == 0 {
		info.Name = info.Component
	}
	s.reg.mu.Lock()
	if s.reg.procs == nil {
		s.reg.procs = map[string]registered{}
	}
	s.reg.procs[info.Name] = registered{info: info, proc: p}
	s.reg.mu.Unlock()
	s.writeProcesses()
}

// unregister forgets a killed process and rewrites ProcessesFile.
func (s *Stack) unregister(name string) {
	s.reg.mu.Lock()
	delete(s.reg.procs, name)
	if !s.HA() {
		// Outside HA mode the process is listed by its component's name.
		delete(s.reg.procs, name[:strings.LastIndex(name, "-")])
	}
	s.reg.mu.Unlock()
	s.writeProcesses()
}

// ProcessList lists the running processes: those registered (ops-apiserver,
// ops-operator, Flux) and the control plane's helpers.
func (s *Stack) ProcessList() ProcessList {
	l := ProcessList{Replicas: s.Replicas(), Updated: time.Now().UTC()}
	s.reg.mu.Lock()
	for _, r := range s.reg.procs {
		if !r.proc.Exited() {
			l.Processes = append(l.Processes, r.info)
		}
	}
	s.reg.mu.Unlock()
	for _, p := range s.procs {
		if !p.Exited() {
			l.Processes = append(l.Processes, ProcessInfo{Name: p.Name, Component: p.Name, PID: p.Pid(), Log: p.LogPath})
		}
	}
	sort.Slice(l.Processes, func(i, j int) bool { return l.Processes[i].Name < l.Processes[j].Name })
	return l
}

// writeProcesses rewrites ProcessesFile (atomically: a reader sees the
// old or the new list).
func (s *Stack) writeProcesses() {
	b, err := json.MarshalIndent(s.ProcessList(), "", "  ")
	if err != nil {
		return
	}
	path := filepath.Join(s.stateDir, ProcessesFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		fmt.Fprintln(s.out, "writing", path+":", err)
		return
	}
	if err := os.Rename(tmp, path); err != nil {
		fmt.Fprintln(s.out, "writing", path+":", err)
	}
}

// ReadProcesses reads the ProcessesFile of a stack's state directory (of a
// stack running in another process, e.g. `make dev`'s).
func ReadProcesses(stateDir string) (ProcessList, error) {
	var l ProcessList
	b, err := os.ReadFile(filepath.Join(stateDir, ProcessesFile))
	if err != nil {
		return l, err
	}
	return l, json.Unmarshal(b, &l)
}

// LeaderOf returns the running process that holds the leader election
// Lease name (in Namespace; "<namespace>/<name>" for another namespace):
// the Lease's holderIdentity is "<Identity>_<uuid>" of one process of
// ProcessesFile. An error when the Lease does not exist, has no holder,
// or its holder is no running process (a killed leader's Lease until a
// standby takes it over).
func (s *Stack) LeaderOf(ctx context.Context, name string) (ProcessInfo, error) {
	ns := Namespace
	if i := strings.Index(name, "/"); i >= 0 {
		ns, name = name[:i], name[i+1:]
	}
	lease := &coordinationv1.Lease{}
	if err := s.Env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, lease); err != nil {
		return ProcessInfo{}, err
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	if holder == "" {
		return ProcessInfo{}, fmt.Errorf("lease %s/%s has no holder", ns, name)
	}
	for _, p := range s.ProcessList().Processes {
		if p.Identity != "" && p.Lease == ns+"/"+name && strings.HasPrefix(holder, p.Identity+"_") {
			return p, nil
		}
	}
	return ProcessInfo{}, fmt.Errorf("lease %s/%s is held by %q, no running process of the stack", ns, name, holder)
}

// Find returns the process of that name.
func (l ProcessList) Find(name string) (ProcessInfo, bool) {
	for _, p := range l.Processes {
		if p.Name == name {
			return p, true
		}
	}
	return ProcessInfo{}, false
}

// startFluxPair starts Flux pair i (leader-elected in HA mode) and records
// it.
func (s *Stack) startFluxPair(ctx context.Context, i int) error {
	opts := testenv.FluxOptions{LabelSelector: FluxShardSelector}
	identity := ""
	if s.HA() {
		identity = replicaName("flux", i)
		if i > 0 {
			opts.Name = identity
		}
		opts.LeaderElection = &testenv.FluxLeaderElection{
			Namespace: Namespace, Identity: identity,
			LeaseDuration: LeaseDuration, RenewDeadline: RenewDeadline, RetryPeriod: RetryPeriod,
		}
	}
	f, err := s.Env.StartFlux(ctx, opts)
	if err != nil {
		return err
	}
	for len(s.FluxPairs) <= i {
		s.FluxPairs = append(s.FluxPairs, nil)
	}
	s.FluxPairs[i] = f
	if i == 0 {
		s.Flux = f
	}
	sourceLease, helmLease := FluxLeases()
	port := func(addr string) int {
		_, p, _ := net.SplitHostPort(addr)
		n, _ := strconv.Atoi(p)
		return n
	}
	src := ProcessInfo{Name: replicaName("source-controller", i), Component: "source-controller", Replica: i, Identity: identity,
		Ports: map[string]int{"storage": port(f.StorageAddr), "metrics": port(f.SourceMetricsAddr), "health": port(f.SourceHealthAddr)}}
	helm := ProcessInfo{Name: replicaName("helm-controller", i), Component: "helm-controller", Replica: i, Identity: identity,
		Ports: map[string]int{"metrics": port(f.HelmMetricsAddr), "health": port(f.HelmHealthAddr)}}
	if s.HA() {
		src.Lease, helm.Lease = Namespace+"/"+sourceLease, Namespace+"/"+helmLease
	}
	s.register(src, f.Source)
	s.register(helm, f.Helm)
	return nil
}

// StartFluxPair starts Flux pair i again (after KillFluxPair or
// KillFluxProcess).
func (s *Stack) StartFluxPair(ctx context.Context, i int) error {
	s.KillFluxPair(i)
	return s.startFluxPair(ctx, i)
}

// KillFluxPair kills both controllers of Flux pair i (SIGKILL).
func (s *Stack) KillFluxPair(i int) {
	if i >= len(s.FluxPairs) || s.FluxPairs[i] == nil {
		return
	}
	f := s.FluxPairs[i]
	_ = f.Source.Kill()
	_ = f.Helm.Kill()
	s.FluxPairs[i] = nil
	if i == 0 {
		s.Flux = nil
	}
	s.unregister(replicaName("source-controller", i))
	s.unregister(replicaName("helm-controller", i))
}

// chartProxy serves the local chart repository's one address from any
// live ops-apiserver replica's own (HA mode), as a Service would: each
// connection goes to the first replica that accepts it.
type chartProxy struct {
	ln       net.Listener
	mu       sync.Mutex
	backends map[int]string
}

func (s *Stack) startChartProxy() error {
	if s.chartProxy != nil {
		return nil
	}
	ln, err := net.Listen("tcp", s.chartRepoAddr)
	if err != nil {
		return fmt.Errorf("chart repository proxy: %w", err)
	}
	p := &chartProxy{ln: ln, backends: map[int]string{}}
	go p.serve()
	s.chartProxy = p
	return nil
}

// set makes addr replica i's repository ("" when it does not run).
func (p *chartProxy) set(i int, addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if addr == "" {
		delete(p.backends, i)
	} else {
		p.backends[i] = addr
	}
}

func (p *chartProxy) addrs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	keys := make([]int, 0, len(p.backends))
	for k := range p.backends {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, p.backends[k])
	}
	return out
}

func (p *chartProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

func (p *chartProxy) handle(c net.Conn) {
	defer c.Close()
	var b net.Conn
	for _, a := range p.addrs() {
		if conn, err := net.DialTimeout("tcp", a, 2*time.Second); err == nil {
			b = conn
			break
		}
	}
	if b == nil {
		return // no replica: the client sees the connection closed
	}
	defer b.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(b, c); closeWrite(b); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, b); closeWrite(c); done <- struct{}{} }()
	<-done
	<-done
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

func (p *chartProxy) stop() { _ = p.ln.Close() }

// ProcessesPath is the stack's ProcessesFile.
func (s *Stack) ProcessesPath() string { return filepath.Join(s.stateDir, ProcessesFile) }

// KillFluxController kills one controller of Flux pair i (SIGKILL):
// component is source-controller or helm-controller. StartFluxPair starts
// the pair whole again.
func (s *Stack) KillFluxController(i int, component string) {
	if i >= len(s.FluxPairs) || s.FluxPairs[i] == nil {
		return
	}
	f := s.FluxPairs[i]
	switch component {
	case "source-controller":
		_ = f.Source.Kill()
	case "helm-controller":
		_ = f.Helm.Kill()
	default:
		return
	}
	s.unregister(replicaName(component, i))
}
