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

// AssetsEnv names the directory of control-plane binaries envtest and
// setup-envtest use (etcd, kube-apiserver, kubectl). When it is set, those
// binaries are taken from it instead of bin/, as in kubebuilder projects.
const AssetsEnv = "KUBEBUILDER_ASSETS"

// assetBinaries are the binaries $KUBEBUILDER_ASSETS provides.
var assetBinaries = map[string]bool{"etcd": true, "kube-apiserver": true, "kubectl": true}

// Binary returns the path of a tool binary: for etcd, kube-apiserver and
// kubectl $KUBEBUILDER_ASSETS/<name> when that variable is set, otherwise
// <BinDir>/<name> as built (or linked) by `make tools`; a missing binary is
// an error that says how to get it. etcd and kube-apiserver must be in
// $KUBEBUILDER_ASSETS when it is set (a mistyped directory is not silently
// replaced by bin/); a kubectl missing there is taken from bin/.
func Binary(name string) (string, error) {
	if assets := os.Getenv(AssetsEnv); assets != "" && assetBinaries[name] {
		p := filepath.Join(assets, name)
		if err := executable(p); err == nil || name != "kubectl" {
			if err != nil {
				return "", fmt.Errorf("testenv: %s=%s: %w (unset it to use bin/ from `make tools`)", AssetsEnv, assets, err)
			}
			return p, nil
		}
	}
	dir, err := BinDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	if err := executable(p); err != nil {
		return "", fmt.Errorf("testenv: %w: run `make tools` to build it into bin/", err)
	}
	return p, nil
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("%s not found (%v)", p, err)
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}
