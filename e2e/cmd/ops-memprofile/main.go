// Command ops-memprofile measures ops-apiserver's memory with objects in
// its informer cache (issue #29): it starts a control plane (etcd and
// kube-apiserver of operator/testenv, no Flux, so the objects stay as the
// API created them), runs bin/ops-apiserver against it with
// --pprof-bind-address, and at each stage — nothing created, then
// -vmclusters vmclusters, then -upgrades upgrade operations, all created
// through the REST API — reads the process's resident set
// (/proc/<pid>/status, after -quiet without requests, as `make bench`
// does), the Go heap after a forced GC (/metrics) and a heap profile
// (/debug/pprof/heap?gc=1), whose `go tool pprof -top -inuse_space` it
// prints. Profiles are kept in -out. It measures and reports; it asserts
// nothing.
//
//	make build tools-integration && go run ./e2e/cmd/ops-memprofile
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/e2e/bench"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

// REST paths (docs/openapi.yaml).
const (
	vmclustersPath = "/api/v1/observability-ops/vmclusters"
	upgradesPath   = "/ops/api/v1/upgradeOperations"
	namespace      = "observability"
)

// vmValues are the Helm values of every vmcluster: a production-like
// request of the vmcluster chart (values.schema.json), about 700 bytes.
var vmValues = map[string]any{
	"retentionPeriod":   "30d",
	"replicationFactor": 2,
	"vmstorage": map[string]any{
		"replicaCount": 3,
		"resources": map[string]any{
			"requests": map[string]any{"cpu": "500m", "memory": "1Gi"},
			"limits":   map[string]any{"cpu": "2", "memory": "4Gi"},
		},
		"nodeSelector": map[string]any{"node.kubernetes.io/instance-type": "m5.xlarge"},
		"tolerations":  []any{map[string]any{"key": "dedicated", "operator": "Equal", "value": "vmstorage", "effect": "NoSchedule"}},
		"storage":      map[string]any{"size": "100Gi", "storageClassName": "gp3"},
	},
	"vmselect": map[string]any{
		"replicaCount": 2,
		"resources": map[string]any{
			"requests": map[string]any{"cpu": "250m", "memory": "512Mi"},
			"limits":   map[string]any{"cpu": "1", "memory": "2Gi"},
		},
	},
	"vminsert": map[string]any{
		"replicaCount": 2,
		"resources": map[string]any{
			"requests": map[string]any{"cpu": "250m", "memory": "256Mi"},
			"limits":   map[string]any{"cpu": "1", "memory": "1Gi"},
		},
	},
}

// upgradeBody is a blue-green upgrade as a user POSTs it (the bench's).
func upgradeBody(cluster string) map[string]any {
	return map[string]any{
		"k8sClusterName": cluster, "region": "local", "cloudProvider": "mock", "targetVersion": "1.30",
		"nodeGroupUpgrades": []any{map[string]any{"nodeGroupName": "ng", "strategy": "blue-green", "newNodeGroupName": "ng-130"}},
	}
}

type options struct {
	vmclusters, upgrades, clients int
	quiet                         time.Duration
	out                           string
	top                           int
	hold, status                  bool
	extraArgs                     []string
	env                           []string
}

func main() {
	o := options{}
	fs := flag.NewFlagSet("ops-memprofile", flag.ExitOnError)
	fs.IntVar(&o.vmclusters, "vmclusters", 1000, "vmclusters created through the API")
	fs.IntVar(&o.upgrades, "upgrades", 1000, "upgrade operations created through the API (one per cluster name)")
	fs.IntVar(&o.clients, "clients", 8, "concurrent creates")
	fs.DurationVar(&o.quiet, "quiet", 5*time.Second, "time without requests before each memory reading")
	fs.StringVar(&o.out, "out", "", "directory of the heap profiles and ops-apiserver's log (default: a new temporary directory, kept)")
	fs.IntVar(&o.top, "top", 20, "lines of each `go tool pprof -top`")
	fs.BoolVar(&o.status, "status", true, "give every HelmRelease the status helm-controller writes after an install, and every operation a status as ops-operator writes it mid-upgrade (neither runs here), before measuring")
	fs.BoolVar(&o.hold, "hold", false, "keep ops-apiserver and the control plane running at the end, until Ctrl-C (to inspect them)")
	args := fs.String("apiserver-args", "", "further ops-apiserver flags, space-separated")
	envs := fs.String("apiserver-env", "", "further environment of ops-apiserver, space-separated NAME=value (e.g. GOGC=50)")
	_ = fs.Parse(os.Args[1:])
	o.extraArgs = splitFields(*args)
	o.env = splitFields(*envs)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "ops-memprofile:", err)
		os.Exit(1)
	}
}

func splitFields(s string) []string {
	var out []string
	for _, f := range bytes.Fields([]byte(s)) {
		out = append(out, string(f))
	}
	return out
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, o options) error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	binDir, err := testenv.BinDir()
	if err != nil {
		return err
	}
	bin := filepath.Join(binDir, "ops-apiserver")
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%s: run `make build` first: %w", bin, err)
	}
	if o.out == "" {
		if o.out, err = os.MkdirTemp("", "ops-memprofile-"); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	logf("Starting etcd and kube-apiserver")
	env, err := testenv.Start(testenv.Options{AddToScheme: []func(*runtime.Scheme) error{opsv1.AddToScheme}})
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	for _, ns := range []string{namespace, "ops-mock-cloud"} {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return err
		}
	}

	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = testenv.FreePort(); err != nil {
			return err
		}
	}
	api := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	pprofURL := fmt.Sprintf("http://127.0.0.1:%d", ports[2])
	apiArgs := append([]string{
		fmt.Sprintf("--listen-address=127.0.0.1:%d", ports[0]),
		fmt.Sprintf("--local-repository-listen-address=127.0.0.1:%d", ports[1]),
		fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", ports[2]),
		"--kubeconfig=" + env.KubeconfigPath,
		"--namespace=" + namespace,
		// Every chart of deploy/charts, as the local stack (and the
		// image) serves them.
		"--chart-dir=" + filepath.Join(root, "deploy", "charts"),
		"--enable-mock-cloud",
		"--insecure-disable-auth",
		"--rate-limit-qps=0", "--client-rate-limit-qps=0",
		"--log-level=error",
	}, o.extraArgs...)
	p, err := testenv.StartProcess("ops-apiserver", o.out, apiArgs, o.env)
	if err != nil {
		return err
	}
	defer func() { _ = p.Stop(10 * time.Second) }()
	if err := p.WaitHTTPOK(ctx, api+"/readyz", 2*time.Minute); err != nil {
		return fmt.Errorf("%w\n%s", err, p.Log(3000))
	}
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: o.clients}}

	type stage struct {
		name    string
		objects int
		mem     reading
	}
	var stages []stage
	measure := func(name string, objects int) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(o.quiet):
		}
		m, err := read(ctx, hc, p.Pid(), pprofURL, api, filepath.Join(o.out, name+".heap.pb.gz"))
		if err != nil {
			return err
		}
		stages = append(stages, stage{name, objects, m})
		logf("%s: RSS %.1f MiB, heap in use %.1f MiB (after a GC), live heap %.1f MiB", name, bench.MiB(m.rss), bench.MiB(m.heapInuse), bench.MiB(m.heapAlloc))
		return nil
	}
	if err := measure("0-empty", 0); err != nil {
		return err
	}

	// Each stage adds objects through the API, waits until the API lists
	// them, gives them the status their controller would write, and
	// measures.
	steps := []struct {
		name, path, list, field, writer string
		count                           int
		body                            func(i int) any
		statuses                        client.ObjectList
		status                          func(client.Object) map[string]any
	}{
		{name: "1-vmclusters", path: vmclustersPath, list: "?page_size=1000", field: "vmclusters", writer: "helm-controller", count: o.vmclusters,
			body:     func(i int) any { return map[string]any{"name": fmt.Sprintf("mem-vm-%04d", i), "values": vmValues} },
			statuses: &helmv2.HelmReleaseList{}, status: releaseStatus},
		{name: "2-upgrades", path: upgradesPath, list: "?pageSize=1000", field: "upgradeOperations", writer: "ops-operator", count: o.upgrades,
			body:     func(i int) any { return upgradeBody(fmt.Sprintf("mem-cluster-%04d", i)) },
			statuses: &opsv1.ClusterUpgradeOperationList{}, status: operationStatus},
	}
	objects := 0
	for _, st := range steps {
		logf("POST %s ×%d", st.path, st.count)
		if err := createAll(ctx, hc, o.clients, st.count, func(i int) (string, any) { return api + st.path, st.body(i) }); err != nil {
			return err
		}
		if err := waitCount(ctx, hc, api+st.path+st.list, st.field, st.count); err != nil {
			return err
		}
		if o.status {
			logf("Writing the status of %d %s as %s would", st.count, st.field, st.writer)
			if err := patchStatuses(ctx, env.Client, o.clients, st.statuses, st.status); err != nil {
				return err
			}
		}
		objects += st.count
		if err := measure(st.name, objects); err != nil {
			return err
		}
	}

	fmt.Printf("ops-apiserver memory (%s; RSS after %s without requests; heap after a forced GC)\n\n", bin, o.quiet)
	fmt.Printf("| stage | objects | RSS MiB | anonymous | file | live heap MiB | heap in use | heap idle, not released | stacks | other runtime |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range stages {
		m := s.mem
		fmt.Printf("| %s | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n", s.name, s.objects, bench.MiB(m.rss), bench.MiB(m.anon), bench.MiB(m.file),
			bench.MiB(m.heapAlloc), bench.MiB(m.heapInuse), bench.MiB(m.heapIdle-m.heapReleased), bench.MiB(m.stack), bench.MiB(m.other))
	}
	per := func(a, b reading, n int) string {
		if n == 0 {
			return "-"
		}
		k := 1000 / float64(n)
		return fmt.Sprintf("RSS %+.1f MiB, live heap %+.1f MiB", k*(bench.MiB(b.rss)-bench.MiB(a.rss)), k*(bench.MiB(b.heapAlloc)-bench.MiB(a.heapAlloc)))
	}
	fmt.Printf("\nper 1000 vmclusters: %s\n", per(stages[0].mem, stages[1].mem, o.vmclusters))
	fmt.Printf("per 1000 upgrade operations: %s\n", per(stages[1].mem, stages[2].mem, o.upgrades))
	for _, s := range stages[1:] {
		base := filepath.Join(o.out, stages[0].name+".heap.pb.gz")
		prof := filepath.Join(o.out, s.name+".heap.pb.gz")
		for _, diff := range []bool{false, true} {
			args := []string{"tool", "pprof", "-top", "-inuse_space", fmt.Sprintf("-nodecount=%d", o.top)}
			title := s.name
			if diff {
				args = append(args, "-diff_base="+base)
				title += " minus " + stages[0].name
			}
			out, err := exec.CommandContext(ctx, "go", append(args, prof)...).CombinedOutput()
			if err != nil {
				return fmt.Errorf("go tool pprof: %w\n%s", err, out)
			}
			fmt.Printf("\n### %s (go tool pprof -top -inuse_space)\n\n%s", title, out)
		}
	}
	fmt.Printf("\nprofiles and ops-apiserver's log: %s\n", o.out)
	if o.hold {
		logf("Holding: ops-apiserver (pid %d) on %s, pprof on %s, kubeconfig %s; Ctrl-C ends", p.Pid(), api, pprofURL, env.KubeconfigPath)
		<-ctx.Done()
	}
	return nil
}

// patchStatuses lists every object of list's kind in the namespace and
// merge-patches its status subresource with status(object).
func patchStatuses(ctx context.Context, c client.Client, clients int, list client.ObjectList, status func(client.Object) map[string]any) error {
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	return ranAll(ctx, bench.RunN(ctx, clients, len(items), func(ctx context.Context, _, i int) (int, error) {
		obj := items[i].(client.Object)
		b, _ := json.Marshal(map[string]any{"status": status(obj)})
		if err := c.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, b)); err != nil {
			return 0, fmt.Errorf("%s: %w", obj.GetName(), err)
		}
		return 0, nil
	}))
}

// ranAll is the error of a run of bench.RunN: its first error and how
// many failed, or ctx's.
func ranAll(ctx context.Context, run bench.Sample) error {
	if run.Errors > 0 {
		return fmt.Errorf("%d failed; first: %w", run.Errors, run.FirstError)
	}
	return ctx.Err()
}

// releaseStatus is the status helm-controller (v1.6) writes on a
// HelmRelease of the vmcluster chart once its install succeeded:
// conditions, one snapshot, the inventory of the release's objects.
func releaseStatus(o client.Object) map[string]any {
	name, ns, gen := o.GetName(), o.GetNamespace(), o.GetGeneration()
	at := o.GetCreationTimestamp().Add(90 * time.Second).UTC().Format(time.RFC3339)
	msg := fmt.Sprintf("Helm install succeeded for release %s/%s.v1 with chart vmcluster@0.1.0", ns, name)
	digest := func(s string) string { return fmt.Sprintf("sha256:%064x", len(s)*7919+len(name)) }
	var inventory []any
	for _, kind := range []string{"operator.victoriametrics.com_VMCluster", "_ConfigMap", "_ServiceAccount", "policy_PodDisruptionBudget", "_Service", "monitoring.coreos.com_ServiceMonitor"} {
		inventory = append(inventory, map[string]any{"id": ns + "_" + name + "_" + kind, "v": "v1"})
	}
	return map[string]any{
		"observedGeneration": gen, "lastAttemptedGeneration": gen,
		"observedPostRenderersDigest": digest("pr"), "observedCommonMetadataDigest": digest("cm"),
		"conditions": []any{
			map[string]any{"type": "Ready", "status": "True", "reason": "InstallSucceeded", "message": msg, "observedGeneration": gen, "lastTransitionTime": at},
			map[string]any{"type": "Released", "status": "True", "reason": "InstallSucceeded", "message": msg, "observedGeneration": gen, "lastTransitionTime": at},
		},
		"helmChart": ns + "/" + ns + "-" + name, "storageNamespace": ns,
		"history": []any{map[string]any{
			"apiVersion": "helm.toolkit.fluxcd.io/v2", "digest": digest("release"), "name": name, "namespace": ns, "version": 1,
			"status": "deployed", "action": "install", "chartName": "vmcluster", "chartVersion": "0.1.0", "appVersion": "v1.100.0",
			"configDigest": digest("config"), "firstDeployed": at, "lastDeployed": at, "testHooks": map[string]any{},
		}},
		"inventory":                  map[string]any{"entries": inventory},
		"lastAttemptedReleaseAction": "install", "lastAttemptedReleaseActionDuration": "1m23.4s",
		"lastAttemptedRevision": "0.1.0", "lastAttemptedRevisionDigest": digest("chart"),
		"lastAttemptedValuesChecksum": "sha1:" + fmt.Sprintf("%040x", len(name)), "lastAttemptedConfigDigest": digest("values"),
		"lastReleaseRevision": 1,
	}
}

// operationStatus is the status ops-operator writes on a blue-green
// upgrade of one node group half-way through.
func operationStatus(o client.Object) map[string]any {
	gen := o.GetGeneration()
	at := o.GetCreationTimestamp().Add(time.Minute).UTC().Format(time.RFC3339)
	msg := "step 3 of 5: waiting for the nodes of node group ng-130 (1 of 3 ready)"
	step := func(id, typ, action, target, phase string) map[string]any {
		s := map[string]any{"id": id, "type": typ, "action": action, "target": target, "phase": phase, "attempts": 1}
		if phase != "Pending" {
			s["startTime"] = at
		}
		if phase == "Succeeded" {
			s["completionTime"] = at
		}
		return s
	}
	return map[string]any{
		"observedGeneration": gen, "phase": "Running", "progress": "2/5", "resolvedTargetVersion": "1.30.4",
		"conditions": []any{
			map[string]any{"type": "Ready", "status": "False", "reason": "Progressing", "message": msg, "observedGeneration": gen, "lastTransitionTime": at},
			map[string]any{"type": "Reconciling", "status": "True", "reason": "Progressing", "message": msg, "observedGeneration": gen, "lastTransitionTime": at},
			map[string]any{"type": "Stalled", "status": "False", "reason": "Progressing", "message": "", "observedGeneration": gen, "lastTransitionTime": at},
		},
		"steps": []any{
			step("control-plane", string(opsv1.StepTypeControlPlane), string(opsv1.ActionUpgradeControlPlane), "", string(opsv1.StepPhaseSucceeded)),
			step("ng-create", string(opsv1.StepTypeNodeGroup), string(opsv1.ActionCreateNodeGroup), "ng-130", string(opsv1.StepPhaseSucceeded)),
			step("ng-wait", string(opsv1.StepTypeNodeGroup), string(opsv1.ActionWaitNodesReady), "ng-130", string(opsv1.StepPhaseRunning)),
			step("ng-drain", string(opsv1.StepTypeNodeGroup), string(opsv1.ActionDrainNodes), "ng", string(opsv1.StepPhasePending)),
			step("ng-delete", string(opsv1.StepTypeNodeGroup), string(opsv1.ActionDeleteNodeGroup), "ng", string(opsv1.StepPhasePending)),
		},
		"currentStep": "ng-wait", "startTime": at,
	}
}

type reading struct {
	rss, heapInuse, heapAlloc uint64
	// anon and file split rss (smaps_rollup); the others are Go's own
	// accounting (/metrics) after the forced GC.
	anon, file                                    uint64
	heapSys, heapIdle, heapReleased, stack, other uint64
}

// read takes the resident set first (as the bench does, without a forced
// GC), then the heap profile (which forces a GC), then the heap figures.
func read(ctx context.Context, hc *http.Client, pid int, pprofURL, api, profile string) (reading, error) {
	var r reading
	m, err := bench.ReadMem(pid)
	if err != nil {
		return r, err
	}
	r.rss = m.RSS
	r.anon, r.file = smaps(pid)
	b, err := get(ctx, hc, pprofURL+"/debug/pprof/heap?gc=1")
	if err != nil {
		return r, err
	}
	if err := os.WriteFile(profile, b, 0o644); err != nil {
		return r, err
	}
	ms, err := bench.Scrape(ctx, api+"/metrics")
	if err != nil {
		return r, err
	}
	r.heapInuse = uint64(bench.Sum(ms, "go_memstats_heap_inuse_bytes", nil))
	r.heapAlloc = uint64(bench.Sum(ms, "go_memstats_heap_alloc_bytes", nil))
	r.heapSys = uint64(bench.Sum(ms, "go_memstats_heap_sys_bytes", nil))
	r.heapIdle = uint64(bench.Sum(ms, "go_memstats_heap_idle_bytes", nil))
	r.heapReleased = uint64(bench.Sum(ms, "go_memstats_heap_released_bytes", nil))
	r.stack = uint64(bench.Sum(ms, "go_memstats_stack_sys_bytes", nil))
	r.other = uint64(bench.Sum(ms, "go_memstats_sys_bytes", nil)) - r.heapSys - r.stack
	return r, nil
}

// smaps is the anonymous and the file-backed part of pid's resident set
// (0, 0 if unknown).
func smaps(pid int) (anon, file uint64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "Anonymous:":
			anon = kb << 10
		case "Rss:":
			file += kb << 10
		}
	}
	return anon, file - anon
}

func get(ctx context.Context, hc *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return b, nil
}

// createAll POSTs n bodies with clients workers; every answer must be 202.
func createAll(ctx context.Context, hc *http.Client, clients, n int, body func(int) (string, any)) error {
	return ranAll(ctx, bench.RunN(ctx, clients, n, func(ctx context.Context, _, i int) (int, error) {
		url, v := body(i)
		err := post(ctx, hc, url, v)
		// A 5xx (an overloaded control plane) is tried again twice; the
		// API answers a retried create the same.
		for try := 0; try < 2 && errors.Is(err, errServer); try++ {
			err = post(ctx, hc, url, v)
		}
		return 0, err
	}))
}

var errServer = errors.New("server error")

func post(ctx context.Context, hc *http.Client, url string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	switch {
	case resp.StatusCode >= 500:
		return fmt.Errorf("%w: POST %s: %d %s", errServer, url, resp.StatusCode, body)
	case resp.StatusCode != http.StatusAccepted:
		return fmt.Errorf("POST %s: %d %s", url, resp.StatusCode, body)
	}
	return nil
}

// waitCount waits until the list at url (a page holding them all) has n
// items under key.
func waitCount(ctx context.Context, hc *http.Client, url, key string, n int) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		b, err := get(ctx, hc, url)
		if err != nil {
			return err
		}
		var page map[string]json.RawMessage
		if err := json.Unmarshal(b, &page); err != nil {
			return err
		}
		var items []json.RawMessage
		_ = json.Unmarshal(page[key], &items)
		if len(items) >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("GET %s: %d of %d items after 2m", url, len(items), n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
