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
			WriteSerial: 50, Repeats: 3, RunningSizes: []int{100, 300}, RunningTimeout: "5m0s", OperatorOps: 200, OperatorNodes: 1,
			ScaleSizes: []int{500, 1000, 5000, 10000}, ScaleDuration: "5s", ProfileDir: "bin/bench-profiles",
			OperatorArgs: []string{"--poll-interval=1s", "--mock-operation-duration=0s"}, APIServerArgs: []string{"--rate-limit-qps=0"}},
		Read: []Comparison{
			{Name: "list vmclusters, page of 50", Clients: 32, OpsRequest: "GET /a", KubeRequest: "GET /b",
				Ops:  Stats{Requests: 60000, PerSecond: 6000, P50Ms: 4, P99Ms: 9.5, MeanBytes: 20000},
				Kube: Stats{Requests: 10000, PerSecond: 1000, P50Ms: 30, P99Ms: 80, MeanBytes: 90000},
				OpsRuns: []Stats{{Requests: 20000, PerSecond: 6000, P50Ms: 4, P99Ms: 9.5}, {Requests: 19000, PerSecond: 5700, P50Ms: 5, P99Ms: 11},
					{Requests: 21000, PerSecond: 6300, P50Ms: 3, P99Ms: 9}},
				KubeRuns: []Stats{{Requests: 3000, PerSecond: 900}, {Requests: 3000, PerSecond: 1000}, {Requests: 4000, PerSecond: 1100}}},
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
		Running: []RunningResult{{N: 100, CleanupSeconds: 40,
			Ops:  TimeToReady{Seconds: 105, Ready: 100, CreateSeconds: 4, P50Seconds: 60, P99Seconds: 104},
			Flux: TimeToReady{Seconds: 100, Ready: 100, CreateSeconds: 1, P50Seconds: 58, P99Seconds: 99}}},
		Scale: &ScaleResult{Clients: 32, UpgradeOperations: 1000, CleanupSeconds: 50, RSSPer1000MiB: 10, Points: []ScalePoint{
			{VMClusters: 500, Skipped: "below the 1000 vmclusters of the read path"},
			{VMClusters: 1000, IdleRSSMiB: 110, List: Stats{PerSecond: 2000, P50Ms: 12, P99Ms: 50}},
			{VMClusters: 5000, Created: 4000, CreateSeconds: 20, IdleRSSMiB: 150, LiveHeapMiB: 40, List: Stats{PerSecond: 500, P50Ms: 60, P99Ms: 200}},
			{VMClusters: 10000, Created: 5000, CreateSeconds: 25, IdleRSSMiB: 200, LiveHeapMiB: 70, List: Stats{PerSecond: 250, P50Ms: 120, P99Ms: 400, Errors: 2}},
		}},
		Profiles: []ProfileSummary{{Process: "apiserver", Kind: "cpu", What: "ops-apiserver during the list runs", File: "apiserver-cpu-read-list.pb.gz",
			SampleType: "cpu", Unit: "nanoseconds", Total: 12e9, Seconds: 30,
			Flat: []FunctionShare{{Function: "runtime.memmove", Percent: 20}, {Function: "encoding/json.Marshal", Percent: 10}},
			Cum:  []FunctionShare{{Function: "net/http.(*conn).serve", Percent: 90}}}},
		ProfileErrors: []string{"ops-operator CPU: boom"},
		Phases:        []PhaseTime{{Name: "stack start", Seconds: 70}, {Name: "write path", Seconds: 95.4}},
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
		{"ops-server adds ≤ 10 % to Flux alone (100 releases)", GoalMet, "+5 % (105.0 s vs 100.0 s for 100 releases)"},
		{"200 operations done in ≤ 30 s", GoalNotMet, "75.0 s"},
		{"ops-operator peak RSS", GoalMet, "90 MiB"},
		{"≤ 30 API requests", GoalNotMet, "35.00"},
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
	r.Running[0].Ops.TimedOut, r.Running[0].Ops.Ready = true, 97
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
		"Each ratio row (reads, concurrent creates) is the median of 3 runs per side, the sides alternating.",
		"is the median of 3 runs per side",
		"| 100 | ops-server | 100/100 | 0 | 4.0 s | 105.0 s | 60.0 s / 104.0 s | 1.05× |",
		"| 100 | Flux alone | 100/100 | 0 | 1.0 s | 100.0 s | 58.0 s / 99.0 s | |",
		"Not measured: 300 releases (see Errors).",
		"300 releases per side are not in this run: at this run's pace (2.5 s per release for both sides and the uninstalls between them, at 100 releases), they would add about 12 minutes",
		"## 3. Cost curve\n",
		"| 500 | skipped: below the 1000 vmclusters of the read path | | | | | | | |",
		"| 1000 | none |  |  | 110 MiB |  | 2000 | 12.0 | 50.0 |",
		"| 5000 | 4000 in 20 s | 40.0 MiB |  | 150 MiB | 10.0 MiB | 500 | 60.0 | 200 |",
		"| 10000 | 5000 in 25 s | 70.0 MiB | 6.0 MiB | 200 MiB | 10.0 MiB | 250 (2 errors) | 120 | 400 |",
		"grew by 10.0 MiB per 1,000 vmclusters",
		"## 8. Profiles\n",
		"### apiserver-cpu-read-list.pb.gz\n",
		"cpu: 12.0 s of CPU in 30 s of profile (0.40 cores). Open it with `go tool pprof -top bin/bench-profiles/apiserver-cpu-read-list.pb.gz`.",
		"| 1 | 20.0 % | `runtime.memmove` | 90.0 % | `net/http.(*conn).serve` |",
		"| 2 | 10.0 % | `encoding/json.Marshal` |  |  |",
		"- not captured: ops-operator CPU: boom",
		"- Time per phase: stack start 1m10s, write path 1m35s.",
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

	r.Running, r.Operator, r.Read, r.Errors, r.Scale, r.Profiles, r.ProfileErrors = nil, nil, nil, nil, nil, nil, nil
	md = r.Markdown()
	g.Expect(md).To(ContainSubstring("## 3. Cost curve\n\nNot run."))
	g.Expect(md).To(ContainSubstring("## 4. Time to RUNNING\n\nNot run."))
	g.Expect(md).To(ContainSubstring("## 5. Operator throughput\n\nNot run."))
	g.Expect(md).To(ContainSubstring("## 8. Profiles\n\nNone taken"))
	g.Expect(md).NotTo(ContainSubstring("## Errors"))
}

func TestConfigValidate(t *testing.T) {
	g := NewWithT(t)
	g.Expect(DefaultConfig().Validate()).To(Succeed())
	bad := DefaultConfig()
	bad.Clients, bad.Duration, bad.RunningSizes, bad.ScaleSizes, bad.Repeats = 0, 0, []int{100, 1000}, []int{5000, 1000}, 0
	err := bad.Validate()
	g.Expect(err).To(MatchError(ContainSubstring("clients must be at least 1")))
	g.Expect(err).To(MatchError(ContainSubstring("duration must be positive")))
	g.Expect(err).To(MatchError(ContainSubstring("running sizes are 1 to 999, not 1000")))
	g.Expect(err).To(MatchError(ContainSubstring("scale sizes must be ascending")))
	g.Expect(err).To(MatchError(ContainSubstring("repeats must be at least 1")))
	few := DefaultConfig()
	few.VMClusters, few.WriteSerial = 52, 50
	g.Expect(few.Validate()).To(MatchError(ContainSubstring("split into repeats runs")))
}

func TestIntList(t *testing.T) {
	g := NewWithT(t)
	var v []int
	f := IntList(&v)
	g.Expect(f.Set("100, 300")).To(Succeed())
	g.Expect(v).To(Equal([]int{100, 300}))
	g.Expect(f.String()).To(Equal("100,300"))
	for _, empty := range []string{"", "0"} {
		g.Expect(f.Set(empty)).To(Succeed())
		g.Expect(v).To(BeEmpty())
	}
	g.Expect(f.Set("1,x")).To(MatchError(ContainSubstring(`"x" is not a count`)))
}

func TestScaleSlope(t *testing.T) {
	g := NewWithT(t)
	sr := &ScaleResult{Points: []ScalePoint{
		{VMClusters: 500, Skipped: "below"},
		{VMClusters: 1000, IdleRSSMiB: 100, LiveHeapMiB: 20},
		{VMClusters: 5000, IdleRSSMiB: 90, LiveHeapMiB: 40},
		{VMClusters: 10000, IdleRSSMiB: 190, LiveHeapMiB: 65},
	}}
	sr.computeSlope()
	g.Expect(sr.RSSPer1000MiB).To(Equal(10.0), "first to last measured point")
	g.Expect(sr.HeapPer1000MiB).To(Equal(5.0))
	one := &ScaleResult{Points: []ScalePoint{{VMClusters: 1000, IdleRSSMiB: 100}}}
	one.computeSlope()
	g.Expect(one.RSSPer1000MiB).To(BeZero())
}
