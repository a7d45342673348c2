package bootstrap_test

import (
	"context"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/manager"
	"github.com/tidbcloud/ops-server/operator/pkg/chartrepo"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

var (
	env     *testenv.Environment
	flux    *testenv.Flux
	repoURL string
)

// TestMain starts one control plane, the real Flux controllers and a
// chart repository on 127.0.0.1 serving testdata/charts (ConfigMap-only
// charts: Ready as soon as installed).
func TestMain(m *testing.M) {
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.InfoLevel)))
	// Fuzzing (FuzzDecide, pure) needs no control plane: go test -fuzz
	// runs this binary once per worker.
	flag.Parse()
	if f := flag.Lookup("test.fuzz"); f != nil && f.Value.String() != "" {
		os.Exit(m.Run())
	}
	os.Exit(testenv.RunMain(m, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{opsv1.AddToScheme}},
		func(e *testenv.Environment) error {
			env = e
			repo := chartrepo.New()
			if _, err := repo.AddDirs("testdata/charts"); err != nil {
				return err
			}
			srv := httptest.NewServer(repo)
			repoURL = srv.URL
			var err error
			if flux, err = e.StartFlux(context.Background(), testenv.FluxOptions{}); err != nil {
				return fmt.Errorf("starting Flux: %w", err)
			}
			return nil
		}))
}

// startOperator runs ops-operator's manager on namespace ns until the test
// ends.
func startOperator(t *testing.T, ns string) {
	t.Helper()
	o := manager.DefaultOptions()
	o.MetricsAddr, o.HealthAddr, o.LeaderElection = "0", "0", false
	o.GracefulShutdownTime = 10 * time.Second
	o.SkipControllerNameValidation = true
	o.WatchNamespace = ns
	o.Bootstrap.RepositoryURL = repoURL
	o.Bootstrap.PollInterval = 500 * time.Millisecond
	o.Bootstrap.ReleaseInterval = time.Minute
	o.Bootstrap.SourceInterval = time.Minute
	o.Bootstrap.Timeout = time.Minute
	mgr, err := manager.New(env.Config, o, nil)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}
