package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// wrapBinDir fills dir with links to every binary of binDir, except name,
// which becomes a script running the real binary with extra flags after
// its own (later flags win). Pointing OPS_BIN_DIR at dir makes the local
// stack start name with those flags without the stack knowing.
func wrapBinDir(binDir, dir, name string, extra []string) error {
	entries, err := os.ReadDir(binDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		src := filepath.Join(binDir, e.Name())
		dst := filepath.Join(dir, e.Name())
		if e.Name() == name {
			continue
		}
		if err := os.Symlink(src, dst); err != nil && !os.IsExist(err) {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, name), []byte(wrapperScript(filepath.Join(binDir, name), extra)), 0o755)
}

// wrapperScript is a POSIX shell script that execs bin with its arguments
// and then extra (so the process keeps the script's pid).
func wrapperScript(bin string, extra []string) string {
	quoted := make([]string, 0, len(extra)+1)
	quoted = append(quoted, shellQuote(bin), `"$@"`)
	for _, a := range extra {
		quoted = append(quoted, shellQuote(a))
	}
	return "#!/bin/sh\nexec " + strings.Join(quoted, " ") + "\n"
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// hasFlag reports whether the binary's --help lists flag.
func hasFlag(bin, flag string) bool {
	out, _ := exec.Command(bin, "--help").CombinedOutput()
	return strings.Contains(string(out), flag+" ") || strings.Contains(string(out), flag+"=")
}

// apiserverExtraArgs are the flags the benchmark adds to ops-apiserver's:
// its per-caller and per-client-address rate limits off, because every
// request of the benchmark comes from one caller on one address (the
// limits protect the server from one client; the benchmark measures what
// the server can serve). Only flags this build of ops-apiserver knows are
// added.
func apiserverExtraArgs(bin string) []string {
	var out []string
	for _, flag := range []string{"--rate-limit-qps", "--client-rate-limit-qps"} {
		if hasFlag(bin, flag) {
			out = append(out, flag+"=0")
		}
	}
	return out
}

// pprofFlag serves Go's /debug/pprof/ on a loopback address, in
// ops-apiserver and ops-operator alike.
const pprofFlag = "--pprof-bind-address"
