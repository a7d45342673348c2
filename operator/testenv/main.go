package testenv

import (
	"fmt"
	"os"
)

// M is the part of *testing.M that RunMain needs (binaries that link this
// package need not link package testing).
type M interface{ Run() int }

// RunMain is the TestMain of a package whose tests share one Environment:
// it starts the Environment with opts, hands it to set (which keeps it in
// the package's variable and does the package's own setup; an error fails
// the run), runs the tests and stops the Environment. It returns the exit
// code for os.Exit; what failed before the tests ran is written to stderr.
func RunMain(m M, opts Options, set func(*Environment) error) int {
	env, err := Start(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	if err := set(env); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
