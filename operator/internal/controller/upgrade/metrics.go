package upgrade

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// Metrics of upgrades, on the controller-runtime registry (the manager's
// /metrics endpoint), named like the backup ones (ops_clusterbackup_*);
// the operations by phase are package statemetrics'.
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

func init() {
	metrics.Registry.MustRegister(stepDuration, cloudCalls)
}

// ObserveCloudCall counts one cloud call (a cloud.CallObserver: the
// manager sets it on the provider registry).
func ObserveCloudCall(provider, operation string, err error) {
	cloudCalls.WithLabelValues(provider, operation, cloud.CallResult(err)).Inc()
}

// recordStepMetrics observes the duration of every step that ended
// between before and after (called once the status patch that ended it
// succeeded, so a step is observed once).
func recordStepMetrics(before, after *opsv1.ClusterUpgradeOperation) {
	for i := range after.Status.Steps {
		s := &after.Status.Steps[i]
		if !s.Phase.IsTerminal() || s.CompletionTime == nil {
			continue
		}
		// A step that failed at its start (the cloud refused it) never
		// started: it counts as Failed in 0 s. Steps skipped without
		// starting are not observed.
		if s.StartTime == nil && s.Phase != opsv1.StepPhaseFailed {
			continue
		}
		if prev := before.Status.Step(s.ID); prev != nil && prev.Phase.IsTerminal() {
			continue
		}
		d := 0.0
		if s.StartTime != nil {
			d = s.CompletionTime.Sub(s.StartTime.Time).Seconds()
		}
		stepDuration.WithLabelValues(string(s.Action), string(s.Phase)).Observe(d)
	}
}
