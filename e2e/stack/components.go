package stack

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

// OperatorArgs are the ops-operator flags of the local stack: no leader
// election (it is killed and restarted by the e2e suite), quick polls and a
// few seconds per simulated cloud operation.
var OperatorArgs = []string{
	"--leader-elect=false",
	"--enable-mock-cloud",
	"--poll-interval=1s",
	"--retry-interval=1s",
	"--mock-operation-duration=2s",
	"--drain-timeout=5m",
	"--backup-poll-interval=1s",
	"--zap-log-level=info",
}

// StartOperator starts ops-operator from bin/ (built by `make build`), and
// with it, unless it runs, the backer: kwok Pods run no process, so the
// stack runs a real vmstorage, vminsert or vmselect on 127.0.0.1 for each
// of their Pods, and ops-operator backs vmstorage up in local mode
// (vmbackup from bin/ as its own child process, endpoints from the Pods'
// annotations). In HA mode (Options.Replicas 2) it starts every replica
// not running, each leader-elected (HAOperatorArgs).
func (s *Stack) StartOperator(ctx context.Context) error {
	for i := range s.Replicas() {
		if i < len(s.Operators) && s.Operators[i] != nil {
			continue
		}
		if err := s.StartOperatorReplica(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// StartOperatorReplica starts ops-operator replica i (0 unless HA mode),
// e.g. again after KillOperator(i).
func (s *Stack) StartOperatorReplica(ctx context.Context, i int) error {
	if err := s.startBacker(); err != nil {
		return fmt.Errorf("starting the backer: %w", err)
	}
	if err := s.startRestoreJobs(); err != nil {
		return fmt.Errorf("starting the vmrestore Job backer: %w", err)
	}
	vmbackup, err := testenv.Binary("vmbackup")
	if err != nil {
		return err
	}
	metrics, err := testenv.FreePort()
	if err != nil {
		return err
	}
	health, err := testenv.FreePort()
	if err != nil {
		return err
	}
	args := append(append([]string{
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", metrics),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", health),
		"--backup-runner=local",
		"--backup-local-state-dir=" + filepath.Join(s.stateDir, "vmbackup"),
		"--backup-local-storage-root=" + s.VMStorageRoot(),
		"--backup-fs-roots=" + s.BackupRoot(),
		"--vmbackup-binary=" + vmbackup,
		// ObservabilityStacks install from the charts ops-apiserver serves.
		"--bootstrap-chart-repository=http://" + s.chartRepoAddr,
		"--bootstrap-poll-interval=2s",
		// Restores run as in a real cluster: vmrestore Jobs (run by
		// vmrestore.go) and the ops-hold ConfigMap hold (vmstorage.go).
		"--restore-runner=job",
	}, OperatorArgs...), s.operatorArgs...)
	var wrapper []string
	identity, lease := "", ""
	if s.HA() {
		// Later flags win: leader election on, with the local timings.
		args = append(args, HAOperatorArgs...)
		identity, lease = replicaName("ops-operator", i), Namespace+"/"+OperatorLease
		wrapper = testenv.Isolated(identity, "")
	}
	p, err := testenv.StartProcessWrapped("ops-operator", s.replicaLogDir(i), wrapper, args, []string{"KUBECONFIG=" + s.Env.KubeconfigPath})
	if err != nil {
		return err
	}
	for len(s.Operators) <= i {
		s.Operators = append(s.Operators, nil)
	}
	s.Operators[i] = p
	if i == 0 {
		s.Operator = p
		s.OperatorMetricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics)
	}
	s.register(ProcessInfo{
		Name: replicaName("ops-operator", i), Component: "ops-operator", Replica: i,
		Ports: map[string]int{"metrics": metrics, "health": health}, Lease: lease, Identity: identity,
	}, p)
	return p.WaitHTTPOK(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", health), time.Minute)
}

// StopOperator kills every ops-operator replica (SIGKILL: as a crash
// would).
func (s *Stack) StopOperator() {
	for i := range s.Operators {
		s.KillOperator(i)
	}
}

// KillOperator kills ops-operator replica i (SIGKILL: as a crash would).
func (s *Stack) KillOperator(i int) {
	if i >= len(s.Operators) || s.Operators[i] == nil {
		return
	}
	_ = s.Operators[i].Kill()
	s.Operators[i] = nil
	if i == 0 {
		s.Operator = nil
	}
	s.unregister(replicaName("ops-operator", i))
}

// BackupRoot is the one directory fs:// backups of the local stack may be
// written under (--backup-fs-roots of both binaries), in the state
// directory; it is also the stack's default backup destination.
func (s *Stack) BackupRoot() string { return filepath.Join(s.stateDir, "backups") }

// RestoreStartsLog is the file where the stack records every vmrestore it
// starts for a vmrestore Job Pod, one "<namespace>/<Job name>" line each
// (the Job is named by the replica's run id), across operator restarts
// (vmrestore.go).
func (s *Stack) RestoreStartsLog() string {
	return filepath.Join(s.stateDir, "vmrestore-starts.log")
}

// VMStorageStartsLog is the file where the stack records every vmstorage
// process it starts for a Pod, one "<namespace>/<pod> <pod UID>" line
// each (backer.go run).
func (s *Stack) VMStorageStartsLog() string {
	return filepath.Join(s.stateDir, "vmstorage-starts.log")
}

// APIAddress is where the local stack serves the REST API.
const APIAddress = "127.0.0.1:8080"

// StartAPIServer starts ops-apiserver from bin/ (built by `make build`) on
// addr, serving the charts of deploy/charts as the baked-in charts.
// Once the backer runs, the vmclusters' endpoints point at the Service
// proxy (LocalEndpoints). In HA mode it starts every replica not running:
// replica 0 on addr, each other one on the next free port after it
// (APIURLs).
func (s *Stack) StartAPIServer(ctx context.Context, addr string) error {
	if len(s.apiAddrs) == 0 || s.apiAddrs[0] != addr {
		addrs, err := replicaAddrs(addr, s.Replicas())
		if err != nil {
			return err
		}
		s.apiAddrs = addrs
		s.APIURLs = make([]string, len(addrs))
		for i, a := range addrs {
			s.APIURLs[i] = "http://" + a
		}
	}
	for i := range s.Replicas() {
		if i < len(s.APIServers) && s.APIServers[i] != nil {
			continue
		}
		if err := s.StartAPIServerReplica(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// StartAPIServerReplica starts ops-apiserver replica i on APIURLs[i]
// (after StartAPIServer), e.g. again after KillAPIServer(i).
func (s *Stack) StartAPIServerReplica(ctx context.Context, i int) error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	if err := s.issueToken(ctx); err != nil {
		return err
	}
	addr := s.apiAddrs[i]
	repoAddr := s.chartRepoAddr
	if repoAddr == "" {
		repoPort, err := testenv.FreePort()
		if err != nil {
			return err
		}
		repoAddr = fmt.Sprintf("127.0.0.1:%d", repoPort)
	}
	repoArgs := []string{"--local-repository-listen-address=" + repoAddr}
	if s.HA() {
		// Each replica serves the charts on a port of its own; the
		// HelmRepositories keep the one address the stack's chart proxy
		// serves from any live replica (as a Service would).
		port, err := testenv.FreePort()
		if err != nil {
			return err
		}
		own := fmt.Sprintf("127.0.0.1:%d", port)
		repoArgs = []string{"--local-repository-listen-address=" + own, "--local-repository-url=http://" + repoAddr}
		if err := s.startChartProxy(); err != nil {
			return err
		}
		s.chartProxy.set(i, own)
	}
	p, err := testenv.StartProcess("ops-apiserver", s.replicaLogDir(i), append(append([]string{
		"--listen-address=" + addr,
		"--kubeconfig=" + s.Env.KubeconfigPath,
		"--namespace=observability",
		// Every chart of deploy/charts: vmcluster for the REST API, the
		// default stack's charts for ObservabilityStacks.
		"--chart-dir=" + filepath.Join(root, "deploy", "charts"),
		"--log-format=console",
		"--enable-mock-cloud",
		"--backup-fs-roots=" + s.BackupRoot(),
		"--backup-destination=fs://" + s.BackupRoot(),
		// The default; said here because the stories restore.
		"--restores-enabled",
	}, repoArgs...), append(LocalEndpoints(s.ServicesURL()), s.apiServerArgs...)...), nil)
	if err != nil {
		return err
	}
	for len(s.APIServers) <= i {
		s.APIServers = append(s.APIServers, nil)
	}
	s.APIServers[i] = p
	if i == 0 {
		s.APIServer = p
		s.APIURL = s.APIURLs[0]
	}
	_, port, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(port)
	s.register(ProcessInfo{Name: replicaName("ops-apiserver", i), Component: "ops-apiserver", Replica: i, Ports: map[string]int{"http": n}, URL: s.APIURLs[i]}, p)
	return p.WaitHTTPOK(ctx, s.APIURLs[i]+"/readyz", 2*time.Minute)
}

// StopAPIServer kills every ops-apiserver replica (SIGKILL: as a crash
// would).
func (s *Stack) StopAPIServer() {
	for i := range s.APIServers {
		s.KillAPIServer(i)
	}
}

// KillAPIServer kills ops-apiserver replica i (SIGKILL: as a crash would).
func (s *Stack) KillAPIServer(i int) {
	if i >= len(s.APIServers) || s.APIServers[i] == nil {
		return
	}
	_ = s.APIServers[i].Kill()
	s.APIServers[i] = nil
	if i == 0 {
		s.APIServer = nil
	}
	if s.chartProxy != nil {
		s.chartProxy.set(i, "")
	}
	s.unregister(replicaName("ops-apiserver", i))
}

// LocalEndpoints are the ops-apiserver flags that make a vmcluster's
// endpoints the Service proxy's URLs of its vmselect and vminsert Services
// (none when base is ""): the defaults of DefaultEndpoints in
// apiserver/internal/config, reachable from the host.
func LocalEndpoints(base string) []string {
	if base == "" {
		return nil
	}
	return []string{
		"--chart-endpoint=prometheus=" + base + "/{{.Namespace}}/vmselect-{{.Release}}/select/0/prometheus",
		"--chart-endpoint=remote_write=" + base + "/{{.Namespace}}/vminsert-{{.Release}}/insert/0/prometheus/api/v1/write",
	}
}

// componentNames lists the components' names, for progress lines.
func componentNames(cs []opsv1.StackComponent) string {
	names := make([]string, 0, len(cs))
	for _, c := range cs {
		names = append(names, c.Name)
	}
	return strings.Join(names, ", ")
}
