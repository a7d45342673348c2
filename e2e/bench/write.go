package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/client"

	opsclient "github.com/tidbcloud/ops-server/apiserver/pkg/client"
	"github.com/tidbcloud/ops-server/e2e/stack"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// REST paths (apiserver/internal/openapi/openapi.yaml).
const (
	vmclustersPath = "/api/v1/observability-ops/vmclusters"
	upgradesPath   = "/ops/api/v1/upgradeOperations"
)

// vmValues are the Helm values of every vmcluster the benchmark creates:
// one pod of each component.
var vmValues = map[string]any{
	"vmstorage": map[string]any{"replicaCount": 1},
	"vmselect":  map[string]any{"replicaCount": 1},
	"vminsert":  map[string]any{"replicaCount": 1},
}

func vmName(i int) string { return fmt.Sprintf("bench-vm-%04d", i) }

func upgradeCluster(i, clusters int) string { return fmt.Sprintf("bench-cluster-%03d", i%clusters) }

// upgradeBody is a blue-green upgrade without a vmstorage rollout, as a
// user POSTs it.
func upgradeBody(cluster string) map[string]any {
	return map[string]any{
		"k8sClusterName": cluster, "region": "local", "cloudProvider": "mock", "targetVersion": "1.30",
		"nodeGroupUpgrades": []any{map[string]any{"nodeGroupName": "ng", "strategy": "blue-green", "newNodeGroupName": "ng-130"}},
	}
}

// postVMCluster creates vmcluster name through the API and returns its id.
func (e *env) postVMCluster(ctx context.Context, name string) (string, int, error) {
	code, resp, err := read(e.opsAPI.VmclustersCreate(ctx, opsclient.VMClusterCreate{Name: name, Values: vmValues}))
	if err != nil {
		return "", 0, err
	}
	if err := expect(http.MethodPost, vmclustersPath, code, resp, http.StatusAccepted); err != nil {
		return "", 0, err
	}
	var v struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(resp, &v); err != nil || v.ID == "" {
		return "", 0, fmt.Errorf("POST %s: no id in %s", vmclustersPath, truncate(string(resp), 200))
	}
	return v.ID, len(resp), nil
}

// postUpgrade creates an upgrade operation through the API and returns
// its object name.
func (e *env) postUpgrade(ctx context.Context, cluster string) (string, int, error) {
	body, _ := json.Marshal(upgradeBody(cluster))
	code, resp, err := read(e.opsAPI.UpgradeOperationsCreateWithBody(ctx, nil, "application/json", bytes.NewReader(body)))
	if err != nil {
		return "", 0, err
	}
	if err := expect(http.MethodPost, upgradesPath, code, resp, http.StatusAccepted); err != nil {
		return "", 0, err
	}
	var v struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(resp, &v); err != nil || v.Name == "" {
		return "", 0, fmt.Errorf("POST %s: no name in %s", upgradesPath, truncate(string(resp), 200))
	}
	return v.Name, len(resp), nil
}

// writePhase creates the vmclusters and upgrade operations of the read
// path through the API, timing it, and the same objects directly.
func (e *env) writePhase(ctx context.Context, res *Results) error {
	cfg := e.cfg
	if err := e.ensureNamespace(ctx, namespaceDirect); err != nil {
		return err
	}
	serial := min(cfg.WriteSerial, cfg.VMClusters, cfg.Upgrades)
	e.vmIDs, e.vmNames = make([]string, cfg.VMClusters), make([]string, cfg.VMClusters)

	// vmclusters: the API side first (its first object is the template of
	// the direct side), then the direct side, one client then many.
	apiVM := func(offset int) Request {
		return func(ctx context.Context, _, seq int) (int, error) {
			i := offset + seq
			id, n, err := e.postVMCluster(ctx, vmName(i))
			if err == nil {
				e.vmIDs[i], e.vmNames[i] = id, vmName(i)
			}
			return n, err
		}
	}
	directVM := func(offset int) Request {
		return func(ctx context.Context, _, seq int) (int, error) {
			return 0, e.vmTemplate.create(ctx, e.kube, namespaceDirect, vmName(offset+seq), true)
		}
	}
	// The template: one vmcluster created before the timed runs.
	id, _, err := e.postVMCluster(ctx, vmName(0))
	if err != nil {
		return err
	}
	e.vmIDs[0], e.vmNames[0] = id, vmName(0)
	if e.vmTemplate, err = loadVMTemplate(ctx, e.kube, stack.Namespace, vmName(0)); err != nil {
		return err
	}
	if err := e.vmTemplate.create(ctx, e.kube, namespaceDirect, vmName(0), true); err != nil {
		return err
	}
	serialVM := min(serial, cfg.VMClusters-1)
	e.logf("POST %s: %d by one client, then %d by %d clients; the same objects directly", vmclustersPath, serialVM, cfg.VMClusters-1-serialVM, cfg.Clients)
	res.Write = append(res.Write, e.compareWrites(ctx, res, "create a vmcluster", 1, 1, 1, serialVM,
		"POST "+vmclustersPath, "POST helmreleases, POST helmrepositories", apiVM, directVM))
	res.Write = append(res.Write, e.compareWrites(ctx, res, "create a vmcluster", cfg.Clients, cfg.Repeats, 1+serialVM, cfg.VMClusters-1-serialVM,
		"POST "+vmclustersPath, "POST helmreleases, POST helmrepositories", apiVM, directVM))

	// Upgrade operations, the same way.
	name, _, err := e.postUpgrade(ctx, upgradeCluster(0, cfg.UpgradeClusters))
	if err != nil {
		return err
	}
	e.upTemplate = &opsv1.ClusterUpgradeOperation{}
	if err := e.kube.Get(ctx, client.ObjectKey{Namespace: stack.Namespace, Name: name}, e.upTemplate); err != nil {
		return fmt.Errorf("reading the upgrade operation the API created: %w", err)
	}
	if err := e.kube.Create(ctx, upgradeCopy(e.upTemplate, namespaceDirect, upgradeCluster(0, cfg.UpgradeClusters))); err != nil {
		return err
	}
	apiUp := func(offset int) Request {
		return func(ctx context.Context, _, seq int) (int, error) {
			_, n, err := e.postUpgrade(ctx, upgradeCluster(offset+seq, cfg.UpgradeClusters))
			return n, err
		}
	}
	directUp := func(offset int) Request {
		return func(ctx context.Context, _, seq int) (int, error) {
			return 0, e.kube.Create(ctx, upgradeCopy(e.upTemplate, namespaceDirect, upgradeCluster(offset+seq, cfg.UpgradeClusters)))
		}
	}
	serialUp := min(serial, cfg.Upgrades-1)
	e.logf("POST %s: %d by one client, then %d by %d clients; the same objects directly", upgradesPath, serialUp, cfg.Upgrades-1-serialUp, cfg.Clients)
	res.Write = append(res.Write, e.compareWrites(ctx, res, "create an upgrade operation", 1, 1, 1, serialUp,
		"POST "+upgradesPath, "POST clusterupgradeoperations", apiUp, directUp))
	res.Write = append(res.Write, e.compareWrites(ctx, res, "create an upgrade operation", cfg.Clients, cfg.Repeats, 1+serialUp, cfg.Upgrades-1-serialUp,
		"POST "+upgradesPath, "POST clusterupgradeoperations", apiUp, directUp))

	for _, c := range res.Write {
		if c.Ops.Errors > 0 {
			return fmt.Errorf("%s: %d of the API's creates failed; first: %s", c.Name, c.Ops.Errors, c.Ops.FirstError)
		}
	}
	for i, id := range e.vmIDs {
		if id == "" {
			return fmt.Errorf("vmcluster %s was not created", vmName(i))
		}
	}
	return ctx.Err()
}

// compareWrites creates objects offset..offset+n-1 through each side
// with clients workers: in repeats runs per side of about n/repeats
// objects each, alternating (API, direct, API, ...), so that the total
// stays n (n = 0 gives an empty row). A row of several runs reports their
// medians, and ops-apiserver is profiled during its runs.
func (e *env) compareWrites(ctx context.Context, res *Results, name string, clients, repeats, offset, n int, opsReq, kubeReq string, api, direct func(offset int) Request) Comparison {
	c := Comparison{Name: fmt.Sprintf("%s, %d client(s)", name, clients), Clients: clients, OpsRequest: opsReq, KubeRequest: kubeReq}
	if n <= 0 {
		return c
	}
	repeats = max(min(repeats, n), 1)
	var prof cpuCollector
	start := offset
	for i := range repeats {
		size := n / repeats
		if i < n%repeats {
			size++
		}
		if repeats == 1 {
			c.OpsRuns = append(c.OpsRuns, Summarize(RunN(ctx, clients, size, api(start))))
		} else {
			c.OpsRuns = append(c.OpsRuns, Summarize(e.profiledRun(ctx, &prof, func() Sample { return RunN(ctx, clients, size, api(start)) })))
		}
		c.KubeRuns = append(c.KubeRuns, Summarize(RunN(ctx, clients, size, direct(start))))
		start += size
	}
	if repeats == 1 {
		c.Ops, c.Kube, c.OpsRuns, c.KubeRuns = c.OpsRuns[0], c.KubeRuns[0], nil, nil
	} else {
		c.Ops, c.Kube = MedianStats(c.OpsRuns), MedianStats(c.KubeRuns)
		e.saveCPU(res, &prof, "write "+c.Name, fmt.Sprintf("ops-apiserver during the %d ops-apiserver runs of \"%s\" (%d creates in all)", repeats, c.Name, n))
	}
	e.logf("  %s (median of %d): ops-apiserver %.0f/s p50 %s ms p99 %s ms (%d errors); direct %.0f/s p50 %s ms p99 %s ms (%d errors)", c.Name, repeats,
		c.Ops.PerSecond, fmtMs(c.Ops.P50Ms), fmtMs(c.Ops.P99Ms), c.Ops.Errors, c.Kube.PerSecond, fmtMs(c.Kube.P50Ms), fmtMs(c.Kube.P99Ms), c.Kube.Errors)
	return c
}
