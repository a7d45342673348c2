package testenv

import (
	"context"
	"crypto/sha256"
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
	// The controllers' metrics and health addresses (host:port).
	SourceMetricsAddr, SourceHealthAddr string
	HelmMetricsAddr, HelmHealthAddr     string
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
	// LeaderElection, if set, runs both controllers with Flux's leader
	// election on (--enable-leader-election), each Isolated with
	// LeaderElection.Identity as its hostname and LeaderElection.Namespace
	// as its in-cluster namespace (where its Lease is): several pairs
	// then run with one active controller of each kind.
	LeaderElection *FluxLeaderElection
}

// FluxLeaderElection is the leader election of a Flux pair (FluxOptions).
type FluxLeaderElection struct {
	// Namespace holds the Leases (FluxLeaseNames).
	Namespace string
	// Identity is both controllers' hostname: a Lease they hold names
	// "<Identity>_<uuid>" as its holder.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are Flux's
	// --leader-election-* timings.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// args are the controllers' leader election flags.
func (le *FluxLeaderElection) args() []string {
	return []string{
		"--enable-leader-election",
		"--leader-election-lease-duration=" + le.LeaseDuration.String(),
		"--leader-election-renew-deadline=" + le.RenewDeadline.String(),
		"--leader-election-retry-period=" + le.RetryPeriod.String(),
	}
}

// FluxLeaseNames are the names of the Leases source-controller and
// helm-controller elect their leader with, for a --watch-label-selector
// (empty: none): "<controller>-leader-election", suffixed with the first 8
// hex digits of the selector's SHA-256 when sharded (Flux's
// leaderelection.GenerateID).
func FluxLeaseNames(labelSelector string) (source, helm string) {
	source, helm = "source-controller-leader-election", "helm-controller-leader-election"
	if labelSelector != "" {
		sum := fmt.Sprintf("%x", sha256.Sum256([]byte(labelSelector)))[:8]
		source, helm = source+"-"+sum, helm+"-"+sum
	}
	return source, helm
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

	var wrapper, leArgs []string
	if le := opts.LeaderElection; le != nil {
		wrapper, leArgs = Isolated(le.Identity, le.Namespace), le.args()
	}
	sourceHealth := fmt.Sprintf("127.0.0.1:%d", ports[1])
	src, err := StartProcessWrapped("source-controller", dir, wrapper, append(append(append([]string{
		"--storage-path=" + storage,
		"--storage-addr=" + storageAddr,
		"--storage-adv-addr=" + storageAddr,
		fmt.Sprintf("--metrics-addr=127.0.0.1:%d", ports[2]),
		"--health-addr=" + sourceHealth,
		watch,
	}, FluxArgs.Source...), selector...), leArgs...), env)
	if err != nil {
		return nil, err
	}
	helmHealth := fmt.Sprintf("127.0.0.1:%d", ports[3])
	helm, err := StartProcessWrapped("helm-controller", dir, wrapper, append(append(append(append([]string{
		fmt.Sprintf("--metrics-addr=127.0.0.1:%d", ports[4]),
		"--health-addr=" + helmHealth,
		watch,
	}, FluxArgs.Helm...), selector...), leArgs...), opts.ExtraHelmArgs...), env)
	if err != nil {
		_ = src.Stop(5 * time.Second)
		return nil, err
	}
	f := &Flux{
		Source: src, Helm: helm, StorageAddr: storageAddr,
		SourceMetricsAddr: fmt.Sprintf("127.0.0.1:%d", ports[2]), SourceHealthAddr: sourceHealth,
		HelmMetricsAddr: fmt.Sprintf("127.0.0.1:%d", ports[4]), HelmHealthAddr: helmHealth,
	}
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
