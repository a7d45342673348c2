package bench

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func sampleResults() *Results {
	return &Results{
		Started: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC),
		Seconds: 754,
		Machine: Machine{CPUs: 2, CPUModel: "Test CPU", MemoryGiB: 23.4, OS: "linux/amd64", GoVersion: "go1.26.8",
			Kubernetes: "v1.37.2", SourceCtrl: "v1.9.5", HelmCtrl: "v1.6.4", VMOperator: "v0.60.0", Etcd: "v3.6.0", Kwok: "v0.8.0"},
		Settings: Settings{VMClusters: 1000, Upgrades: 1000, UpgradeClusters: 20, Clients: 32, Duration: "10s", Warmup: "1s",
			WriteSerial: 50, RunningN: 100, RunningTimeout: "5m0s", OperatorOps: 200, OperatorNodes: 1,
			OperatorArgs: []string{"--poll-interval=1s", "--mock-operation-duration=0s"}, APIServerArgs: []string{"--rate-limit-qps=0"}},
		Read: []Comparison{
			{Name: "list vmclusters, page of 50", Clients: 32, OpsRequest: "GET /a", KubeRequest: "GET /b",
				Ops:  Stats{Requests: 60000, PerSecond: 6000, P50Ms: 4, P99Ms: 9.5, MeanBytes: 20000},
				Kube: Stats{Requests: 10000, PerSecond: 1000, P50Ms: 30, P99Ms: 80, MeanBytes: 90000}},
			{Name: "get one vmcluster", Clients: 32, OpsRequest: "GET /c", KubeRequest: "GET /d",
				Ops:  Stats{Requests: 30000, PerSecond: 3000, P50Ms: 8, P99Ms: 25, Errors: 0},
				Kube: Stats{Requests: 20000, PerSecond: 2000, P50Ms: 12, P99Ms: 40, FirstError: "GET /d: 500"}},
		},
		Write: []Comparison{{Name: "create a vmcluster, 1 client(s)", Clients: 1,
			Ops: Stats{Requests: 50, PerSecond: 20, P50Ms: 45, P99Ms: 120}, Kube: Stats{Requests: 50, PerSecond: 80, P50Ms: 11, P99Ms: 30}},
			{Name: "create a vmcluster, 32 client(s)", Clients: 32,
				Ops: Stats{Requests: 900, PerSecond: 100, P50Ms: 300, P99Ms: 900}, Kube: Stats{Requests: 900, PerSecond: 200, P50Ms: 100, P99Ms: 300}},
			{Name: "create an upgrade operation, 32 client(s)", Clients: 32,
				Ops: Stats{Requests: 900, PerSecond: 150, P50Ms: 200, P99Ms: 600}, Kube: Stats{Requests: 900, PerSecond: 300, P50Ms: 100, P99Ms: 300}}},
		Running: &RunningResult{N: 100, CleanupSeconds: 40,
			Ops:  TimeToReady{Seconds: 105, Ready: 100, CreateSeconds: 4, P50Seconds: 60, P99Seconds: 104},
			Flux: TimeToReady{Seconds: 100, Ready: 100, CreateSeconds: 1, P50Seconds: 58, P99Seconds: 99}},
		Operator: &OperatorResult{Operations: 200, Succeeded: 200, Seconds: 75, Reconciles: 3000, ReconcilesPerSecond: 40,
			PeakRSSMiB: 90, APIRequests: 7000, RequestsPerOperation: 35, RequestsByMethod: map[string]float64{"GET": 20, "PATCH": 15}},
		Footprint: Footprint{CachedObjects: 2000, APIServerIdleRSSMiB: 70, APIServerLoadRSSMiB: 95, APIServerPeakRSSMiB: 96,
			APIServerBinaryMiB: 60.5, OperatorBinaryMiB: 70.25},
	}
}

func goalByPrefix(goals []Goal, prefix string) Goal {
	for _, g := range goals {
		if strings.HasPrefix(g.Goal, prefix) {
			return g
		}
	}
	return Goal{}
}

func TestEvaluateGoals(t *testing.T) {
	g := NewWithT(t)
	goals := EvaluateGoals(sampleResults())
	for _, tc := range []struct {
		prefix, status, result string
	}{
		{"list vmclusters, page of 50: ≥ 10×", GoalNotMet, "6.00× (6000 vs 1000 req/s)"},
		{"list vmclusters, page of 50: p99", GoalMet, "9.50 ms"},
		{"get one vmcluster: ≥ 10×", GoalNotMet, "1.50× (3000 vs 2000 req/s)"},
		{"get one vmcluster: p99", GoalNotMet, "25.0 ms"},
		{"create a vmcluster: ≥ 0.45× a direct create at 32 clients", GoalMet, "0.50× (100 vs 200 req/s)"},
		{"create an upgrade operation: ≥ 0.8× a direct create at 32 clients", GoalNotMet, "0.50× (150 vs 300 req/s)"},
		{"ops-server adds", GoalMet, "+5 % (105.0 s vs 100.0 s for 100 releases)"},
		{"200 operations done in ≤ 30 s", GoalNotMet, "75.0 s"},
		{"ops-operator peak RSS", GoalMet, "90 MiB"},
		{"≤ 30 API requests", GoalNotMet, "35.0"},
		{"ops-apiserver RSS", GoalMet, "70 MiB idle, 95 MiB under load"},
	} {
		got := goalByPrefix(goals, tc.prefix)
		g.Expect(got.Status).To(Equal(tc.status), tc.prefix)
		g.Expect(got.Result).To(Equal(tc.result), tc.prefix)
	}
	g.Expect(goals).To(HaveLen(11), "the one-client write rows measure latency and have no goal")
}

func TestEvaluateGoalsOfAnIncompleteRun(t *testing.T) {
	g := NewWithT(t)
	r := sampleResults()
	r.Read = r.Read[:1]
	r.Read[0].Ops.Errors = 3
	r.Running.Ops.TimedOut, r.Running.Ops.Ready = true, 97
	r.Operator.Succeeded, r.Operator.Failed, r.Operator.Seconds = 199, 1, 20
	goals := EvaluateGoals(r)
	g.Expect(goalByPrefix(goals, "list vmclusters, page of 50: ≥ 10×").Status).To(Equal(GoalNotMet), "errors spoil a fast read")
	running := goalByPrefix(goals, "ops-server adds")
	g.Expect(running.Status).To(Equal(GoalNotMet))
	g.Expect(running.Result).To(ContainSubstring("not all ready: ops-server 97/100"))
	g.Expect(goalByPrefix(goals, "200 operations").Status).To(Equal(GoalNotMet), "a failed operation is not done")

	g.Expect(EvaluateGoals(&Results{})).To(HaveEach(HaveField("Status", GoalNotMeasured)))
}

func TestJSONRoundTrip(t *testing.T) {
	g := NewWithT(t)
	r := sampleResults()
	r.Goals = EvaluateGoals(r)
	b, err := r.JSON()
	g.Expect(err).NotTo(HaveOccurred())
	var back Results
	g.Expect(json.Unmarshal(b, &back)).To(Succeed())
	g.Expect(back).To(Equal(*r))
	g.Expect(string(b)).To(ContainSubstring(`"perSecond": 6000`))
}

func TestMarkdown(t *testing.T) {
	g := NewWithT(t)
	r := sampleResults()
	r.Goals = EvaluateGoals(r)
	r.Errors = []string{"operator throughput: 1 operation failed;\nsecond line"}
	md := r.Markdown()
	for _, want := range []string{
		"# Benchmarks\n",
		"on 2026-05-01 10:00 UTC; the run took 12m34s.",
		"| CPU | 2 × Test CPU |",
		"| Flux source-controller / helm-controller | v1.9.5 / v1.6.4 |",
		"| read | list vmclusters, page of 50: ≥ 10× kube-apiserver req/s | 6.00× (6000 vs 1000 req/s) | **not met** |",
		"| read | get one vmcluster: p99 ≤ 10 ms at 32 clients | 25.0 ms | **not met** |",
		"| list vmclusters, page of 50 | 32 | 6000 | 4.00 | 9.50 | 1000 | 30.0 | 80.0 | 6.00× | 0.12× |",
		"| create a vmcluster, 1 client(s) | 1 | 20 | 45.0 | 120 | 80 | 11.0 | 30.0 | 0.25× | 4.00× |",
		"  - first error: GET /d: 500",
		"| releases ready | 100/100 | 100/100 |",
		"| time until all ready | 105.0 s | 100.0 s |",
		"| ratio ops-server / Flux alone | 1.05× | |",
		"`--poll-interval=1s --mock-operation-duration=0s`",
		"| requests per operation by method | GET 20.0, PATCH 15.0 |",
		"| ops-apiserver RSS, idle, 2000 objects cached | 70 MiB |",
		"| bin/ops-operator | 70.2 MiB |",
		"`--rate-limit-qps=0`",
		"## Errors\n\n- operator throughput: 1 operation failed; second line\n",
	} {
		g.Expect(md).To(ContainSubstring(want))
	}
	// Every table row has as many cells as its header.
	var cols int
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "|") {
			cols = 0
			continue
		}
		n := strings.Count(line, "|")
		if cols == 0 {
			cols = n
			continue
		}
		g.Expect(n).To(Equal(cols), line)
	}

	r.Running, r.Operator, r.Read, r.Errors = nil, nil, nil, nil
	md = r.Markdown()
	g.Expect(md).To(ContainSubstring("## 3. Time to RUNNING\n\nNot run."))
	g.Expect(md).To(ContainSubstring("## 4. Operator throughput\n\nNot run."))
	g.Expect(md).NotTo(ContainSubstring("## Errors"))
}

func TestConfigValidate(t *testing.T) {
	g := NewWithT(t)
	g.Expect(DefaultConfig().Validate()).To(Succeed())
	bad := DefaultConfig()
	bad.Clients, bad.Duration, bad.RunningN = 0, 0, 1000
	err := bad.Validate()
	g.Expect(err).To(MatchError(ContainSubstring("clients must be at least 1")))
	g.Expect(err).To(MatchError(ContainSubstring("duration must be positive")))
	g.Expect(err).To(MatchError(ContainSubstring("at most 999")))
}
