package bench

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/e2e/stack"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

// runningPhase runs runningSize for each size of Config.RunningSizes, in
// order, uninstalling the releases of one size before the next.
func (e *env) runningPhase(ctx context.Context, res *Results) error {
	cfg := e.cfg
	if e.vmTemplate == nil {
		return fmt.Errorf("no vmcluster was created by the write path to copy")
	}
	// The objects of the read and write paths never met Flux: they have no
	// finalizer and go at once.
	e.logf("Deleting the %d vmclusters of the read path and their direct copies", cfg.VMClusters)
	for _, ns := range []string{stack.Namespace, namespaceDirect} {
		if err := e.kube.DeleteAllOf(ctx, &helmv2.HelmRelease{}, client.InNamespace(ns), stack.NotStack()); err != nil {
			return err
		}
		if err := e.kube.DeleteAllOf(ctx, &sourcev1.HelmRepository{}, client.InNamespace(ns), stack.NotStack()); err != nil {
			return err
		}
	}
	if err := e.waitReleasesGone(ctx, time.Minute, ""); err != nil {
		return err
	}
	e.logf("Starting Flux again")
	f, err := e.st.Env.StartFlux(ctx, testenv.FluxOptions{})
	if err != nil {
		return fmt.Errorf("starting Flux: %w", err)
	}
	e.st.Flux = f

	for i, n := range cfg.RunningSizes {
		if i > 0 {
			e.logf("Deleting the %d HelmReleases of Flux alone; waiting for the uninstalls", cfg.RunningSizes[i-1])
			if err := e.kube.DeleteAllOf(ctx, &helmv2.HelmRelease{}, client.InNamespace(stack.Namespace), stack.NotStack()); err != nil {
				return err
			}
			if err := e.kube.DeleteAllOf(ctx, &sourcev1.HelmRepository{}, client.InNamespace(stack.Namespace), stack.NotStack()); err != nil {
				return err
			}
			if err := e.waitReleasesGone(ctx, cfg.RunningTimeout, ""); err != nil {
				return err
			}
		}
		rr := RunningResult{N: n}
		err := e.runningSize(ctx, &rr)
		if rr.Ops.Seconds > 0 || rr.Flux.Seconds > 0 {
			res.Running = append(res.Running, rr)
		}
		if err != nil {
			return fmt.Errorf("%d releases: %w", n, err)
		}
	}
	return nil
}

// runningSize times rr.N vmclusters POSTed at once until RUNNING, then
// rr.N equivalent HelmReleases created directly until Ready.
func (e *env) runningSize(ctx context.Context, rr *RunningResult) error {
	cfg := e.cfg
	n := rr.N
	var err error
	// ops-server: POST at once, poll GET /vmclusters.
	e.logf("POSTing %d vmclusters at once; waiting until all are RUNNING (at most %s)", n, cfg.RunningTimeout)
	apiName := func(i int) string { return fmt.Sprintf("run-api-%03d", i) }
	start := time.Now()
	created := RunN(ctx, n, n, func(ctx context.Context, _, seq int) (int, error) {
		_, size, err := e.postVMCluster(ctx, apiName(seq))
		return size, err
	})
	rr.Ops.CreateSeconds = created.Elapsed.Seconds()
	if created.Errors > 0 {
		return fmt.Errorf("%d of %d POSTs failed; first: %v", created.Errors, n, created.FirstError)
	}
	rr.Ops, err = e.waitReady(ctx, n, start, rr.Ops, func(ctx context.Context) (map[string]readiness, error) {
		all, err := e.listVMClusters(ctx)
		if err != nil {
			return nil, err
		}
		out := map[string]readiness{}
		for name, status := range all {
			if strings.HasPrefix(name, "run-api-") {
				out[name] = readiness{ready: status == "RUNNING", failed: status == "FAILED"}
			}
		}
		return out, nil
	})
	if err != nil {
		return err
	}
	e.logf("  ops-server: %d/%d RUNNING after %.1f s (%d FAILED)", rr.Ops.Ready, n, rr.Ops.Seconds, rr.Ops.Failed)

	// Delete them through the API and wait for the uninstalls.
	e.logf("Deleting them through the API; waiting for the uninstalls")
	cleanup := time.Now()
	deleted := RunN(ctx, e.cfg.Clients, n, func(ctx context.Context, _, seq int) (int, error) {
		path := vmclustersPath + "/" + apiName(seq)
		code, body, err := read(e.opsAPI.VmclustersDelete(ctx, apiName(seq), nil))
		if err != nil {
			return 0, err
		}
		return len(body), expect(http.MethodDelete, path, code, body, http.StatusAccepted, http.StatusNotFound)
	})
	if deleted.Errors > 0 {
		return fmt.Errorf("%d of %d DELETEs failed; first: %v", deleted.Errors, n, deleted.FirstError)
	}
	if err := e.waitReleasesGone(ctx, cfg.RunningTimeout, "run-api-"); err != nil {
		return err
	}
	rr.CleanupSeconds = time.Since(cleanup).Seconds()

	// Flux alone: the same HelmReleases and HelmRepositories, created
	// directly, without ops-server's labels.
	e.logf("Creating %d HelmReleases directly at once; waiting until all are Ready (at most %s)", n, cfg.RunningTimeout)
	fluxName := func(i int) string { return fmt.Sprintf("run-flux-%03d", i) }
	start = time.Now()
	created = RunN(ctx, n, n, func(ctx context.Context, _, seq int) (int, error) {
		return 0, e.vmTemplate.create(ctx, e.kube, stack.Namespace, fluxName(seq), false)
	})
	rr.Flux.CreateSeconds = created.Elapsed.Seconds()
	if created.Errors > 0 {
		return fmt.Errorf("%d of %d direct creates failed; first: %v", created.Errors, n, created.FirstError)
	}
	rr.Flux, err = e.waitReady(ctx, n, start, rr.Flux, func(ctx context.Context) (map[string]readiness, error) {
		var list helmv2.HelmReleaseList
		if err := e.kube.List(ctx, &list, client.InNamespace(stack.Namespace)); err != nil {
			return nil, err
		}
		out := map[string]readiness{}
		for i := range list.Items {
			if hr := &list.Items[i]; strings.HasPrefix(hr.Name, "run-flux-") {
				out[hr.Name] = releaseReadiness(hr)
			}
		}
		return out, nil
	})
	if err != nil {
		return err
	}
	e.logf("  Flux alone: %d/%d Ready after %.1f s (%d failed)", rr.Flux.Ready, n, rr.Flux.Seconds, rr.Flux.Failed)
	return nil
}

// readiness is what one poll saw of one release.
type readiness struct{ ready, failed bool }

// releaseReadiness applies to a plain HelmRelease the rule the API's
// RUNNING and FAILED follow: Ready=True for the current generation;
// Stalled=True, or Released=False, for the current generation.
func releaseReadiness(hr *helmv2.HelmRelease) readiness {
	current := func(t string, s metav1.ConditionStatus) bool {
		c := apimeta.FindStatusCondition(hr.Status.Conditions, t)
		return c != nil && c.ObservedGeneration == hr.Generation && c.Status == s
	}
	return readiness{
		ready:  current(meta.ReadyCondition, metav1.ConditionTrue),
		failed: current(meta.StalledCondition, metav1.ConditionTrue) || current(helmv2.ReleasedCondition, metav1.ConditionFalse),
	}
}

// waitReady polls every second until n releases are ready or the timeout
// passes, timing each release from start to the first poll that saw it
// ready.
func (e *env) waitReady(ctx context.Context, n int, start time.Time, t TimeToReady, look func(context.Context) (map[string]readiness, error)) (TimeToReady, error) {
	readyAt := map[string]time.Duration{}
	var last map[string]readiness
	done, err := poll(ctx, time.Second, e.cfg.RunningTimeout, func() (bool, error) {
		seen, err := look(ctx)
		if err != nil {
			return false, err
		}
		now := time.Since(start)
		last = seen
		for name, r := range seen {
			if _, ok := readyAt[name]; r.ready && !ok {
				readyAt[name] = now
			}
		}
		return len(readyAt) >= n, nil
	})
	if err != nil {
		return t, err
	}
	t.TimedOut = !done
	t.Seconds = time.Since(start).Seconds()
	if done {
		var latest time.Duration
		for _, d := range readyAt {
			latest = max(latest, d)
		}
		t.Seconds = latest.Seconds()
	}
	t.Ready = len(readyAt)
	for _, r := range last {
		if r.failed && !r.ready {
			t.Failed++
		}
	}
	times := make([]time.Duration, 0, len(readyAt))
	for _, d := range readyAt {
		times = append(times, d)
	}
	slices.Sort(times)
	t.P50Seconds, t.P99Seconds = Percentile(times, 50).Seconds(), Percentile(times, 99).Seconds()
	return t, nil
}

// waitReleasesGone waits until no HelmRelease whose name has prefix is
// left in the stack's namespace and the direct one.
func (e *env) waitReleasesGone(ctx context.Context, timeout time.Duration, prefix string) error {
	left := 0
	ok, err := poll(ctx, time.Second, timeout, func() (bool, error) {
		left = 0
		for _, ns := range []string{stack.Namespace, namespaceDirect} {
			var list helmv2.HelmReleaseList
			if err := e.kube.List(ctx, &list, client.InNamespace(ns), stack.NotStack()); err != nil {
				return false, err
			}
			for _, hr := range list.Items {
				if strings.HasPrefix(hr.Name, prefix) {
					left++
				}
			}
		}
		return left == 0, nil
	})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%d HelmReleases are still there after %s", left, timeout)
	}
	return nil
}
