// Package statemetrics exports the state of ops-server's custom resources
// as Prometheus gauges computed from the manager's cache at every scrape
// (the way kube-state-metrics does): nothing to keep in step with the
// reconcilers, nothing that drifts across restarts, right after a restart.
// It also exports ops_operator_leader.
package statemetrics

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

var (
	upgradesDesc = prometheus.NewDesc("ops_clusterupgradeoperations",
		"ClusterUpgradeOperations by phase and cloud provider (every phase of every provider in use reported, 0 when none).",
		[]string{"phase", "provider"}, nil)
	upgradePhaseDesc = prometheus.NewDesc("ops_clusterupgradeoperation_status_phase",
		"Always 1: the current phase of each ClusterUpgradeOperation, in its labels.",
		[]string{"namespace", "name", "provider", "phase"}, nil)
	upgradeBlockedDesc = prometheus.NewDesc("ops_clusterupgradeoperation_blocked_since_timestamp_seconds",
		"When the blocker of a running ClusterUpgradeOperation (status.blockedBy, e.g. an eviction a PodDisruptionBudget refuses during a drain) was first seen, as a Unix time; absent when nothing blocks it.",
		[]string{"namespace", "name", "provider", "step", "reason"}, nil)
	vmclusterOpsDesc = prometheus.NewDesc("ops_vmclusteroperations",
		"VMClusterOperations by phase (every phase reported, 0 when none).", []string{"phase"}, nil)
	restoresDesc = prometheus.NewDesc("ops_clusterrestores",
		"ClusterRestores by phase (every phase reported, 0 when none).", []string{"phase"}, nil)
	backupsDesc = prometheus.NewDesc("ops_clusterbackups",
		"ClusterBackups by phase (every phase reported, 0 when none).", []string{"phase"}, nil)
	lastBackupDesc = prometheus.NewDesc("ops_backup_last_success_timestamp_seconds",
		"Completion time of the last Succeeded ClusterBackup of each VMCluster that has a ClusterBackup or a ClusterBackupSchedule, as a Unix time; 0 when none succeeded.",
		[]string{"namespace", "vmcluster"}, nil)
)

// UpgradePhases are every phase of a ClusterUpgradeOperation, reported
// even when 0.
var UpgradePhases = []opsv1.UpgradePhase{
	opsv1.UpgradePhasePending, opsv1.UpgradePhaseScheduled, opsv1.UpgradePhaseRunning, opsv1.UpgradePhasePaused, opsv1.UpgradePhaseAwaitingApproval,
	opsv1.UpgradePhaseSucceeded, opsv1.UpgradePhaseFailed, opsv1.UpgradePhaseCancelling, opsv1.UpgradePhaseCancelled,
}

var operationPhases = []opsv1.OperationPhase{
	opsv1.OperationPhasePending, opsv1.OperationPhaseRunning, opsv1.OperationPhasePaused, opsv1.OperationPhaseSucceeded,
	opsv1.OperationPhaseFailed, opsv1.OperationPhaseCancelling, opsv1.OperationPhaseCancelled,
}

var restorePhases = []opsv1.RestorePhase{
	opsv1.RestorePhasePending, opsv1.RestorePhaseRunning, opsv1.RestorePhaseSucceeded, opsv1.RestorePhaseFailed,
}

var backupPhases = []opsv1.BackupPhase{
	opsv1.BackupPhasePending, opsv1.BackupPhaseRunning, opsv1.BackupPhaseSucceeded,
	opsv1.BackupPhasePartiallyFailed, opsv1.BackupPhaseFailed,
}

// Collector computes the gauges from a reader (the manager's cache) at
// every scrape; it reports nothing until SetReader. A list that fails is
// reported as an invalid metric (the scrape fails loudly rather than
// showing zeros).
type Collector struct {
	reader atomic.Pointer[client.Reader]
	// Timeout bounds each scrape's lists (5 s when 0).
	Timeout time.Duration
}

// SetReader sets what the gauges are computed from (the manager's client:
// its cache).
func (c *Collector) SetReader(r client.Reader) { c.reader.Store(&r) }

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{upgradesDesc, upgradePhaseDesc, upgradeBlockedDesc, vmclusterOpsDesc, restoresDesc, backupsDesc, lastBackupDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	timeout := c.Timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	r := c.reader.Load()
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	collectUpgrades(ctx, *r, ch)
	collectOperations(ctx, *r, ch)
	collectRestores(ctx, *r, ch)
	collectBackups(ctx, *r, ch)
}

func gauge(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func collectUpgrades(ctx context.Context, r client.Reader, ch chan<- prometheus.Metric) {
	list := &opsv1.ClusterUpgradeOperationList{}
	if err := r.List(ctx, list); err != nil {
		ch <- prometheus.NewInvalidMetric(upgradesDesc, err)
		return
	}
	type key struct {
		phase    opsv1.UpgradePhase
		provider string
	}
	count := map[key]int{}
	providers := map[string]bool{}
	for i := range list.Items {
		op := &list.Items[i]
		p, provider := op.Status.Phase, string(op.Spec.CloudProvider)
		if p == "" {
			p = opsv1.UpgradePhasePending
		}
		count[key{p, provider}]++
		providers[provider] = true
		ch <- gauge(upgradePhaseDesc, 1, op.Namespace, op.Name, provider, string(p))
		if b := op.Status.BlockedBy; b != nil && b.Since != nil && !p.IsTerminal() {
			ch <- gauge(upgradeBlockedDesc, float64(b.Since.Unix()), op.Namespace, op.Name, provider, b.StepID, b.Reason)
		}
	}
	for provider := range providers {
		for _, p := range UpgradePhases {
			ch <- gauge(upgradesDesc, float64(count[key{p, provider}]), string(p), provider)
		}
	}
}

func collectOperations(ctx context.Context, r client.Reader, ch chan<- prometheus.Metric) {
	list := &opsv1.VMClusterOperationList{}
	if err := r.List(ctx, list); err != nil {
		ch <- prometheus.NewInvalidMetric(vmclusterOpsDesc, err)
		return
	}
	count := map[opsv1.OperationPhase]int{}
	for i := range list.Items {
		p := list.Items[i].Status.Phase
		if p == "" {
			p = opsv1.OperationPhasePending
		}
		count[p]++
	}
	for _, p := range operationPhases {
		ch <- gauge(vmclusterOpsDesc, float64(count[p]), string(p))
	}
}

func collectRestores(ctx context.Context, r client.Reader, ch chan<- prometheus.Metric) {
	list := &opsv1.ClusterRestoreList{}
	if err := r.List(ctx, list); err != nil {
		ch <- prometheus.NewInvalidMetric(restoresDesc, err)
		return
	}
	count := map[opsv1.RestorePhase]int{}
	for i := range list.Items {
		p := list.Items[i].Status.Phase
		if p == "" {
			p = opsv1.RestorePhasePending
		}
		count[p]++
	}
	for _, p := range restorePhases {
		ch <- gauge(restoresDesc, float64(count[p]), string(p))
	}
}

func collectBackups(ctx context.Context, r client.Reader, ch chan<- prometheus.Metric) {
	list := &opsv1.ClusterBackupList{}
	if err := r.List(ctx, list); err != nil {
		ch <- prometheus.NewInvalidMetric(backupsDesc, err)
		return
	}
	schedules := &opsv1.ClusterBackupScheduleList{}
	if err := r.List(ctx, schedules); err != nil {
		ch <- prometheus.NewInvalidMetric(lastBackupDesc, err)
		return
	}
	type vmcluster struct{ namespace, name string }
	last := map[vmcluster]float64{}
	for i := range schedules.Items {
		ns, name := schedules.Items[i].VMClusterKey()
		last[vmcluster{ns, name}] += 0
	}
	count := map[opsv1.BackupPhase]int{}
	for i := range list.Items {
		b := &list.Items[i]
		p := b.Status.Phase
		if p == "" {
			p = opsv1.BackupPhasePending
		}
		count[p]++
		ns, name := b.VMClusterKey()
		k := vmcluster{ns, name}
		t := last[k]
		if p == opsv1.BackupPhaseSucceeded && b.Status.CompletionTime != nil {
			t = max(t, float64(b.Status.CompletionTime.Unix()))
		}
		last[k] = t
	}
	for _, p := range backupPhases {
		ch <- gauge(backupsDesc, float64(count[p]), string(p))
	}
	for k, t := range last {
		ch <- gauge(lastBackupDesc, t, k.namespace, k.name)
	}
}

// Leader is ops_operator_leader: 1 while this replica leads (or runs
// without leader election), 0 otherwise.
type Leader struct {
	leading atomic.Bool
	gauge   prometheus.GaugeFunc
}

// NewLeader returns the ops_operator_leader gauge, 0 until Start runs.
func NewLeader() *Leader {
	l := &Leader{}
	l.gauge = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "ops_operator_leader",
		Help: "1 while this ops-operator replica is the leader (or runs without leader election) and reconciles, 0 otherwise.",
	}, func() float64 {
		if l.leading.Load() {
			return 1
		}
		return 0
	})
	return l
}

// Describe implements prometheus.Collector.
func (l *Leader) Describe(ch chan<- *prometheus.Desc) { l.gauge.Describe(ch) }

// Collect implements prometheus.Collector.
func (l *Leader) Collect(ch chan<- prometheus.Metric) { l.gauge.Collect(ch) }

// Start is a manager Runnable that needs leader election: the manager
// starts it once this replica is elected; the gauge stays 1 until the
// manager stops it.
func (l *Leader) Start(ctx context.Context) error {
	l.leading.Store(true)
	<-ctx.Done()
	l.leading.Store(false)
	return nil
}
