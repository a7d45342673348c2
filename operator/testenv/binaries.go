package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// RepoRoot is the directory holding go.work, found from the working
// directory upwards (go test runs in the package's directory).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testenv: no go.work found above the working directory; run the tests from inside the ops-server checkout")
		}
		dir = parent
	}
}

// BinDir is where the tool binaries live: $OPS_BIN_DIR, or bin/ at the
// repository root.
func BinDir() (string, error) {
	if d := os.Getenv("OPS_BIN_DIR"); d != "" {
		return d, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "bin"), nil
}

func mustBinDir() string {
	d, err := BinDir()
	if err != nil {
		return "bin"
	}
	return d
}

// Binary returns the path of a tool binary built by `make tools`, or an
// error that says how to build it.
func Binary(name string) (string, error) {
	dir, err := BinDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	fi, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("testenv: %s not found (%v): run `make tools` to build it into bin/", p, err)
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("testenv: %s is not an executable file: run `make tools`", p)
	}
	return p, nil
}
