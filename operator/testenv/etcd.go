package testenv

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// EtcdPID returns the process id of the environment's etcd, for tests that
// make the Kubernetes API unavailable for a while (SIGSTOP, then SIGCONT).
// envtest keeps the process to itself; the etcd is found in /proc by its
// data directory, which is this environment's own.
func (e *Environment) EtcdPID() (int, error) {
	dataDir := e.env.ControlPlane.Etcd.DataDir
	if dataDir == "" {
		return 0, fmt.Errorf("etcd has no data directory yet")
	}
	want := []byte("--data-dir=" + dataDir)
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		return 0, err
	}
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // gone meanwhile
		}
		args := bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0})
		if len(args) == 0 || filepath.Base(string(args[0])) != "etcd" {
			continue
		}
		for _, a := range args[1:] {
			if bytes.Equal(a, want) {
				return strconv.Atoi(filepath.Base(filepath.Dir(p)))
			}
		}
	}
	return 0, fmt.Errorf("no etcd process with --data-dir=%s", dataDir)
}
