package stack

import (
	"os"
	"os/exec"

	"github.com/tidbcloud/ops-server/operator/testenv"
)

// BuildBinaries builds ops-apiserver and ops-operator from this tree into
// bin/ (or $OPS_BIN_DIR): the e2e suites run the binaries a user runs.
func BuildBinaries() error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	bin, err := testenv.BinDir()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-o", bin+string(os.PathSeparator), "./apiserver/cmd/ops-apiserver", "./operator/cmd/ops-operator")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}
