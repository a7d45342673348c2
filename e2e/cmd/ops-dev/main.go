// Command ops-dev runs the local ops-server stack on 127.0.0.1 in the
// foreground (see package stack), writes an admin kubeconfig to
// <state-dir>/kubeconfig, and stops everything it started on Ctrl-C.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tidbcloud/ops-server/e2e/stack"
)

func main() {
	stateDir := flag.String("state-dir", ".dev", "directory for the local stack's state (etcd data), kubeconfig and logs")
	flag.Parse()
	if err := run(*stateDir); err != nil {
		fmt.Fprintln(os.Stderr, "ops-dev:", err)
		os.Exit(1)
	}
}

func run(stateDir string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	s, err := stack.Start(ctx, stack.Options{StateDir: stateDir, Out: os.Stdout, WithOperator: true, APIAddress: stack.APIAddress})
	if err != nil {
		return err
	}
	defer s.Stop()
	fmt.Printf(`
Local stack ready in %s.

  kube-apiserver:  %s
  kubeconfig:      %s
  logs:            %s/logs/

Try:
  export KUBECONFIG=%s
  bin/kubectl get nodes -L %s

Press Ctrl-C to stop everything.
`, time.Since(start).Round(100*time.Millisecond), s.Env.Config.Host, s.Kubeconfig, stateDir, s.Kubeconfig, stack.NodeGroupLabel)
	<-ctx.Done()
	fmt.Println("\nStopping ...")
	return nil
}
