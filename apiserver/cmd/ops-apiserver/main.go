// Command ops-apiserver serves the ops-server REST API. It only wires: the
// configuration (flags and an optional YAML file, see docs/apiserver.md),
// the logger, and the application of package app.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tidbcloud/ops-server/apiserver/internal/app"
	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/apiserver/internal/logging"
	"github.com/tidbcloud/ops-server/operator/pkg/buildinfo"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	// --version before the configuration, which it needs none of.
	if slices.Contains(args, "--version") {
		fmt.Fprintln(os.Stdout, "ops-apiserver", buildinfo.Get())
		return 0
	}
	cfg, err := config.Load("ops-apiserver", args)
	if errors.Is(err, pflag.ErrHelp) {
		fs := config.NewFlagSet("ops-apiserver", config.Default())
		fmt.Fprintf(os.Stdout, "Usage of ops-apiserver:\n%s", fs.FlagUsages())
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "ops-apiserver: invalid configuration:\n%v\n", err)
		return 2
	}
	log, flush, err := logging.New(cfg.Log)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ops-apiserver: %v\n", err)
		return 2
	}
	defer flush()
	ctrllog.SetLogger(log)
	klog.SetLogger(log)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	a, err := app.New(ctx, app.Options{Config: cfg, Logger: log})
	if err != nil {
		log.Error(err, "Cannot start")
		return 1
	}
	if err := a.Run(ctx); err != nil {
		log.Error(err, "Stopped with an error")
		return 1
	}
	return 0
}
