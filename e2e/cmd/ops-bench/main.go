// Command ops-bench runs the benchmarks of `make bench` (package bench) on
// a fresh local stack and writes the results as Markdown and JSON. It
// measures and reports; it never fails on a timing. Ctrl-C stops the stack.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/tidbcloud/ops-server/e2e/bench"
)

func main() {
	cfg := bench.DefaultConfig()
	// A flag set of its own: imported packages register flags on the
	// global one (controller-runtime's -kubeconfig) that mean nothing here.
	fs := flag.NewFlagSet("ops-bench", flag.ExitOnError)
	md := fs.String("out", "docs/benchmarks.md", "Markdown results file")
	js := fs.String("json", "docs/benchmarks.json", "JSON results file")
	state := fs.String("state-dir", "", "directory for the stack's state and logs (default: a new temporary directory, removed at the end)")
	keep := fs.Bool("keep-state", false, "keep the state directory (logs of every component) at the end")
	fs.IntVar(&cfg.VMClusters, "vmclusters", cfg.VMClusters, "vmclusters created through the API (write path) and present for the read path")
	fs.IntVar(&cfg.Upgrades, "upgrades", cfg.Upgrades, "upgrade operations created through the API (write path) and present for the read path")
	fs.IntVar(&cfg.UpgradeClusters, "upgrade-clusters", cfg.UpgradeClusters, "cluster names the upgrade operations are spread over")
	fs.IntVar(&cfg.Clients, "clients", cfg.Clients, "concurrent clients of the read and write paths")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "duration of each read run, per side")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "warm-up before each read run")
	fs.IntVar(&cfg.WriteSerial, "write-serial", cfg.WriteSerial, "creates of each kind sent by a single client before the concurrent ones")
	fs.IntVar(&cfg.Repeats, "repeats", cfg.Repeats, "runs per side of each read row and concurrent write row, alternating sides; a row reports their medians")
	fs.Var(bench.IntList(&cfg.ScaleSizes), "scale", "vmcluster counts of the cost curve, ascending (empty skips it)")
	fs.DurationVar(&cfg.ScaleDuration, "scale-duration", cfg.ScaleDuration, "duration of the list run at each count of the cost curve")
	fs.Var(bench.IntList(&cfg.RunningSizes), "running", "releases per side of the time-to-RUNNING runs, one run per size (empty or 0 skips them)")
	fs.DurationVar(&cfg.RunningTimeout, "running-timeout", cfg.RunningTimeout, "longest wait for the releases of one side to be ready")
	fs.IntVar(&cfg.OperatorOps, "operator-ops", cfg.OperatorOps, "ClusterUpgradeOperations of the operator run (0 skips it)")
	fs.Func("operator-args", "one more ops-operator flag for the operator run, e.g. --concurrent=16 (repeat for more; later flags win)", func(v string) error {
		cfg.OperatorExtraArgs = append(cfg.OperatorExtraArgs, v)
		return nil
	})
	fs.IntVar(&cfg.OperatorNodes, "operator-nodes", cfg.OperatorNodes, "nodes of each simulated cluster's node group in the operator run")
	fs.DurationVar(&cfg.OperatorTimeout, "operator-timeout", cfg.OperatorTimeout, "longest wait for the operator run")
	fs.StringVar(&cfg.ProfileDir, "profile-dir", cfg.ProfileDir, "directory of the CPU and heap profiles of ops-apiserver and ops-operator (empty takes none)")
	_ = fs.Parse(os.Args[1:])
	if err := run(cfg, *md, *js, *state, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "ops-bench:", err)
		os.Exit(1)
	}
}

func run(cfg bench.Config, md, js, state string, keep bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if state == "" {
		dir, err := os.MkdirTemp("", "ops-bench-")
		if err != nil {
			return err
		}
		state = dir
	}
	if !keep {
		defer os.RemoveAll(state)
	}
	cfg.StateDir, cfg.Out = state, os.Stderr
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	b, err := res.JSON()
	if err != nil {
		return err
	}
	for path, content := range map[string][]byte{md: []byte(res.Markdown()), js: b} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "Wrote %s and %s\n", md, js)
	for _, g := range res.Goals {
		fmt.Fprintf(os.Stderr, "  [%s] %s: %s — %s\n", g.Status, g.Area, g.Goal, g.Result)
	}
	return nil
}
