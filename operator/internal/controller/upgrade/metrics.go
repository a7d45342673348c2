package upgrade

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// Metrics of upgrades, on the controller-runtime registry (the manager's
// /metrics endpoint), named like the backup ones (ops_clusterbackup_*).
var (
	stepDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ops_clusterupgradeoperation_step_duration_seconds",
		Help:    "Time from the start to the end of an upgrade step, by action and result (Succeeded, Failed, Skipped).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 16), // 1 s .. ~9 h
	}, []string{"action", "result"})
	cloudCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ops_cloud_calls_total",
		Help: "Cloud API calls made for upgrades, by provider, operation and result (Success, or the error kind: Retryable, Permanent, NotFound, Unsupported, Error).",
	}, []string{"provider", "operation", "result"})
)

// phaseDesc is ops_clusterupgradeoperations, computed at each scrape.
var phaseDesc = prometheus.NewDesc("ops_clusterupgradeoperations",
	"ClusterUpgradeOperations by phase (every phase reported, 0 when none).", []string{"phase"}, nil)

// allPhases are every phase an operation can be in, reported even when 0.
var allPhases = []opsv1.UpgradePhase{
	opsv1.UpgradePhasePending, opsv1.UpgradePhaseScheduled, opsv1.UpgradePhaseRunning, opsv1.UpgradePhasePaused, opsv1.UpgradePhaseAwaitingApproval,
	opsv1.UpgradePhaseSucceeded, opsv1.UpgradePhaseFailed, opsv1.UpgradePhaseCancelling, opsv1.UpgradePhaseCancelled,
}

func init() {
	metrics.Registry.MustRegister(stepDuration, cloudCalls, phases)
}

// ObserveCloudCall counts one cloud call (a cloud.CallObserver: the
// manager sets it on the provider registry).
func ObserveCloudCall(provider, operation string, err error) {
	cloudCalls.WithLabelValues(provider, operation, cloud.CallResult(err)).Inc()
}

// phases reports the operations by phase.
var phases = &phaseCollector{}

// SetPhaseReader sets where ops_clusterupgradeoperations counts the
// operations (the manager's cache); until then it reports nothing.
func SetPhaseReader(r client.Reader) { phases.reader.Store(&r) }

// phaseCollector counts the operations by phase at every scrape: nothing
// to keep in step with the reconciler, and right after a restart.
type phaseCollector struct {
	reader atomic.Pointer[client.Reader]
}

func (c *phaseCollector) Describe(ch chan<- *prometheus.Desc) { ch <- phaseDesc }

func (c *phaseCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.reader.Load()
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list := &opsv1.ClusterUpgradeOperationList{}
	if err := (*r).List(ctx, list); err != nil {
		ch <- prometheus.NewInvalidMetric(phaseDesc, err)
		return
	}
	count := map[opsv1.UpgradePhase]int{}
	for i := range list.Items {
		p := list.Items[i].Status.Phase
		if p == "" {
			p = opsv1.UpgradePhasePending
		}
		count[p]++
	}
	for _, p := range allPhases {
		ch <- prometheus.MustNewConstMetric(phaseDesc, prometheus.GaugeValue, float64(count[p]), string(p))
	}
}

// recordStepMetrics observes the duration of every step that ended
// between before and after (called once the status patch that ended it
// succeeded, so a step is observed once).
func recordStepMetrics(before, after *opsv1.ClusterUpgradeOperation) {
	for i := range after.Status.Steps {
		s := &after.Status.Steps[i]
		if !s.Phase.IsTerminal() || s.StartTime == nil || s.CompletionTime == nil {
			continue
		}
		if prev := before.Status.Step(s.ID); prev != nil && prev.Phase.IsTerminal() {
			continue
		}
		stepDuration.WithLabelValues(string(s.Action), string(s.Phase)).Observe(s.CompletionTime.Sub(s.StartTime.Time).Seconds())
	}
}
