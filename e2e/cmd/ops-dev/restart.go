package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/tidbcloud/ops-server/e2e/binwatch"
	"github.com/tidbcloud/ops-server/e2e/stack"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

// restartOnRebuild restarts ops-apiserver or ops-operator when its binary
// in bin/ is rebuilt (the Tiltfile's local mode rebuilds them on every
// source change), until ctx ends. The rest of the stack keeps running.
func restartOnRebuild(ctx context.Context, s *stack.Stack, addr string) error {
	api, err := testenv.Binary("ops-apiserver")
	if err != nil {
		return err
	}
	op, err := testenv.Binary("ops-operator")
	if err != nil {
		return err
	}
	w := binwatch.New(api, op)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		for _, p := range w.Poll() {
			var err error
			switch p {
			case api:
				fmt.Println("ops-dev: bin/ops-apiserver rebuilt: restarting it")
				s.StopAPIServer()
				err = s.StartAPIServer(ctx, addr)
			case op:
				fmt.Println("ops-dev: bin/ops-operator rebuilt: restarting it")
				s.StopOperator()
				err = s.StartOperator(ctx)
			}
			if err != nil {
				// A binary that does not start is the developer's to fix:
				// say so and wait for the next build.
				fmt.Fprintln(os.Stderr, "ops-dev: restart failed:", err)
			}
		}
	}
}
