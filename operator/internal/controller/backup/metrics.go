package backup

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// Metrics of finished backups, on the controller-runtime registry (the
// manager's /metrics endpoint).
var (
	backupsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ops_clusterbackup_total",
		Help: "ClusterBackups finished, by result (Succeeded, PartiallyFailed, Failed).",
	}, []string{"result"})
	backupDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ops_clusterbackup_duration_seconds",
		Help:    "Time from the first snapshot to the end of a ClusterBackup, by result.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 18), // 1 s .. ~36 h
	}, []string{"result"})
	backupBytes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ops_clusterbackup_bytes_total",
		Help: "Size of the replica backups that succeeded, in bytes.",
	})
	replicasTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ops_clusterbackup_replicas_total",
		Help: "vmstorage replica backups finished, by result (Succeeded, Failed).",
	}, []string{"result"})
)

func init() {
	metrics.Registry.MustRegister(backupsTotal, backupDuration, backupBytes, replicasTotal)
}

// recordMetrics counts a backup that just reached its terminal phase (once:
// called after the status patch that made it terminal succeeded).
func recordMetrics(b *opsv1.ClusterBackup) {
	result := string(b.Status.Phase)
	backupsTotal.WithLabelValues(result).Inc()
	if b.Status.StartTime != nil && b.Status.CompletionTime != nil {
		backupDuration.WithLabelValues(result).Observe(b.Status.CompletionTime.Sub(b.Status.StartTime.Time).Seconds())
	}
	for _, rep := range b.Status.Replicas {
		replicasTotal.WithLabelValues(string(rep.State)).Inc()
		if rep.State == opsv1.ReplicaStateSucceeded {
			backupBytes.Add(float64(rep.Bytes))
		}
	}
}
