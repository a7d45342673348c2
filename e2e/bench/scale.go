package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/e2e/stack"
)

func scaleName(i int) string { return fmt.Sprintf("scale-vm-%05d", i) }

// scalePhase is the cost curve: at each vmcluster count of
// Config.ScaleSizes, ops-apiserver's idle RSS and a short list run (a page
// of 50). The vmclusters beyond the read path's are created straight in
// kube-apiserver as copies of one the API created (vmTemplate: the same
// HelmRelease and HelmRepository, names and labels adjusted), with Flux
// stopped. At the end every vmcluster is deleted, the read path's too
// (the phases after this one start from none).
func (e *env) scalePhase(ctx context.Context, res *Results) error {
	cfg := e.cfg
	if e.vmTemplate == nil {
		return fmt.Errorf("no vmcluster was created by the write path to copy")
	}
	sr := &ScaleResult{Clients: cfg.Clients, UpgradeOperations: cfg.Upgrades}
	res.Scale = sr
	var added []string
	err := e.measureScale(ctx, res, sr, &added)
	if len(added) > 0 && ctx.Err() == nil {
		e.logf("Deleting every vmcluster (the %d added for the cost curve and the read path's)", len(added))
		start := time.Now()
		if cerr := e.deleteVMClusters(ctx); cerr != nil {
			err = errors.Join(err, cerr)
		}
		sr.CleanupSeconds = time.Since(start).Seconds()
	}
	sr.computeSlope()
	return err
}

func (e *env) measureScale(ctx context.Context, res *Results, sr *ScaleResult, added *[]string) error {
	cfg := e.cfg
	current := cfg.VMClusters
	list := func(ctx context.Context, _, _ int) (int, error) {
		return e.ops.get(ctx, vmclustersPath+"?page_size=50")
	}
	for _, size := range cfg.ScaleSizes {
		p := ScalePoint{VMClusters: size}
		if size < current {
			p.Skipped = fmt.Sprintf("below the %d vmclusters of the read path", cfg.VMClusters)
			sr.Points = append(sr.Points, p)
			continue
		}
		if n := size - current; n > 0 {
			e.logf("Creating %d vmclusters directly (the HelmRelease and HelmRepository ops-apiserver would create), %d clients", n, cfg.Clients)
			first := len(*added)
			for i := range n {
				*added = append(*added, scaleName(first+i))
			}
			created := RunN(ctx, cfg.Clients, n, func(ctx context.Context, _, seq int) (int, error) {
				return 0, e.vmTemplate.create(ctx, e.kube, stack.Namespace, scaleName(first+seq), true)
			})
			if created.Errors > 0 {
				return fmt.Errorf("%d of %d direct creates failed; first: %v", created.Errors, n, created.FirstError)
			}
			p.Created, p.CreateSeconds = n, created.Elapsed.Seconds()
			current = size
		}
		if err := e.waitListed(ctx, size, 3*time.Minute); err != nil {
			return err
		}
		if e.apiProf != nil {
			// The heap after a GC: the live bytes of this count, and the
			// garbage of the creates collected before the RSS settles.
			what := fmt.Sprintf("ops-apiserver idle with %d vmclusters and %d upgrade operations cached (after a GC)", size, cfg.Upgrades)
			e.saveProfile(res, fmt.Sprintf("ops-apiserver heap at %d vmclusters", size), func() (ProfileSummary, error) {
				s, err := e.apiProf.heap(ctx, fmt.Sprintf("%d vmclusters", size), what)
				if err == nil && s.Unit == "bytes" {
					p.LiveHeapMiB = MiB(uint64(max(s.Total, 0)))
				}
				return s, err
			})
		}
		rss, err := e.settledRSS(ctx)
		if err != nil {
			return err
		}
		p.IdleRSSMiB = rss
		if cfg.Warmup > 0 {
			RunFor(ctx, cfg.Clients, cfg.Warmup, list)
		}
		p.List = Summarize(RunFor(ctx, cfg.Clients, cfg.ScaleDuration, list))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		e.logf("  %d vmclusters: RSS idle %.0f MiB; list, page of 50: %.0f req/s p50 %s ms p99 %s ms (%d errors)",
			size, p.IdleRSSMiB, p.List.PerSecond, fmtMs(p.List.P50Ms), fmtMs(p.List.P99Ms), p.List.Errors)
		sr.Points = append(sr.Points, p)
	}
	return nil
}

// waitListed waits until ops-apiserver lists exactly n vmclusters.
func (e *env) waitListed(ctx context.Context, n int, timeout time.Duration) error {
	got := 0
	ok, err := poll(ctx, time.Second, timeout, func() (bool, error) {
		var err error
		got, err = e.countVMClusters(ctx, "")
		return got == n, err
	})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("ops-apiserver lists %d vmclusters after %s, want %d", got, timeout, n)
	}
	return nil
}

// settledRSS waits until ops-apiserver's resident set stops moving (three
// readings a second apart within 1 MiB, at most 30 s) and returns it in
// MiB.
func (e *env) settledRSS(ctx context.Context) (float64, error) {
	var readings []float64
	_, err := poll(ctx, time.Second, 30*time.Second, func() (bool, error) {
		m, err := ReadMem(e.apiPID)
		if err != nil {
			return false, fmt.Errorf("reading ops-apiserver's memory: %w", err)
		}
		readings = append(readings, MiB(m.RSS))
		if len(readings) < 3 {
			return false, nil
		}
		w := readings[len(readings)-3:]
		return max(w[0], w[1], w[2])-min(w[0], w[1], w[2]) <= 1, nil
	})
	if err != nil {
		return 0, err
	}
	return readings[len(readings)-1], nil
}

// deleteVMClusters deletes every vmcluster (one collection delete of
// their HelmReleases and HelmRepositories, quicker than one request per
// object) and waits until ops-apiserver lists none.
func (e *env) deleteVMClusters(ctx context.Context) error {
	for _, obj := range []client.Object{&helmv2.HelmRelease{}, &sourcev1.HelmRepository{}} {
		// A collection delete of 10,000 objects outlasts kube-apiserver's
		// request timeout (a 504 while it goes on deleting): send it again
		// until it answers, the objects left fewer each time.
		var err error
		for range 10 {
			if err = e.kube.DeleteAllOf(ctx, obj, client.InNamespace(stack.Namespace), stack.NotStack()); !apierrors.IsTimeout(err) && !apierrors.IsServerTimeout(err) {
				break
			}
			e.logf("  the collection delete timed out on the server; sending it again")
		}
		if err != nil {
			return err
		}
	}
	return e.waitListed(ctx, 0, 3*time.Minute)
}
