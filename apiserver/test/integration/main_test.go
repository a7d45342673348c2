// Package integration tests ops-apiserver end to end on a real
// kube-apiserver with the real Flux source-controller and helm-controller:
// each test starts its own apiserver (package app) targeting a namespace of
// its own and drives it through HTTP only; the assertions look at what
// Flux and Helm did in the API server.
package integration

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/go-logr/zapr"
	. "github.com/onsi/gomega"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/chartrepo"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

var (
	env  *testenv.Environment
	flux *testenv.Flux
	// chartRepoURL is an http Helm repository (the "https" source form)
	// with vmcluster 0.1.0 and 0.2.0.
	chartRepoURL string
	// ociRepoURL is an oci:// repository with vmcluster 0.1.0 and 0.2.0,
	// served by an in-process registry.
	ociRepoURL string
)

const (
	chart0 = "testdata/charts/vmcluster-0.1.0"
	chart1 = "testdata/charts/vmcluster-0.2.0"
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// controller-runtime's own logs (cache, client): errors only.
	zl := zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.Lock(os.Stderr), zapcore.ErrorLevel))
	ctrllog.SetLogger(zapr.NewLogger(zl))

	repo := chartrepo.New()
	for _, dir := range []string{chart0, chart1} {
		if _, err := repo.AddDir(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	repoSrv := httptest.NewServer(repo)
	defer repoSrv.Close()
	chartRepoURL = repoSrv.URL

	reg, err := startOCIRegistry(chart0, chart1)
	if err != nil {
		fmt.Fprintln(os.Stderr, "OCI registry:", err)
		return 1
	}
	defer reg.Close()
	ociRepoURL = "oci://" + reg.Listener.Addr().String() + "/charts"

	env, err = testenv.Start(testenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	// ops-server's pair, sharded as the chart runs it (flux.shard).
	flux, err = env.StartFlux(context.Background(), testenv.FluxOptions{LabelSelector: opsv1.FluxShardLabel + "=" + opsv1.DefaultFluxShard})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer flux.Stop()

	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(poll)
	code := m.Run()
	if code != 0 {
		fmt.Fprintln(os.Stderr, flux.Logs())
	}
	return code
}
