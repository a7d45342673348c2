package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Flux is a running pair of the real Flux source-controller and
// helm-controller, laid out as in the ops-server Pod: the source-controller
// serves and advertises its artifact storage on 127.0.0.1.
type Flux struct {
	Source *Process
	Helm   *Process
	// StorageAddr is the source-controller artifact server (host:port).
	StorageAddr string
}

// FluxOptions configure StartFlux.
type FluxOptions struct {
	// Namespace restricts both controllers to one namespace; empty watches
	// all namespaces.
	Namespace string
	// ExtraHelmArgs are appended to the helm-controller arguments.
	ExtraHelmArgs []string
	// LabelSelector is both controllers' --watch-label-selector (Flux
	// sharding): ops-server's pair watches
	// sharding.fluxcd.io/key=<shard>, a customer's Flux customarily
	// !sharding.fluxcd.io/key. Empty: every object.
	LabelSelector string
	// Name tells a second pair apart: its logs and artifact storage go to
	// a subdirectory of that name. Empty: the environment's directory.
	Name string
}

// FluxArgs are the flags the local harness (and `make dev`) passes to each
// controller besides the addresses: quick requeues so spec changes that
// leave the chart artifact alone are seen in seconds, not the 30 s default.
var FluxArgs = struct{ Source, Helm []string }{
	Source: []string{"--requeue-dependency=5s", "--log-level=info", "--log-encoding=console"},
	Helm:   []string{"--requeue-dependency=5s", "--log-level=info", "--log-encoding=console"},
}

// StartFlux starts source-controller and helm-controller from bin/ against
// the environment and waits until both report ready.
func (e *Environment) StartFlux(ctx context.Context, opts FluxOptions) (*Flux, error) {
	ports := make([]int, 5)
	for i := range ports {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	dir := filepath.Join(e.Dir, opts.Name)
	storage := filepath.Join(dir, "source-storage")
	if err := os.MkdirAll(storage, 0o755); err != nil {
		return nil, err
	}
	storageAddr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	env := []string{"KUBECONFIG=" + e.KubeconfigPath, "RUNTIME_NAMESPACE=" + opts.Namespace}
	watch := "--watch-all-namespaces=true"
	if opts.Namespace != "" {
		watch = "--watch-all-namespaces=false"
	}
	var selector []string
	if opts.LabelSelector != "" {
		selector = []string{"--watch-label-selector=" + opts.LabelSelector}
	}

	sourceHealth := fmt.Sprintf("127.0.0.1:%d", ports[1])
	src, err := StartProcess("source-controller", dir, append(append([]string{
		"--storage-path=" + storage,
		"--storage-addr=" + storageAddr,
		"--storage-adv-addr=" + storageAddr,
		fmt.Sprintf("--metrics-addr=127.0.0.1:%d", ports[2]),
		"--health-addr=" + sourceHealth,
		watch,
	}, FluxArgs.Source...), selector...), env)
	if err != nil {
		return nil, err
	}
	helmHealth := fmt.Sprintf("127.0.0.1:%d", ports[3])
	helm, err := StartProcess("helm-controller", dir, append(append(append([]string{
		fmt.Sprintf("--metrics-addr=127.0.0.1:%d", ports[4]),
		"--health-addr=" + helmHealth,
		watch,
	}, FluxArgs.Helm...), selector...), opts.ExtraHelmArgs...), env)
	if err != nil {
		_ = src.Stop(5 * time.Second)
		return nil, err
	}
	f := &Flux{Source: src, Helm: helm, StorageAddr: storageAddr}
	if err := errors.Join(
		src.WaitHTTPOK(ctx, "http://"+sourceHealth+"/readyz", time.Minute),
		helm.WaitHTTPOK(ctx, "http://"+helmHealth+"/readyz", time.Minute),
	); err != nil {
		f.Stop()
		return nil, err
	}
	return f, nil
}

// Stop stops both controllers.
func (f *Flux) Stop() {
	_ = f.Helm.Stop(10 * time.Second)
	_ = f.Source.Stop(10 * time.Second)
}

// Logs returns the tail of both controllers' logs, for failure messages.
func (f *Flux) Logs() string {
	var b strings.Builder
	for _, p := range []*Process{f.Source, f.Helm} {
		fmt.Fprintf(&b, "----- %s (%s) -----\n%s\n", p.Name, p.LogPath, p.Log(8000))
	}
	return b.String()
}
