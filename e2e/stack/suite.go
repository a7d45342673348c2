package stack

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/tidbcloud/ops-server/operator/testenv"
)

// RunSuite is the TestMain of an e2e suite (stories, faults): it builds
// ops-apiserver and ops-operator (BuildBinaries), starts the stack with
// ops-operator and ops-apiserver on a free 127.0.0.1 port in a new state
// directory (prefix is its os.MkdirTemp pattern), keeps it in *st, runs
// the tests, calls onFailure when they fail, then stops the stack and
// removes the state directory. It returns the exit code for os.Exit.
// When the stack does not start, it writes the logs of what did. Each
// configure function may change the Options before the start (e.g.
// Replicas for the HA suite).
func RunSuite(m testenv.M, prefix string, st **Stack, onFailure func(), configure ...func(*Options)) int {
	if err := BuildBinaries(); err != nil {
		fmt.Fprintln(os.Stderr, "building ops-apiserver and ops-operator:", err)
		return 1
	}
	state, err := os.MkdirTemp("", prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	port, err := testenv.FreePort()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Starting includes bootstrapping: helm-controller installs the
	// VictoriaMetrics operator and its CRDs.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	o := Options{StateDir: state, Out: os.Stderr, WithOperator: true, APIAddress: fmt.Sprintf("127.0.0.1:%d", port)}
	for _, c := range configure {
		c(&o)
	}
	s, err := Start(ctx, o)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the stack:", err)
		if s != nil {
			s.WriteLogs(os.Stderr, 6000)
			s.Stop()
		}
		return 1
	}
	*st = s
	code := m.Run()
	if code != 0 {
		onFailure()
	}
	s.Stop()
	_ = os.RemoveAll(state)
	return code
}
