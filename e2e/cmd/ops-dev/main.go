// Command ops-dev runs the local ops-server stack on 127.0.0.1: a real etcd
// and kube-apiserver with every CRD of crds/ installed, and the real Flux
// source-controller and helm-controller. It writes an admin kubeconfig to
// <state-dir>/kubeconfig and runs in the foreground until interrupted;
// Ctrl-C stops every process it started.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/tidbcloud/ops-server/operator/testenv"
)

func main() {
	stateDir := flag.String("state-dir", ".dev", "directory for the kubeconfig and logs of the local stack")
	flag.Parse()
	if err := run(*stateDir); err != nil {
		fmt.Fprintln(os.Stderr, "ops-dev:", err)
		os.Exit(1)
	}
}

func run(stateDir string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return err
	}
	start := time.Now()
	fmt.Println("Starting etcd and kube-apiserver ...")
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	fmt.Println("Starting Flux source-controller and helm-controller ...")
	flux, err := env.StartFlux(ctx, testenv.FluxOptions{})
	if err != nil {
		return err
	}
	defer flux.Stop()

	kubeconfig, err := filepath.Abs(filepath.Join(stateDir, "kubeconfig"))
	if err != nil {
		return err
	}
	b, err := os.ReadFile(env.KubeconfigPath)
	if err != nil {
		return err
	}
	if err := os.WriteFile(kubeconfig, b, 0o600); err != nil {
		return err
	}
	fmt.Printf(`
Local stack ready in %s.

  kube-apiserver:     %s
  kubeconfig:         %s
  source-controller:  log %s
  helm-controller:    log %s

Try:
  export KUBECONFIG=%s
  bin/kubectl get crds

Press Ctrl-C to stop everything.
`, time.Since(start).Round(100*time.Millisecond), env.Config.Host, kubeconfig,
		flux.Source.LogPath, flux.Helm.LogPath, kubeconfig)
	<-ctx.Done()
	fmt.Println("\nStopping ...")
	return nil
}
