package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"

	opsclient "github.com/tidbcloud/ops-server/apiserver/pkg/client"
	"github.com/tidbcloud/ops-server/e2e/stack"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// Labels ops-apiserver puts on what it creates (docs/vmclusters.md,
// docs/upgrades.md).
const (
	labelManagedBy = "app.kubernetes.io/managed-by"
	labelCluster   = "ops.observability.tidbcloud.com/k8s-cluster-name"
)

// readPhase measures the three reads through ops-apiserver and their
// equivalents against kube-apiserver, with ops-apiserver's memory.
func (e *env) readPhase(ctx context.Context, res *Results) error {
	cfg := e.cfg
	if err := e.waitCached(ctx); err != nil {
		return err
	}
	// Idle memory with everything cached, after a moment of quiet.
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(3 * time.Second):
	}
	idle, err := ReadMem(e.apiPID)
	if err != nil {
		return fmt.Errorf("reading ops-apiserver's memory: %w", err)
	}
	res.Footprint.CachedObjects = cfg.VMClusters + cfg.Upgrades
	res.Footprint.APIServerIdleRSSMiB = MiB(idle.RSS)
	e.logf("ops-apiserver RSS idle with %d objects cached: %.0f MiB", res.Footprint.CachedObjects, MiB(idle.RSS))
	if e.apiProf != nil {
		what := fmt.Sprintf("ops-apiserver idle with %d vmclusters and %d upgrade operations cached (after a GC)", cfg.VMClusters, cfg.Upgrades)
		e.saveProfile(res, "ops-apiserver idle heap", func() (ProfileSummary, error) {
			return e.apiProf.heap(ctx, fmt.Sprintf("idle %d objects", res.Footprint.CachedObjects), what)
		})
	}
	sampler := SampleRSS(ctx, e.apiPID, 100*time.Millisecond)

	ns := stack.Namespace
	hrPath := fmt.Sprintf("/apis/%s/namespaces/%s/helmreleases", helmv2.GroupVersion, ns)
	cuoPath := fmt.Sprintf("/apis/%s/namespaces/%s/clusterupgradeoperations", opsv1.GroupVersion, ns)
	managed := url.QueryEscape(labelManagedBy + "=ops-server")
	randomVM := func() int { return rand.IntN(len(e.vmIDs)) }

	rows := []struct {
		name, opsReq, kubeReq string
		ops, kube             Request
	}{
		{
			name:    "list vmclusters, page of 50",
			opsReq:  "GET " + vmclustersPath + "?page_size=50",
			kubeReq: "GET " + hrPath + "?labelSelector=" + labelManagedBy + "%3Dops-server&limit=50",
			ops: func(ctx context.Context, _, _ int) (int, error) {
				return e.ops.get(ctx, vmclustersPath+"?page_size=50")
			},
			kube: func(ctx context.Context, _, _ int) (int, error) {
				return e.kubeAPI.get(ctx, hrPath+"?labelSelector="+managed+"&limit=50")
			},
		},
		{
			name:    "get one vmcluster",
			opsReq:  "GET " + vmclustersPath + "/{id}",
			kubeReq: "GET " + hrPath + "/{name}",
			ops: func(ctx context.Context, _, _ int) (int, error) {
				return e.ops.get(ctx, vmclustersPath+"/"+e.vmIDs[randomVM()])
			},
			kube: func(ctx context.Context, _, _ int) (int, error) {
				return e.kubeAPI.get(ctx, hrPath+"/"+e.vmNames[randomVM()])
			},
		},
		{
			// One operation per cluster (a cluster has at most one
			// active), so the page is of all of them.
			name:    "list upgrade operations, page of 50",
			opsReq:  "GET " + upgradesPath + "?pageSize=50",
			kubeReq: "GET " + cuoPath + "?limit=50",
			ops: func(ctx context.Context, _, _ int) (int, error) {
				return e.ops.get(ctx, upgradesPath+"?pageSize=50")
			},
			kube: func(ctx context.Context, _, _ int) (int, error) {
				return e.kubeAPI.get(ctx, cuoPath+"?limit=50")
			},
		},
	}
	for _, r := range rows {
		c := Comparison{Name: r.name, Clients: cfg.Clients, OpsRequest: r.opsReq, KubeRequest: r.kubeReq}
		var prof cpuCollector
		// Alternating sides, so that both see the same drift of the
		// machine; ops-apiserver is profiled during each of its runs.
		for range cfg.Repeats {
			if cfg.Warmup > 0 {
				RunFor(ctx, cfg.Clients, cfg.Warmup, r.ops)
			}
			c.OpsRuns = append(c.OpsRuns, Summarize(e.profiledFor(ctx, &prof, cfg.Duration, func() Sample {
				return RunFor(ctx, cfg.Clients, cfg.Duration, r.ops)
			})))
			if cfg.Warmup > 0 {
				RunFor(ctx, cfg.Clients, cfg.Warmup, r.kube)
			}
			c.KubeRuns = append(c.KubeRuns, Summarize(RunFor(ctx, cfg.Clients, cfg.Duration, r.kube)))
			if ctx.Err() != nil {
				sampler.Stop()
				return ctx.Err()
			}
		}
		c.Ops, c.Kube = MedianStats(c.OpsRuns), MedianStats(c.KubeRuns)
		e.saveCPU(res, &prof, "read "+r.name, fmt.Sprintf("ops-apiserver during the %d ops-apiserver runs of \"%s\" (%d clients, %s each)", cfg.Repeats, r.name, cfg.Clients, cfg.Duration))
		e.logf("  %s (median of %d): ops-apiserver %.0f req/s p50 %s ms p99 %s ms (%d errors); kube-apiserver %.0f req/s p50 %s ms p99 %s ms (%d errors)", c.Name, cfg.Repeats,
			c.Ops.PerSecond, fmtMs(c.Ops.P50Ms), fmtMs(c.Ops.P99Ms), c.Ops.Errors, c.Kube.PerSecond, fmtMs(c.Kube.P50Ms), fmtMs(c.Kube.P99Ms), c.Kube.Errors)
		res.Read = append(res.Read, c)
	}
	res.Footprint.APIServerLoadRSSMiB = MiB(sampler.Stop())
	if m, err := ReadMem(e.apiPID); err == nil {
		res.Footprint.APIServerPeakRSSMiB = MiB(m.Peak)
	}
	e.logf("ops-apiserver RSS under load: %.0f MiB (peak since start %.0f MiB)", res.Footprint.APIServerLoadRSSMiB, res.Footprint.APIServerPeakRSSMiB)
	return nil
}

// waitCached waits until ops-apiserver lists every vmcluster and every
// upgrade operation the write path created.
func (e *env) waitCached(ctx context.Context) error {
	cfg := e.cfg
	var vms, ups int
	ok, err := poll(ctx, 500*time.Millisecond, time.Minute, func() (bool, error) {
		var err error
		if vms, err = e.countVMClusters(ctx, ""); err != nil {
			return false, err
		}
		if ups, err = e.countUpgrades(ctx, ""); err != nil {
			return false, err
		}
		return vms == cfg.VMClusters && ups == cfg.Upgrades, nil
	})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("ops-apiserver lists %d vmclusters and %d upgrade operations, want %d and %d", vms, ups, cfg.VMClusters, cfg.Upgrades)
	}
	return nil
}

// vmclusterList is the body of GET /vmclusters.
type vmclusterList struct {
	VMClusters []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	} `json:"vmclusters"`
	NextPageToken string `json:"next_page_token"`
}

// listVMClusters returns the status of every vmcluster, by name (without
// the "vmclusters/" prefix), following the pages.
func (e *env) listVMClusters(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	token := ""
	for {
		path := vmclustersPath + "?page_size=1000"
		code, body, err := read(e.opsAPI.VmclustersList(ctx, &opsclient.VmclustersListParams{PageSize: opsclient.Opt(1000), PageToken: opsclient.Opt(token)}))
		if err != nil {
			return nil, err
		}
		if err := expect(http.MethodGet, path, code, body, http.StatusOK); err != nil {
			return nil, err
		}
		var l vmclusterList
		if err := json.Unmarshal(body, &l); err != nil {
			return nil, fmt.Errorf("GET %s: %w", path, err)
		}
		for _, v := range l.VMClusters {
			name := v.Name
			if len(name) > len("vmclusters/") && name[:len("vmclusters/")] == "vmclusters/" {
				name = name[len("vmclusters/"):]
			}
			out[name] = v.Status
		}
		if l.NextPageToken == "" {
			return out, nil
		}
		token = l.NextPageToken
	}
}

// countVMClusters counts the vmclusters the API lists, with a status if
// status is not "".
func (e *env) countVMClusters(ctx context.Context, status string) (int, error) {
	all, err := e.listVMClusters(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range all {
		if status == "" || s == status {
			n++
		}
	}
	return n, nil
}

// countUpgrades counts the upgrade operations of a cluster the API lists.
func (e *env) countUpgrades(ctx context.Context, cluster string) (int, error) {
	n := 0
	token := ""
	for {
		path := upgradesPath + "?k8sClusterName=" + url.QueryEscape(cluster)
		params := &opsclient.UpgradeOperationsListParams{PageSize: opsclient.Opt(1000), PageToken: opsclient.Opt(token)}
		if cluster != "" {
			params.K8sClusterName = opsclient.Opt(cluster)
		}
		code, body, err := read(e.opsAPI.UpgradeOperationsList(ctx, params))
		if err != nil {
			return 0, err
		}
		if err := expect(http.MethodGet, path, code, body, http.StatusOK); err != nil {
			return 0, err
		}
		var l struct {
			UpgradeOperations []json.RawMessage `json:"upgradeOperations"`
			NextPageToken     string            `json:"nextPageToken"`
		}
		if err := json.Unmarshal(body, &l); err != nil {
			return 0, fmt.Errorf("GET %s: %w", path, err)
		}
		n += len(l.UpgradeOperations)
		if l.NextPageToken == "" {
			return n, nil
		}
		token = l.NextPageToken
	}
}
