package stack

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/tidbcloud/ops-server/operator/testenv"
)

// BuildBinaries builds ops-apiserver, ops-operator and opsctl from this tree into
// bin/ (or $OPS_BIN_DIR): the e2e suites run the binaries a user runs.
// Suites in different packages (stories, faults) run at the same time
// under `go test ./e2e/...`: the builds take turns (a lock file in bin/)
// and each renames fresh binaries into place, so a binary the other
// suite's stack is running is replaced, never rewritten.
func BuildBinaries() error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	bin, err := testenv.BinDir()
	if err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(bin, ".e2e-build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	tmp, err := os.MkdirTemp(bin, ".e2e-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("go", "build", "-o", tmp+string(os.PathSeparator), "./apiserver/cmd/ops-apiserver", "./operator/cmd/ops-operator", "./apiserver/cmd/opsctl")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return err
	}
	for _, name := range []string{"ops-apiserver", "ops-operator", "opsctl"} {
		if err := os.Rename(filepath.Join(tmp, name), filepath.Join(bin, name)); err != nil {
			return err
		}
	}
	return nil
}
