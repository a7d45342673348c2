package bench

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Settings are the sizes and durations a run used.
type Settings struct {
	VMClusters      int    `json:"vmclusters"`
	Upgrades        int    `json:"upgradeOperations"`
	UpgradeClusters int    `json:"upgradeClusters"`
	Clients         int    `json:"clients"`
	Duration        string `json:"duration"`
	Warmup          string `json:"warmup"`
	WriteSerial     int    `json:"writeSerial"`
	// Repeats is the number of runs per side of each ratio row; the row
	// shows their medians.
	Repeats        int    `json:"repeats"`
	RunningSizes   []int  `json:"runningSizes"`
	RunningTimeout string `json:"runningTimeout"`
	// ScaleSizes are the vmcluster counts of the cost curve, ScaleDuration
	// its list run per count.
	ScaleSizes    []int  `json:"scaleSizes"`
	ScaleDuration string `json:"scaleDuration"`
	// ProfileDir holds the profiles of the run ("" when none were taken).
	ProfileDir      string   `json:"profileDir"`
	OperatorOps     int      `json:"operatorOperations"`
	OperatorNodes   int      `json:"operatorNodesPerGroup"`
	OperatorTimeout string   `json:"operatorTimeout"`
	OperatorArgs    []string `json:"operatorArgs"`
	// APIServerArgs are the flags added to the local stack's ops-apiserver.
	APIServerArgs []string `json:"apiserverArgs"`
}

// Comparison is one request measured through ops-apiserver and, side by
// side, its equivalent sent straight to kube-apiserver. A row of several
// runs per side (alternating: ops-apiserver, kube-apiserver, ...) keeps
// each run in OpsRuns and KubeRuns; Ops and Kube are then their medians
// (MedianStats: req/s and latencies; requests and errors are totals).
type Comparison struct {
	Name        string  `json:"name"`
	Clients     int     `json:"clients"`
	OpsRequest  string  `json:"opsRequest"`
	KubeRequest string  `json:"kubeRequest"`
	Ops         Stats   `json:"opsApiserver"`
	Kube        Stats   `json:"kubeApiserver"`
	OpsRuns     []Stats `json:"opsApiserverRuns,omitempty"`
	KubeRuns    []Stats `json:"kubeApiserverRuns,omitempty"`
}

// Runs is the number of runs per side (1 for a row of one run).
func (c Comparison) Runs() int { return max(len(c.OpsRuns), 1) }

// ThroughputRatio is ops-apiserver's req/s over kube-apiserver's.
func (c Comparison) ThroughputRatio() float64 { return Ratio(c.Ops.PerSecond, c.Kube.PerSecond) }

// P99Ratio is ops-apiserver's p99 over kube-apiserver's.
func (c Comparison) P99Ratio() float64 { return Ratio(c.Ops.P99Ms, c.Kube.P99Ms) }

// TimeToReady is how long a set of releases created at once took to be
// ready.
type TimeToReady struct {
	// Seconds from the first create until every release was ready (or
	// the timeout, see TimedOut).
	Seconds float64 `json:"seconds"`
	// CreateSeconds is how long sending the creates took.
	CreateSeconds float64 `json:"createSeconds"`
	Ready         int     `json:"ready"`
	Failed        int     `json:"failed"`
	TimedOut      bool    `json:"timedOut"`
	// P50Seconds and P99Seconds are per release, from the first create
	// until the poll that first saw it ready.
	P50Seconds float64 `json:"p50Seconds"`
	P99Seconds float64 `json:"p99Seconds"`
}

// RunningResult compares vmclusters POSTed to ops-apiserver with the same
// HelmReleases created straight for Flux.
type RunningResult struct {
	N    int         `json:"n"`
	Ops  TimeToReady `json:"opsServer"`
	Flux TimeToReady `json:"fluxAlone"`
	// CleanupSeconds is how long deleting the first set took (Helm
	// uninstalls) before the second set started.
	CleanupSeconds float64 `json:"cleanupSeconds"`
}

// Ratio is ops-server's time over Flux's alone.
func (r RunningResult) Ratio() float64 { return Ratio(r.Ops.Seconds, r.Flux.Seconds) }

// OperatorResult is the ClusterUpgradeOperation throughput run.
type OperatorResult struct {
	Operations int  `json:"operations"`
	Succeeded  int  `json:"succeeded"`
	Failed     int  `json:"failed"`
	TimedOut   bool `json:"timedOut"`
	// Seconds from the first create until every operation finished.
	Seconds       float64 `json:"seconds"`
	CreateSeconds float64 `json:"createSeconds"`
	// P50Seconds and P99Seconds are per operation, creation to completion.
	P50Seconds          float64 `json:"p50Seconds"`
	P99Seconds          float64 `json:"p99Seconds"`
	Reconciles          float64 `json:"reconciles"`
	ReconcileErrors     float64 `json:"reconcileErrors"`
	ReconcilesPerSecond float64 `json:"reconcilesPerSecond"`
	PeakRSSMiB          float64 `json:"peakRSSMiB"`
	// APIRequests is the operator's own kube-apiserver requests during
	// the run (rest_client_requests_total less the simulated cloud's,
	// mock.RequestsMetric), RequestsPerOperation that over Operations,
	// RequestsByMethod the same per operation by HTTP method.
	APIRequests          float64            `json:"apiRequests"`
	RequestsPerOperation float64            `json:"requestsPerOperation"`
	RequestsByMethod     map[string]float64 `json:"requestsPerOperationByMethod"`
	// CloudRequestsPerOperation are the Kubernetes requests the simulated
	// cloud made for its state and Nodes (in a real cloud, cloud API
	// calls), per operation.
	CloudRequestsPerOperation float64 `json:"mockCloudRequestsPerOperation"`
}

// ScalePoint is ops-apiserver at one vmcluster count of the cost curve.
type ScalePoint struct {
	VMClusters int `json:"vmclusters"`
	// Created is how many vmclusters were added directly for this point,
	// in CreateSeconds.
	Created       int     `json:"created"`
	CreateSeconds float64 `json:"createSeconds"`
	// IdleRSSMiB is ops-apiserver's resident set, idle, once it settled
	// (after the GC of the heap profile, when profiles are taken).
	IdleRSSMiB float64 `json:"idleRSSMiB"`
	// LiveHeapMiB is the in-use heap after a GC, from the heap profile (0:
	// no profile).
	LiveHeapMiB float64 `json:"liveHeapMiB,omitempty"`
	// List is the list run (a page of 50) at this count.
	List Stats `json:"listPageOf50"`
	// Skipped says why the point was not measured.
	Skipped string `json:"skipped,omitempty"`
}

// ScaleResult is the cost curve: the list latency and ops-apiserver's
// memory as vmclusters grow.
type ScaleResult struct {
	Points  []ScalePoint `json:"points"`
	Clients int          `json:"clients"`
	// UpgradeOperations stay cached at every point.
	UpgradeOperations int `json:"upgradeOperations"`
	// RSSPer1000MiB is the idle RSS added per 1,000 vmclusters between the
	// first and the last measured point.
	RSSPer1000MiB float64 `json:"rssPer1000VMClustersMiB"`
	// HeapPer1000MiB is the same of the live heap (0: no profiles).
	HeapPer1000MiB float64 `json:"liveHeapPer1000VMClustersMiB,omitempty"`
	// CleanupSeconds is how long deleting the added vmclusters took.
	CleanupSeconds float64 `json:"cleanupSeconds"`
}

// measured returns the points that were measured, in order.
func (s *ScaleResult) measured() []ScalePoint {
	var out []ScalePoint
	for _, p := range s.Points {
		if p.Skipped == "" {
			out = append(out, p)
		}
	}
	return out
}

// computeSlope sets RSSPer1000MiB from the first and last measured points.
func (s *ScaleResult) computeSlope() {
	m := s.measured()
	if len(m) < 2 {
		return
	}
	first, last := m[0], m[len(m)-1]
	s.RSSPer1000MiB = Ratio(last.IdleRSSMiB-first.IdleRSSMiB, float64(last.VMClusters-first.VMClusters)/1000)
	if first.LiveHeapMiB > 0 && last.LiveHeapMiB > 0 {
		s.HeapPer1000MiB = Ratio(last.LiveHeapMiB-first.LiveHeapMiB, float64(last.VMClusters-first.VMClusters)/1000)
	}
}

// PhaseTime is how long one phase of the run took.
type PhaseTime struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

// Footprint is the memory and size of the ops-server binaries.
type Footprint struct {
	// CachedObjects is what ops-apiserver's informers held while measured.
	CachedObjects       int     `json:"cachedObjects"`
	APIServerIdleRSSMiB float64 `json:"apiserverIdleRSSMiB"`
	// APIServerLoadRSSMiB is the largest RSS sampled during the read runs,
	// APIServerPeakRSSMiB the kernel's high-water mark (VmHWM) after them.
	APIServerLoadRSSMiB float64 `json:"apiserverLoadRSSMiB"`
	APIServerPeakRSSMiB float64 `json:"apiserverPeakRSSMiB"`
	APIServerBinaryMiB  float64 `json:"apiserverBinaryMiB"`
	OperatorBinaryMiB   float64 `json:"operatorBinaryMiB"`
}

// Goal states.
const (
	GoalMet         = "met"
	GoalNotMet      = "not met"
	GoalNotMeasured = "not measured"
)

// Goal is one of the goals next to the measured value.
type Goal struct {
	Area   string `json:"area"`
	Goal   string `json:"goal"`
	Result string `json:"result"`
	Status string `json:"status"`
}

// Results is everything a run measured.
type Results struct {
	Started   time.Time       `json:"started"`
	Seconds   float64         `json:"seconds"`
	Machine   Machine         `json:"machine"`
	Settings  Settings        `json:"settings"`
	Read      []Comparison    `json:"read"`
	Write     []Comparison    `json:"write"`
	Running   []RunningResult `json:"timeToRunning,omitempty"`
	Scale     *ScaleResult    `json:"costCurve,omitempty"`
	Operator  *OperatorResult `json:"operator,omitempty"`
	Footprint Footprint       `json:"footprint"`
	Goals     []Goal          `json:"goals"`
	// Profiles summarizes the profiles taken (Settings.ProfileDir);
	// ProfileErrors are the captures that failed.
	Profiles      []ProfileSummary `json:"profiles,omitempty"`
	ProfileErrors []string         `json:"profileErrors,omitempty"`
	// Phases is how long each phase took.
	Phases []PhaseTime `json:"phases"`
	// Errors are phases that could not be completed.
	Errors []string `json:"errors,omitempty"`
}

// The goals of the issue (#12).
// The goals of issue #29 (and #12's time to RUNNING).
const (
	goalReadRatio      = 10.0
	goalReadP99Ms      = 10.0
	goalRunningRatio   = 1.10
	goalOperatorSecs   = 30.0
	goalOperatorRSSMiB = 150.0
	goalRequestsPerOp  = 30.0
	goalAPIServerRSS   = 80.0
)

// goalWriteRatio is the least req/s of a create through the API over a
// direct create of the same objects, at many clients, per kind ("create
// a vmcluster" is two writes and a cache wait).
var goalWriteRatio = map[string]float64{
	"create an upgrade operation": 0.8,
	"create a vmcluster":          0.45,
}

func status(ok bool) string {
	if ok {
		return GoalMet
	}
	return GoalNotMet
}

// EvaluateGoals compares the results with the goals. It never fails a
// run: a missed goal is reported, not asserted.
func EvaluateGoals(r *Results) []Goal {
	var goals []Goal
	for _, c := range r.Read {
		if c.Ops.Requests == 0 || c.Kube.Requests == 0 {
			goals = append(goals, Goal{Area: "read", Goal: fmt.Sprintf("%s: ≥ %.0f× kube-apiserver req/s", c.Name, goalReadRatio), Result: "no successful requests", Status: GoalNotMeasured})
			continue
		}
		goals = append(goals,
			Goal{Area: "read", Goal: fmt.Sprintf("%s: ≥ %.0f× kube-apiserver req/s", c.Name, goalReadRatio),
				Result: fmt.Sprintf("%.2f× (%.0f vs %.0f req/s)", c.ThroughputRatio(), c.Ops.PerSecond, c.Kube.PerSecond),
				Status: status(c.ThroughputRatio() >= goalReadRatio && c.Ops.Errors == 0)},
			Goal{Area: "read", Goal: fmt.Sprintf("%s: p99 ≤ %.0f ms at %d clients", c.Name, goalReadP99Ms, c.Clients),
				Result: fmt.Sprintf("%s ms", fmtMs(c.Ops.P99Ms)),
				Status: status(c.Ops.P99Ms <= goalReadP99Ms && c.Ops.Errors == 0)})
	}
	if len(r.Read) == 0 {
		goals = append(goals, Goal{Area: "read", Goal: "read path", Result: "not run", Status: GoalNotMeasured})
	}
	writes := 0
	for _, c := range r.Write {
		kind, _, _ := strings.Cut(c.Name, ",")
		want, ok := goalWriteRatio[kind]
		if !ok || c.Clients <= 1 {
			continue // one client measures latency, not throughput
		}
		writes++
		res := fmt.Sprintf("%.2f× (%.0f vs %.0f req/s)", c.ThroughputRatio(), c.Ops.PerSecond, c.Kube.PerSecond)
		goals = append(goals, Goal{Area: "write", Goal: fmt.Sprintf("%s: ≥ %.2g× a direct create at %d clients", kind, want, c.Clients),
			Result: res, Status: status(c.Ops.Requests > 0 && c.Ops.Errors == 0 && c.ThroughputRatio() >= want)})
	}
	if writes == 0 {
		goals = append(goals, Goal{Area: "write", Goal: "creates through the API: ≥ 0.8× (upgrade operation), ≥ 0.45× (vmcluster) a direct create", Result: "not run", Status: GoalNotMeasured})
	}
	running := 0
	for _, rr := range r.Running {
		if rr.Flux.Seconds <= 0 {
			continue
		}
		running++
		complete := !rr.Ops.TimedOut && !rr.Flux.TimedOut && rr.Ops.Ready == rr.N && rr.Flux.Ready == rr.N
		res := fmt.Sprintf("%+.0f %% (%.1f s vs %.1f s for %d releases)", (rr.Ratio()-1)*100, rr.Ops.Seconds, rr.Flux.Seconds, rr.N)
		if !complete {
			res += fmt.Sprintf("; not all ready: ops-server %d/%d, Flux alone %d/%d", rr.Ops.Ready, rr.N, rr.Flux.Ready, rr.N)
		}
		goals = append(goals, Goal{Area: "time to RUNNING", Goal: fmt.Sprintf("ops-server adds ≤ %.0f %% to Flux alone (%d releases)", (goalRunningRatio-1)*100, rr.N),
			Result: res, Status: status(complete && rr.Ratio() <= goalRunningRatio)})
	}
	if running == 0 {
		goals = append(goals, Goal{Area: "time to RUNNING", Goal: "ops-server adds ≤ 10 % to Flux alone", Result: "not run", Status: GoalNotMeasured})
	}
	if o := r.Operator; o != nil && o.Operations > 0 {
		done := !o.TimedOut && o.Succeeded == o.Operations
		res := fmt.Sprintf("%.1f s", o.Seconds)
		if !done {
			res += fmt.Sprintf(" (%d/%d succeeded, %d failed, timed out: %t)", o.Succeeded, o.Operations, o.Failed, o.TimedOut)
		}
		goals = append(goals,
			Goal{Area: "operator", Goal: fmt.Sprintf("%d operations done in ≤ %.0f s", o.Operations, goalOperatorSecs), Result: res,
				Status: status(done && o.Seconds <= goalOperatorSecs)},
			Goal{Area: "operator", Goal: fmt.Sprintf("ops-operator peak RSS ≤ %.0f MiB", goalOperatorRSSMiB), Result: fmt.Sprintf("%.0f MiB", o.PeakRSSMiB),
				Status: status(o.PeakRSSMiB > 0 && o.PeakRSSMiB <= goalOperatorRSSMiB)},
			Goal{Area: "operator", Goal: fmt.Sprintf("≤ %.0f API requests per operation", goalRequestsPerOp), Result: fmt.Sprintf("%.2f", o.RequestsPerOperation),
				Status: status(o.APIRequests > 0 && o.RequestsPerOperation <= goalRequestsPerOp)})
	} else {
		goals = append(goals, Goal{Area: "operator", Goal: fmt.Sprintf("200 operations in ≤ %.0f s, peak RSS ≤ %.0f MiB, ≤ %.0f requests per operation", goalOperatorSecs, goalOperatorRSSMiB, goalRequestsPerOp), Result: "not run", Status: GoalNotMeasured})
	}
	if f := r.Footprint; f.APIServerIdleRSSMiB > 0 {
		goals = append(goals, Goal{Area: "footprint", Goal: fmt.Sprintf("ops-apiserver RSS ≤ %.0f MiB with %d objects cached", goalAPIServerRSS, f.CachedObjects),
			Result: fmt.Sprintf("%.0f MiB idle, %.0f MiB under load", f.APIServerIdleRSSMiB, f.APIServerLoadRSSMiB),
			Status: status(f.APIServerIdleRSSMiB <= goalAPIServerRSS)})
	} else {
		goals = append(goals, Goal{Area: "footprint", Goal: "ops-apiserver RSS ≤ 80 MiB with 2,000 objects cached", Result: "not measured", Status: GoalNotMeasured})
	}
	return goals
}

// JSON renders the results as indented JSON.
func (r *Results) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
