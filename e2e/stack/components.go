package stack

import (
	"context"
	"fmt"
	"path/filepath"
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
// annotations).
func (s *Stack) StartOperator(ctx context.Context) error {
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
	p, err := testenv.StartProcess("ops-operator", s.logDir, append([]string{
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
	}, OperatorArgs...), []string{"KUBECONFIG=" + s.Env.KubeconfigPath})
	if err != nil {
		return err
	}
	s.Operator = p
	s.OperatorMetricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics)
	return p.WaitHTTPOK(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", health), time.Minute)
}

// StopOperator kills ops-operator (SIGKILL: as a crash would).
func (s *Stack) StopOperator() {
	if s.Operator != nil {
		_ = s.Operator.Kill()
		s.Operator = nil
	}
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
// proxy (LocalEndpoints).
func (s *Stack) StartAPIServer(ctx context.Context, addr string) error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	if err := s.issueToken(ctx); err != nil {
		return err
	}
	repoAddr := s.chartRepoAddr
	if repoAddr == "" {
		repoPort, err := testenv.FreePort()
		if err != nil {
			return err
		}
		repoAddr = fmt.Sprintf("127.0.0.1:%d", repoPort)
	}
	p, err := testenv.StartProcess("ops-apiserver", s.logDir, append([]string{
		"--listen-address=" + addr,
		"--kubeconfig=" + s.Env.KubeconfigPath,
		"--namespace=observability",
		// Every chart of deploy/charts: vmcluster for the REST API, the
		// default stack's charts for ObservabilityStacks.
		"--chart-dir=" + filepath.Join(root, "deploy", "charts"),
		"--local-repository-listen-address=" + repoAddr,
		"--log-format=console",
		"--enable-mock-cloud",
		"--backup-fs-roots=" + s.BackupRoot(),
		"--backup-destination=fs://" + s.BackupRoot(),
		// The default; said here because the stories restore.
		"--restores-enabled",
	}, append(LocalEndpoints(s.ServicesURL()), s.apiServerArgs...)...), nil)
	if err != nil {
		return err
	}
	s.APIServer = p
	s.APIURL = "http://" + addr
	return p.WaitHTTPOK(ctx, s.APIURL+"/readyz", 2*time.Minute)
}

// StopAPIServer kills ops-apiserver (SIGKILL: as a crash would).
func (s *Stack) StopAPIServer() {
	if s.APIServer != nil {
		_ = s.APIServer.Kill()
		s.APIServer = nil
	}
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
