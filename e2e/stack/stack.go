// Package stack runs the whole ops-server stack locally on 127.0.0.1, as
// `make dev` shows it and the e2e suite drives it: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok (simulated kubelets),
// a volume provisioner (directories in the state directory), the real Flux
// source-controller and helm-controller, the simulated cloud
// with one cluster and its node groups as kwok Nodes, ops-operator and
// ops-apiserver. The control plane starts without the VictoriaMetrics
// CRDs: the stack bootstraps itself with an ObservabilityStack (Bootstrap),
// so helm-controller installs the VictoriaMetrics operator from the baked
// vm-operator chart and the backer runs bin/vm-operator for its Pod.
package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

// Options configure the stack.
type Options struct {
	// StateDir keeps etcd's data, the kubeconfig and the logs between runs.
	StateDir string
	// Out receives progress lines.
	Out io.Writer
	// WithOperator starts ops-operator from bin/ (`make build`).
	WithOperator bool
	// APIAddress, when set, starts ops-apiserver from bin/ there.
	APIAddress string
	// APIServerArgs are extra ops-apiserver flags (e.g. the benchmarks'
	// --rate-limit-qps=0).
	APIServerArgs []string
	// ServicesAddress is where the Service proxy publishes the Services
	// of the backed Pods (a free port when empty; `make dev` uses
	// ServicesAddress). The endpoints ops-apiserver shows point there.
	ServicesAddress string
	// ChartRepositoryAddress is where ops-apiserver serves the baked-in
	// chart to the source-controller (a free port when empty; `make dev`
	// uses ChartRepositoryAddress). The HelmRepository of every vmcluster
	// keeps this URL, so a stack started again on the same state must
	// serve the chart at the same address.
	ChartRepositoryAddress string
	// Components are the ObservabilityStack's components the stack
	// bootstraps itself with once ops-operator and ops-apiserver run
	// (both needed); empty: the vm-operator component only (the e2e
	// suite's stack). `make dev` declares DefaultComponents.
	Components []opsv1.StackComponent
	// Replicas 2 is the HA mode (`OPS_REPLICAS=2 make dev`): two
	// ops-apiservers (the second on the next free port after APIAddress),
	// two Flux pairs and two ops-operators, the controllers
	// leader-elected with LeaseDuration, RenewDeadline and RetryPeriod.
	// 0 or 1: one of each, no leader election.
	Replicas int
	// OperatorArgs are extra ops-operator flags (after OperatorArgs).
	OperatorArgs []string
}

// ChartRepositoryAddress is the chart repository address of `make dev`
// (ops-apiserver's own default).
const ChartRepositoryAddress = "127.0.0.1:8089"

// Namespace is where the stack keeps vmclusters and upgrade operations.
const Namespace = "observability"

// DevCluster is the simulated cloud's cluster the stack starts with.
var DevCluster = cloud.ClusterRef{Provider: cloud.Mock, Name: "dev-cluster", Region: "local"}

// Stack is the running local stack.
type Stack struct {
	Env  *testenv.Environment
	Flux *testenv.Flux
	// Kubeconfig is an admin kubeconfig in StateDir.
	Kubeconfig string
	// Operator is the running ops-operator, if started (replica 0 in HA
	// mode).
	Operator *testenv.Process
	// Operators are the ops-operator replicas by number (nil: killed).
	Operators []*testenv.Process
	// APIServers are the ops-apiserver replicas by number (nil: killed),
	// serving at APIURLs.
	APIServers []*testenv.Process
	APIURLs    []string
	// FluxPairs are the Flux pairs by number (nil: killed); Flux is pair 0.
	FluxPairs []*testenv.Flux
	// OperatorMetricsURL is the running ops-operator's /metrics.
	OperatorMetricsURL string
	// APIServer is the running ops-apiserver, if started, at APIURL.
	APIServer *testenv.Process
	APIURL    string
	// Token is a bearer token the REST API accepts ("" while the API runs
	// without authentication). Clients send it as "Authorization: Bearer".
	Token string
	// VMCRDsAbsentAtStart is true when the control plane had no
	// VictoriaMetrics CRD before the stack bootstrapped itself (a fresh
	// state directory).
	VMCRDsAbsentAtStart bool
	stateDir            string
	// apiServerArgs are Options.APIServerArgs.
	apiServerArgs []string
	// operatorArgs are Options.OperatorArgs.
	operatorArgs []string
	// replicas is Options.Replicas.
	replicas int
	// apiAddrs are the ops-apiserver replicas' listen addresses.
	apiAddrs []string
	// chartProxy serves chartRepoAddr from the ops-apiserver replicas in
	// HA mode (ha.go).
	chartProxy *chartProxy
	// reg is what ProcessesFile lists (ha.go).
	reg    registry
	logDir string
	// backer runs a real process for each vmstorage, vminsert and
	// vmselect Pod, and the Service proxy on servicesAddr (see backer.go,
	// services.go); started with ops-operator.
	backer        *podBacker
	servicesAddr  string
	chartRepoAddr string
	// podIO serves kubectl logs/exec of backed Pods through kwok (see
	// podio.go); started with kwok.
	podIO *podIO
	procs []*testenv.Process
	out   io.Writer

	// volumes provisions the volumes of the default StorageClass (see
	// volumes.go).
	volumes *volumeProvisioner

	// restoreJobs runs vmrestore for the vmrestore Job Pods (see
	// vmrestore.go); started with ops-operator.
	restoreJobs *vmrestoreBacker
}

// Start brings the stack up. On error everything started is stopped.
func Start(ctx context.Context, o Options) (s *Stack, err error) {
	if o.Out == nil {
		o.Out = io.Discard
	}
	state, err := filepath.Abs(o.StateDir)
	if err != nil {
		return nil, err
	}
	s = &Stack{stateDir: state, logDir: filepath.Join(state, "logs"), out: o.Out, apiServerArgs: o.APIServerArgs, operatorArgs: o.OperatorArgs, replicas: o.Replicas, servicesAddr: o.ServicesAddress, chartRepoAddr: o.ChartRepositoryAddress}
	if err := os.MkdirAll(s.logDir, 0o755); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	// No VictoriaMetrics CRD: the stack bootstraps itself (Bootstrap).
	envOpts, err := withKwokIO(testenv.Options{
		EtcdDataDir: filepath.Join(state, "etcd"),
		OmitCRDs:    vmCRDFiles,
		AddToScheme: []func(*runtime.Scheme) error{opsv1.AddToScheme},
	}, filepath.Join(state, "kwok-crds"))
	if err != nil {
		return s, err
	}
	s.step("Starting etcd and kube-apiserver (state in %s)", state)
	if s.Env, err = testenv.Start(envOpts); err != nil {
		return s, err
	}
	s.Kubeconfig = filepath.Join(state, "kubeconfig")
	b, err := os.ReadFile(s.Env.KubeconfigPath)
	if err != nil {
		return s, err
	}
	if err := os.WriteFile(s.Kubeconfig, b, 0o600); err != nil {
		return s, err
	}
	s.step("Starting kube-controller-manager, kube-scheduler and kwok")
	if err := s.startKubeControllers(ctx); err != nil {
		return s, err
	}
	s.step("Starting the volume provisioner (default StorageClass %s, volumes in %s)", StorageClassName, s.VMStorageRoot())
	if err := s.startVolumeProvisioner(ctx); err != nil {
		return s, err
	}
	// The namespace the chart installs ops-server into holds the vmclusters,
	// the upgrade operations and (HA mode) the leader election Leases.
	if err := s.Env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return s, err
	}
	// ops-server's shard, as the chart runs the sidecars (flux.shard).
	for i := range s.Replicas() {
		if s.HA() {
			s.step("Starting Flux pair %d of %d: source-controller and helm-controller, leader-elected (Leases in %s)", i+1, s.Replicas(), Namespace)
		} else {
			s.step("Starting Flux source-controller and helm-controller")
		}
		if err := s.startFluxPair(ctx, i); err != nil {
			return s, err
		}
	}
	if err := s.recordVMCRDs(ctx); err != nil {
		return s, err
	}
	// ops-operator installs the stack's components from the charts
	// ops-apiserver serves: one address for both.
	if s.chartRepoAddr == "" {
		port, err := testenv.FreePort()
		if err != nil {
			return s, err
		}
		s.chartRepoAddr = fmt.Sprintf("127.0.0.1:%d", port)
	}
	s.step("Seeding the simulated cloud: cluster %s in region %s", DevCluster.Name, DevCluster.Region)
	if err := s.seedCloud(ctx); err != nil {
		return s, err
	}
	if o.WithOperator {
		s.step("Starting ops-operator%s", s.replicasNote())
		if err := s.StartOperator(ctx); err != nil {
			return s, err
		}
	}
	if o.APIAddress != "" {
		s.step("Starting ops-apiserver on http://%s%s", o.APIAddress, s.replicasNote())
		if err := s.StartAPIServer(ctx, o.APIAddress); err != nil {
			return s, err
		}
		if s.HA() {
			s.step("ops-apiservers: %s", strings.Join(s.APIURLs, ", "))
		}
	}
	if o.WithOperator && o.APIAddress != "" {
		components := o.Components
		if len(components) == 0 {
			components = []opsv1.StackComponent{VMOperatorComponent()}
		}
		s.step("Bootstrapping: ObservabilityStack %s/%s with %s; waiting for the VictoriaMetrics operator", Namespace, StackName, componentNames(components))
		if err := s.Bootstrap(ctx, components); err != nil {
			return s, err
		}
	}
	return s, nil
}

// replicasNote says how many replicas start, in HA mode.
func (s *Stack) replicasNote() string {
	if !s.HA() {
		return ""
	}
	return fmt.Sprintf(" (%d replicas)", s.Replicas())
}

func (s *Stack) step(format string, args ...any) {
	fmt.Fprintf(s.out, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// seedCloud creates dev-cluster at 1.29 with node groups observability-ng
// and vmstorage (kwok Nodes), unless a previous run already did.
func (s *Stack) seedCloud(ctx context.Context) error {
	p := &mock.Provider{Client: s.Env.Client}
	if _, err := p.State(ctx, DevCluster); err == nil {
		return nil
	} else if !cloud.IsNotFound(err) {
		return err
	}
	return p.Seed(ctx, DevCluster, DevClusterState())
}

// DevClusterState is the simulated cloud's dev-cluster as the stack seeds
// it: 1.29, node groups observability-ng (2) and vmstorage (3), three addons.
func DevClusterState() mock.ClusterState {
	return mock.ClusterState{
		Version: "1.29",
		NodeGroups: map[string]*mock.NodeGroupState{
			"observability-ng": {Size: 2, InstanceTypes: []string{"m5.xlarge"}, Labels: map[string]string{"node-role.observability/general": "true"}},
			"vmstorage":        {Size: 3, InstanceTypes: []string{"r5.xlarge"}, Labels: map[string]string{"node-role.observability/vmstorage": "true"}},
		},
		Addons: map[string]*mock.AddonState{
			"vpc-cni":    {Version: "v1.18.3-eksbuild.1", AvailableVersions: []string{"v1.18.3-eksbuild.1", "v1.18.5-eksbuild.1"}},
			"coredns":    {Version: "v1.11.1-eksbuild.9", AvailableVersions: []string{"v1.11.1-eksbuild.9", "v1.11.3-eksbuild.1"}},
			"kube-proxy": {Version: "v1.29.3-eksbuild.2", AvailableVersions: []string{"v1.29.3-eksbuild.2", "v1.30.0-eksbuild.3"}},
		},
	}
}

// Processes returns the child processes, for logs on failure.
func (s *Stack) Processes() []*testenv.Process {
	out := append([]*testenv.Process(nil), s.procs...)
	for _, f := range s.fluxPairs() {
		out = append(out, f.Source, f.Helm)
	}
	for _, group := range [][]*testenv.Process{s.Operators, s.APIServers} {
		for _, p := range group {
			if p != nil {
				out = append(out, p)
			}
		}
	}
	if s.backer != nil {
		out = append(out, s.backer.processes()...)
	}
	return out
}

// fluxPairs are the running Flux pairs: FluxPairs, and Flux when a caller
// replaced it (the benchmarks restart Flux with their own options).
func (s *Stack) fluxPairs() []*testenv.Flux {
	var out []*testenv.Flux
	seen := false
	for _, f := range s.FluxPairs {
		if f != nil {
			out = append(out, f)
			seen = seen || f == s.Flux
		}
	}
	if s.Flux != nil && !seen {
		out = append(out, s.Flux)
	}
	return out
}

// WriteLogs writes the last tail bytes of every child process's log to w,
// for a failure to be explained.
func (s *Stack) WriteLogs(w io.Writer, tail int) {
	for _, p := range s.Processes() {
		fmt.Fprintf(w, "----- %s (%s)\n%s\n", p.Name, p.LogPath, p.Log(tail))
	}
}

// Stop stops everything the stack started, in reverse order.
func (s *Stack) Stop() {
	var errs []error
	s.StopAPIServer()
	s.StopOperator()
	if s.restoreJobs != nil {
		s.restoreJobs.stop()
		s.restoreJobs = nil
	}
	if s.backer != nil {
		s.backer.stop()
		s.backer = nil
	}
	if s.podIO != nil {
		s.podIO.stop()
		s.podIO = nil
	}
	if s.volumes != nil {
		s.volumes.stop()
		s.volumes = nil
	}
	for _, f := range s.fluxPairs() {
		f.Stop()
	}
	if s.chartProxy != nil {
		s.chartProxy.stop()
		s.chartProxy = nil
	}
	for i := len(s.procs) - 1; i >= 0; i-- {
		errs = append(errs, s.procs[i].Stop(10*time.Second))
	}
	if s.Env != nil {
		errs = append(errs, s.Env.Stop())
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(s.out, "stopping:", err)
	}
}

// NodeGroupLabel is the Node label naming the simulated node group.
const NodeGroupLabel = mock.NodeGroupLabel
