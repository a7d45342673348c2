package bench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsclient "github.com/tidbcloud/ops-server/apiserver/pkg/client"

	"github.com/tidbcloud/ops-server/e2e/stack"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

// Config sizes a run. Every size is a flag of ops-bench.
type Config struct {
	// StateDir holds the stack's state and logs.
	StateDir string
	// Out receives progress lines.
	Out io.Writer

	// Read and write path.
	VMClusters      int
	Upgrades        int
	UpgradeClusters int
	Clients         int
	Duration        time.Duration
	Warmup          time.Duration
	WriteSerial     int
	// Repeats is the number of runs per side of each ratio row (the read
	// rows and the concurrent write rows), alternating sides; a row
	// reports the medians.
	Repeats int

	// Cost curve: vmcluster counts (ascending; none skips it) and the
	// list run at each.
	ScaleSizes    []int
	ScaleDuration time.Duration

	// Time to RUNNING: releases per side, one run per size (none skips it).
	RunningSizes   []int
	RunningTimeout time.Duration

	// Operator throughput.
	OperatorOps     int
	OperatorNodes   int
	OperatorTimeout time.Duration
	// OperatorExtraArgs are more ops-operator flags for its run (later
	// flags win), e.g. --concurrent=16 to measure another setting.
	OperatorExtraArgs []string

	// ProfileDir receives the profiles of ops-apiserver and ops-operator
	// ("" takes none).
	ProfileDir string
}

// DefaultConfig is the run of `make bench`: the sizes of issue #12.
func DefaultConfig() Config {
	return Config{
		VMClusters: 1000, Upgrades: 1000, UpgradeClusters: 1000, Clients: 32,
		Duration: 10 * time.Second, Warmup: time.Second, WriteSerial: 50, Repeats: 3,
		ScaleSizes: []int{1000, 5000, 10000}, ScaleDuration: 5 * time.Second,
		// 100 and 300 releases per side do not fit in the ~30 minutes of
		// `make bench` on a 2-core machine (docs/benchmarks.md, section 4).
		RunningSizes: []int{50, 100}, RunningTimeout: 5 * time.Minute,
		OperatorOps: 200, OperatorNodes: 1, OperatorTimeout: 4 * time.Minute,
		ProfileDir: filepath.Join("bin", "bench-profiles"),
	}
}

// Validate reports a configuration that cannot run.
func (c Config) Validate() error {
	var errs []error
	if c.VMClusters < 1 || c.Upgrades < 1 || c.UpgradeClusters < 1 || c.Clients < 1 {
		errs = append(errs, errors.New("vmclusters, upgrades, upgrade-clusters and clients must be at least 1"))
	}
	if c.UpgradeClusters < c.Upgrades {
		// A cluster has at most one active upgrade operation: the API
		// answers a second one 409.
		errs = append(errs, errors.New("upgrade-clusters must be at least upgrades (one active operation per cluster)"))
	}
	if c.Duration <= 0 || c.Warmup < 0 {
		errs = append(errs, errors.New("duration must be positive and warmup not negative"))
	}
	if c.WriteSerial < 0 || c.OperatorOps < 0 || c.OperatorNodes < 0 {
		errs = append(errs, errors.New("write-serial, operator-ops and operator-nodes must not be negative"))
	}
	if c.Repeats < 1 {
		errs = append(errs, errors.New("repeats must be at least 1"))
	}
	if c.Repeats > 1 && min(c.VMClusters, c.Upgrades)-1-min(c.WriteSerial, c.VMClusters, c.Upgrades) < c.Repeats {
		errs = append(errs, errors.New("too few vmclusters or upgrades for the concurrent creates to be split into repeats runs"))
	}
	for _, n := range c.RunningSizes {
		if n < 1 || n > 999 {
			errs = append(errs, fmt.Errorf("running sizes are 1 to 999, not %d", n))
		}
	}
	if c.OperatorOps > 999 {
		errs = append(errs, errors.New("operator-ops is at most 999"))
	}
	for i, n := range c.ScaleSizes {
		if n < 1 || n > 99999 {
			errs = append(errs, fmt.Errorf("scale sizes are 1 to 99999, not %d", n))
		}
		if i > 0 && n <= c.ScaleSizes[i-1] {
			errs = append(errs, errors.New("scale sizes must be ascending"))
		}
	}
	if len(c.ScaleSizes) > 0 && c.ScaleDuration <= 0 {
		errs = append(errs, errors.New("scale-duration must be positive"))
	}
	return errors.Join(errs...)
}

// namespaceDirect holds the objects written straight to kube-apiserver
// in the write path: ops-apiserver does not watch it.
const namespaceDirect = "bench-direct"

// env is a running stack and the clients of both sides.
type env struct {
	cfg    Config
	st     *stack.Stack
	binDir string
	// kube is an uncached client without a client-side rate limit.
	kube client.Client
	// ops and kubeAPI send raw HTTP requests to each server: the timed
	// reads of both servers go through the same plain path.
	ops     target
	kubeAPI target
	// opsAPI is the generated Go client of the REST API, on ops's HTTP
	// client: writes, deletes and the listings that wait for readiness.
	opsAPI *opsclient.Client
	// apiPID is ops-apiserver's process.
	apiPID int
	// apiProf and opProf capture profiles of ops-apiserver and
	// ops-operator (nil: none).
	apiProf, opProf *profiler
	// profileDir is Config.ProfileDir, absolute.
	profileDir string
	// Objects the API created, copied for the direct side.
	vmTemplate *vmTemplate
	upTemplate *opsv1.ClusterUpgradeOperation
	// vmIDs and vmNames are the vmclusters created through the API.
	vmIDs   []string
	vmNames []string
}

func (e *env) logf(format string, args ...any) {
	fmt.Fprintf(e.cfg.Out, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// Run starts a fresh stack, runs every phase and stops the stack. A phase
// that fails is recorded in Results.Errors and the run goes on where it
// can; only a stack that does not start, or ctx ending, is an error.
func Run(ctx context.Context, cfg Config) (*Results, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	res := &Results{Started: time.Now(), Settings: Settings{
		VMClusters: cfg.VMClusters, Upgrades: cfg.Upgrades, UpgradeClusters: cfg.UpgradeClusters,
		Clients: cfg.Clients, Duration: cfg.Duration.String(), Warmup: cfg.Warmup.String(), WriteSerial: min(cfg.WriteSerial, cfg.VMClusters, cfg.Upgrades),
		Repeats: cfg.Repeats, ScaleSizes: cfg.ScaleSizes, ScaleDuration: cfg.ScaleDuration.String(),
		RunningSizes: cfg.RunningSizes, RunningTimeout: cfg.RunningTimeout.String(), ProfileDir: cfg.ProfileDir,
		OperatorOps: cfg.OperatorOps, OperatorNodes: cfg.OperatorNodes, OperatorTimeout: cfg.OperatorTimeout.String(),
	}}
	e := &env{cfg: cfg}
	binDir, err := testenv.BinDir()
	if err != nil {
		return nil, err
	}
	e.binDir = binDir
	for _, name := range []string{"ops-apiserver", "ops-operator"} {
		if _, err := os.Stat(filepath.Join(binDir, name)); err != nil {
			return nil, fmt.Errorf("%s: run `make build` first: %w", name, err)
		}
	}
	if cfg.ProfileDir != "" {
		if e.profileDir, err = filepath.Abs(cfg.ProfileDir); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(e.profileDir, 0o755); err != nil {
			return nil, err
		}
		if err := cleanProfileDir(e.profileDir); err != nil {
			return nil, err
		}
	}
	extra := apiserverExtraArgs(filepath.Join(binDir, "ops-apiserver"))
	if cfg.ProfileDir != "" {
		if hasFlag(filepath.Join(binDir, "ops-apiserver"), pprofFlag) {
			port, err := testenv.FreePort()
			if err != nil {
				return nil, err
			}
			addr := fmt.Sprintf("127.0.0.1:%d", port)
			extra = append(extra, pprofFlag+"="+addr)
			e.apiProf = newProfiler("apiserver", addr, e.profileDir)
		} else {
			res.ProfileErrors = append(res.ProfileErrors, "ops-apiserver: this build has no "+pprofFlag)
		}
	}
	if len(extra) > 0 {
		// The stack starts binaries from $OPS_BIN_DIR: a copy of bin/
		// whose ops-apiserver adds the flags.
		wrapped := filepath.Join(cfg.StateDir, "bin")
		if err := wrapBinDir(binDir, wrapped, "ops-apiserver", extra); err != nil {
			return nil, err
		}
		defer os.Setenv("OPS_BIN_DIR", os.Getenv("OPS_BIN_DIR"))
		if err := os.Setenv("OPS_BIN_DIR", wrapped); err != nil {
			return nil, err
		}
		res.Settings.APIServerArgs = shownArgs(extra)
	}
	port, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	e.logf("Starting the local stack in %s", cfg.StateDir)
	// With ops-operator for the stack to bootstrap itself (the VictoriaMetrics
	// operator and its CRDs from the vm-operator chart); it is stopped right
	// away and started again, measured, by the operator phase. The deletes
	// of "every HelmRelease" below keep the stack's (stack.NotStack).
	st, err := stack.Start(ctx, stack.Options{StateDir: cfg.StateDir, Out: cfg.Out, WithOperator: true, APIAddress: fmt.Sprintf("127.0.0.1:%d", port)})
	if err != nil {
		if st != nil {
			for _, p := range st.Processes() {
				fmt.Fprintf(cfg.Out, "----- %s (%s)\n%s\n", p.Name, p.LogPath, p.Log(3000))
			}
		}
		return nil, fmt.Errorf("starting the local stack: %w", err)
	}
	defer func() {
		e.logf("Stopping the local stack")
		st.Stop()
	}()
	st.StopOperator()
	e.st = st
	if err := e.connect(); err != nil {
		return nil, err
	}
	res.Machine = DescribeMachine(binDir, e.kubeVersion(ctx))
	res.Footprint.APIServerBinaryMiB = fileMiB(filepath.Join(binDir, "ops-apiserver"))
	res.Footprint.OperatorBinaryMiB = fileMiB(filepath.Join(binDir, "ops-operator"))
	if e.apiPID, err = FindChild(os.Getpid(), filepath.Join(binDir, "ops-apiserver")); err != nil {
		return nil, err
	}
	// Flux would install every vmcluster of the read and write runs;
	// those runs measure the REST layer and kube-apiserver, not Helm.
	e.logf("Stopping Flux for the write and read runs")
	st.Flux.Stop()

	phase := func(name string, fn func() error) bool {
		start := time.Now()
		e.logf("== %s", name)
		err := fn()
		if err != nil && ctx.Err() == nil {
			e.logf("%s failed: %v", name, err)
			res.Errors = append(res.Errors, fmt.Sprintf("%s: %v", name, err))
		}
		took := time.Since(start)
		res.Phases = append(res.Phases, PhaseTime{Name: name, Seconds: took.Seconds()})
		e.logf("== %s done in %s", name, took.Round(time.Second))
		return err == nil
	}
	res.Phases = append(res.Phases, PhaseTime{Name: "stack start", Seconds: time.Since(res.Started).Seconds()})
	wrote := phase("write path", func() error { return e.writePhase(ctx, res) })
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if wrote {
		phase("read path", func() error { return e.readPhase(ctx, res) })
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if wrote && len(cfg.ScaleSizes) > 0 {
		phase("cost curve", func() error { return e.scalePhase(ctx, res) })
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if len(cfg.RunningSizes) > 0 {
		phase("time to RUNNING", func() error { return e.runningPhase(ctx, res) })
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if cfg.OperatorOps > 0 {
		phase("operator throughput", func() error { return e.operatorPhase(ctx, res) })
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	res.Goals = EvaluateGoals(res)
	res.Seconds = time.Since(res.Started).Seconds()
	return res, nil
}

// connect builds the clients of both sides.
func (e *env) connect() error {
	cfg := rest.CopyConfig(e.st.Env.Config)
	// No client-side rate limit: measure kube-apiserver, not client-go.
	cfg.QPS, cfg.Burst = -1, 0
	cfg.UserAgent = "ops-bench"
	var err error
	if e.kube, err = client.New(cfg, client.Options{Scheme: e.st.Env.Scheme}); err != nil {
		return fmt.Errorf("building the Kubernetes client: %w", err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("building the kube-apiserver HTTP client: %w", err)
	}
	hc.Timeout = time.Minute
	host, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return fmt.Errorf("kube-apiserver address: %w", err)
	}
	e.kubeAPI = target{client: hc, base: strings.TrimSuffix(host.String(), "/"), header: http.Header{"Accept": {"application/json"}}}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 1024
	opsHeader := http.Header{"Accept": {"application/json"}}
	if e.st.Token != "" {
		opsHeader.Set("Authorization", "Bearer "+e.st.Token)
	}
	e.ops = target{client: &http.Client{Transport: tr, Timeout: time.Minute}, base: e.st.APIURL, header: opsHeader}
	if e.opsAPI, err = opsclient.NewClient(e.st.APIURL, opsclient.WithHTTPClient(e.ops.client), opsclient.WithBearerToken(e.st.Token)); err != nil {
		return fmt.Errorf("building the ops-apiserver client: %w", err)
	}
	return nil
}

// kubeVersion is kube-apiserver's gitVersion ("" if it cannot be read).
func (e *env) kubeVersion(ctx context.Context) string {
	code, body, err := e.kubeAPI.do(ctx, http.MethodGet, "/version", nil)
	if err != nil || code != http.StatusOK {
		return ""
	}
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	_ = json.Unmarshal(body, &v)
	return v.GitVersion
}

func fileMiB(path string) float64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return MiB(uint64(fi.Size()))
}

// ensureNamespace creates a namespace unless it exists.
func (e *env) ensureNamespace(ctx context.Context, name string) error {
	err := e.kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// poll calls fn every interval until it reports done, fails, or timeout
// passes (then it returns false and no error).
func poll(ctx context.Context, interval, timeout time.Duration, fn func() (bool, error)) (bool, error) {
	deadline := time.Now().Add(timeout)
	for {
		done, err := fn()
		if err != nil || done {
			return done, err
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(interval):
		}
	}
}

// IntList is a flag.Value of comma-separated counts ("100,300"); an
// empty value or "0" is no count.
func IntList(v *[]int) flag.Value { return (*intList)(v) }

type intList []int

func (l *intList) String() string {
	if l == nil {
		return ""
	}
	return strings.ReplaceAll(joinInts(*l), " ", "")
}

func (l *intList) Set(s string) error {
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		n, err := strconv.Atoi(part)
		if err != nil {
			return fmt.Errorf("%q is not a count", part)
		}
		if n != 0 {
			out = append(out, n)
		}
	}
	*l = out
	return nil
}

// shownArgs are args as the page shows them: the free loopback port of
// --pprof-bind-address changes every run.
func shownArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.HasPrefix(a, pprofFlag+"=") {
			a = pprofFlag + "=127.0.0.1:<free port>"
		}
		out[i] = a
	}
	return out
}
