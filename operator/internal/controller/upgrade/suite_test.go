package upgrade_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/manager"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.fuzz"); f != nil && f.Value.String() != "" {
		// Fuzzing the pure decision function needs no control plane; each
		// fuzz worker is a new process and would start one otherwise.
		os.Exit(m.Run())
	}
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.InfoLevel)))
	os.Exit(testenv.RunMain(m, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{opsv1.AddToScheme}},
		func(e *testenv.Environment) error { env = e; return nil }))
}

// cloudFixture is one simulated cloud shared by the operators a test starts
// and restarts, with its call log and fault injection.
type cloudFixture struct {
	provider *mock.Provider
	log      *mock.CallLog
	faults   *mock.Faults
	ref      cloud.ClusterRef
}

func newCloud(t *testing.T, name string, opDuration time.Duration, st mock.ClusterState) *cloudFixture {
	t.Helper()
	f := &cloudFixture{log: &mock.CallLog{}, faults: &mock.Faults{}, ref: cloud.ClusterRef{Provider: cloud.Mock, Name: name, Region: "local"}}
	f.provider = &mock.Provider{Client: env.Client, OperationDuration: opDuration, Log: f.log, Faults: f.faults}
	NewWithT(t).Expect(f.provider.Seed(context.Background(), f.ref, st)).To(Succeed())
	return f
}

// operator is a running ops-operator manager.
type operator struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func testOptions() manager.Options {
	o := manager.DefaultOptions()
	o.MetricsAddr, o.HealthAddr, o.LeaderElection = "0", "0", false
	o.Upgrade.PollInterval = 100 * time.Millisecond
	o.Upgrade.RetryInterval = 50 * time.Millisecond
	o.Upgrade.MaxConcurrentReconciles = 2
	o.Upgrade.MaxRetryDelay = time.Second
	o.GracefulShutdownTime = 5 * time.Second
	o.SkipControllerNameValidation = true
	return o
}

// startOperator starts an operator for the test's namespace only (each
// test has its own simulated cloud and call log).
func startOperator(t *testing.T, ns string, f *cloudFixture, mutate func(*manager.Options)) *operator {
	t.Helper()
	return startOperatorWith(t, env.Config, ns, f, mutate)
}

// startOperatorWith starts an operator that talks to the API server through
// cfg (e.g. one that injects errors).
func startOperatorWith(t *testing.T, cfg *rest.Config, ns string, f *cloudFixture, mutate func(*manager.Options)) *operator {
	t.Helper()
	o := testOptions()
	o.WatchNamespace = ns
	if mutate != nil {
		mutate(&o)
	}
	mgr, err := manager.New(cfg, o, cloud.NewRegistry(f.provider))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	op := &operator{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(op.done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(op.stop)
	return op
}

var stopOnce sync.Mutex

func (o *operator) stop() {
	stopOnce.Lock()
	defer stopOnce.Unlock()
	o.cancel()
	<-o.done
}

func newOp(ns, name string, f *cloudFixture, mut func(*opsv1.ClusterUpgradeOperationSpec)) *opsv1.ClusterUpgradeOperation {
	op := &opsv1.ClusterUpgradeOperation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: opsv1.ClusterUpgradeOperationSpec{
			K8sClusterName: f.ref.Name, Region: f.ref.Region, CloudProvider: opsv1.CloudProviderMock, TargetVersion: "1.30",
		},
	}
	if mut != nil {
		mut(&op.Spec)
	}
	return op
}

func get(g Gomega, op *opsv1.ClusterUpgradeOperation) *opsv1.ClusterUpgradeOperation {
	out := &opsv1.ClusterUpgradeOperation{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(op), out)).To(Succeed())
	return out
}

func waitPhase(t *testing.T, op *opsv1.ClusterUpgradeOperation, phase opsv1.UpgradePhase, timeout time.Duration) *opsv1.ClusterUpgradeOperation {
	t.Helper()
	var last *opsv1.ClusterUpgradeOperation
	NewWithT(t).Eventually(func(g Gomega) {
		last = get(g, op)
		g.Expect(last.Status.Phase).To(Equal(phase), "status: %s", describe(last))
	}, timeout, 50*time.Millisecond).Should(Succeed())
	return last
}

func describe(op *opsv1.ClusterUpgradeOperation) string {
	s := fmt.Sprintf("phase=%s current=%s", op.Status.Phase, op.Status.CurrentStep)
	for _, st := range op.Status.Steps {
		s += fmt.Sprintf("\n  %s %s op=%s %q", st.ID, st.Phase, st.OperationID, st.Message)
	}
	if op.Status.BlockedBy != nil {
		s += "\n  blockedBy: " + op.Status.BlockedBy.Message
	}
	return s
}

// mutationCounts counts the operations the simulated cloud started, by
// "Op target", from the cloud's own state: a call whose answer was lost
// (the operator killed mid-request) still counts once, and a repeat the
// cloud recognised by its token does not count again.
func mutationCounts(f *cloudFixture) map[string]int {
	st, err := f.provider.State(context.Background(), f.ref)
	if err != nil {
		panic(err)
	}
	out := map[string]int{}
	for _, op := range st.Operations {
		out[op.Kind+" "+op.Target]++
	}
	return out
}

// playKubelet force-deletes terminating pods, as a kubelet would once their
// containers stopped (no kubelet runs in the test control plane).
func playKubelet(ctx context.Context, ns string) {
	pods := &corev1.PodList{}
	if err := env.Client.List(ctx, pods, client.InNamespace(ns)); err != nil {
		return
	}
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp != nil {
			_ = env.Client.Delete(ctx, &pods.Items[i], client.GracePeriodSeconds(0))
		}
	}
}
