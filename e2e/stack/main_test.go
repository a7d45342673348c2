package stack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

// The integration tests of this package share one partial stack, started by
// the first test that needs it: the control plane, kube-controller-manager,
// kube-scheduler, kwok, the volume provisioner and the simulated cloud's
// Nodes, as Start brings them up; the VictoriaMetrics operator with its
// CRDs and the backer on request. Pure
// tests run without it.
var (
	shared     *Stack
	sharedErr  error
	sharedOnce sync.Once
	sharedDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		if code != 0 {
			shared.WriteLogs(os.Stderr, 6000)
		}
		shared.Stop()
	}
	if sharedDir != "" {
		_ = os.RemoveAll(sharedDir)
	}
	os.Exit(code)
}

// controlPlane returns the shared partial stack, starting it on first use.
func controlPlane(t *testing.T) *Stack {
	t.Helper()
	sharedOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		shared, sharedErr = startControlPlane(ctx)
	})
	if sharedErr != nil {
		t.Fatalf("starting the control plane: %v", sharedErr)
	}
	return shared
}

func startControlPlane(ctx context.Context) (*Stack, error) {
	var err error
	if sharedDir, err = os.MkdirTemp("", "ops-stack-test-"); err != nil {
		return nil, err
	}
	s := &Stack{stateDir: sharedDir, logDir: filepath.Join(sharedDir, "logs"), out: os.Stderr}
	if err := os.MkdirAll(s.logDir, 0o755); err != nil {
		return nil, err
	}
	envOpts, err := withKwokIO(testenv.Options{
		EtcdDataDir: filepath.Join(sharedDir, "etcd"),
		AddToScheme: []func(*runtime.Scheme) error{opsv1.AddToScheme},
	}, filepath.Join(sharedDir, "kwok-crds"))
	if err != nil {
		return nil, err
	}
	if s.Env, err = testenv.Start(envOpts); err != nil {
		return nil, err
	}
	// From here on TestMain stops what was started.
	shared = s
	if err := s.startKubeControllers(ctx); err != nil {
		return s, err
	}
	if err := s.startVolumeProvisioner(ctx); err != nil {
		return s, err
	}
	if err := s.Env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return s, err
	}
	return s, s.seedCloud(ctx)
}

// vmWorkloads starts the VictoriaMetrics operator and the backer
// on the shared stack, once.
func vmWorkloads(t *testing.T) *Stack {
	t.Helper()
	s := controlPlane(t)
	vmOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if vmErr = installVMOperatorCRDs(s); vmErr != nil {
			return
		}
		if vmErr = s.startVMOperator(ctx); vmErr == nil {
			vmErr = s.startBacker()
		}
	})
	if vmErr != nil {
		t.Fatalf("starting the VictoriaMetrics operator and the backer: %v", vmErr)
	}
	return s
}

var (
	vmOnce sync.Once
	vmErr  error
)

// installVMOperatorCRDs installs the VictoriaMetrics operator's CRDs of
// the vm-operator chart (the stack's helm-controller installs them from the
// chart), only for the tests that need them.
func installVMOperatorCRDs(s *Stack) error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	_, err = envtest.InstallCRDs(s.Env.Config, envtest.CRDInstallOptions{
		Paths:              []string{filepath.Join(root, "deploy", "charts", "vm-operator", "crds")},
		ErrorIfPathMissing: true, MaxTime: 3 * time.Minute, PollInterval: time.Second,
	})
	return err
}

// startVMOperator runs the real VictoriaMetrics operator out of cluster
// for this package's tests (the stack runs it as the backed Pod of the
// vm-operator component instead).
func (s *Stack) startVMOperator(ctx context.Context) error {
	metrics, err := testenv.FreePort()
	if err != nil {
		return err
	}
	health, err := testenv.FreePort()
	if err != nil {
		return err
	}
	p, err := testenv.StartProcess("vm-operator", s.logDir, []string{
		fmt.Sprintf("-metrics-bind-address=127.0.0.1:%d", metrics),
		fmt.Sprintf("-health-probe-bind-address=127.0.0.1:%d", health),
		"-pprof-addr=",
		"-leader-elect=false",
	}, []string{
		"KUBECONFIG=" + s.Env.KubeconfigPath,
		"WATCH_NAMESPACE=",
		"VM_PODWAITREADYTIMEOUT=30s",
		"VM_APPREADYTIMEOUT=60s",
		"VM_PODWAITREADYINTERVALCHECK=1s",
	})
	if err != nil {
		return err
	}
	s.procs = append(s.procs, p)
	return p.WaitHTTPOK(ctx, fmt.Sprintf("http://127.0.0.1:%d/ready", health), time.Minute)
}
