// Package manager builds the ops-operator controller-runtime manager from
// its options: leader election, probes, metrics, client QPS/burst, the
// cloud providers and the reconcilers.
package manager

import (
	"context"
	"fmt"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/controller/backup"
	"github.com/tidbcloud/ops-server/operator/internal/controller/bootstrap"
	"github.com/tidbcloud/ops-server/operator/internal/controller/restore"
	"github.com/tidbcloud/ops-server/operator/internal/controller/schedule"
	"github.com/tidbcloud/ops-server/operator/internal/controller/upgrade"
	"github.com/tidbcloud/ops-server/operator/internal/controller/vmclusterop"
	"github.com/tidbcloud/ops-server/operator/internal/statemetrics"
	"github.com/tidbcloud/ops-server/operator/pkg/buildinfo"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/providers"
	"github.com/tidbcloud/ops-server/operator/pkg/loopback"
	"github.com/tidbcloud/ops-server/operator/pkg/maintenancewindows"
)

// Options are the operator's settings, bound to flags by BindFlags.
type Options struct {
	MetricsAddr string
	HealthAddr  string
	// PprofAddr serves Go's /debug/pprof/ (loopback only); empty: off.
	PprofAddr        string
	LeaderElection   bool
	LeaderElectionID string
	LeaderElectionNS string
	// LeaseDuration, RenewDeadline and RetryPeriod time the leader
	// election (controller-runtime's defaults: 15s, 10s, 2s): a standby
	// takes over at most LeaseDuration after the leader's last renewal.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// QPS and Burst are the client-side rate limit; QPS -1 (the default)
	// sets none: the API server's priority and fairness throttles.
	QPS                  float32
	Burst                int
	Upgrade              upgrade.Options
	Backup               backup.Options
	Operation            vmclusterop.Options
	CloudConfig          string
	EnableMockCloud      bool
	MockNamespace        string
	MockOperationTime    time.Duration
	GracefulShutdownTime time.Duration
	// BackupRunner is how vmbackup runs: BackupRunnerJob (production) or
	// BackupRunnerLocal (the local stack only: local processes, endpoints
	// from Pod annotations, see backup.NewLocalMode).
	BackupRunner string
	// BackupLocal configures BackupRunnerLocal.
	BackupLocal backup.LocalModeOptions
	// Restore tunes the ClusterRestore controller; with RestoreRunner local
	// it restores with VMRestoreBinary and the backer's annotation hold,
	// else with vmrestore Jobs and the vmcluster chart's ops-hold init
	// container (restore.ConfigMapStopper).
	Restore restore.Options
	// RestoreRunner is how vmrestore runs: RestoreRunnerJob (a Job per
	// replica, vmstorage held by the ops-hold init container) or
	// RestoreRunnerLocal (a local process, the backer's annotation hold);
	// empty: the same as BackupRunner.
	RestoreRunner   string
	VMRestoreBinary string
	// VMRestoreImage is the image of the vmrestore Jobs (--backup-runner=
	// job); the Jobs otherwise run with the vmbackup Jobs' options.
	VMRestoreImage string
	// WatchNamespace limits the operator to one namespace's operations;
	// empty watches all namespaces.
	WatchNamespace string
	// SkipControllerNameValidation allows several managers in one process
	// (tests that restart the operator).
	SkipControllerNameValidation bool
	// Bootstrap configures the ObservabilityStack controller; it runs only
	// with a chart repository (--bootstrap-chart-repository).
	Bootstrap bootstrap.Options
	// MaintenanceWindows is the file of the default maintenance windows
	// of upgrades per provider, region and cluster
	// (package maintenancewindows); empty: none.
	MaintenanceWindows string
}

// The values of --backup-runner.
const (
	BackupRunnerJob   = "job"
	BackupRunnerLocal = "local"
)

// The values of --restore-runner.
const (
	RestoreRunnerJob   = "job"
	RestoreRunnerLocal = "local"
)

// DefaultOptions returns the defaults.
func DefaultOptions() Options {
	return Options{
		MetricsAddr:          ":8080",
		HealthAddr:           ":8081",
		LeaderElection:       true,
		LeaderElectionID:     "ops-operator.ops.observability.tidbcloud.com",
		LeaseDuration:        15 * time.Second,
		RenewDeadline:        10 * time.Second,
		RetryPeriod:          2 * time.Second,
		QPS:                  -1,
		Burst:                100,
		Upgrade:              upgrade.DefaultOptions(),
		Backup:               backup.DefaultOptions(),
		Restore:              restore.DefaultOptions(),
		VMRestoreImage:       restore.DefaultJobOptions().Image,
		Operation:            vmclusterop.DefaultOptions(),
		MockNamespace:        mock.DefaultNamespace,
		MockOperationTime:    5 * time.Second,
		GracefulShutdownTime: 30 * time.Second,
		BackupRunner:         BackupRunnerJob,
		Bootstrap:            bootstrap.DefaultOptions(),
	}
}

// BindFlags binds the options to a flag set.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "Address of the Prometheus metrics endpoint (0 disables it).")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", o.PprofAddr, "Loopback host:port of Go's /debug/pprof/ profiling endpoints (reached with kubectl port-forward); empty: none.")
	fs.StringVar(&o.HealthAddr, "health-probe-bind-address", o.HealthAddr, "Address of the /healthz and /readyz probes.")
	fs.BoolVar(&o.LeaderElection, "leader-elect", o.LeaderElection, "Elect a leader so that only one replica reconciles.")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "Name of the leader election Lease.")
	fs.StringVar(&o.LeaderElectionNS, "leader-election-namespace", o.LeaderElectionNS, "Namespace of the leader election Lease (default: the Pod's namespace).")
	fs.DurationVar(&o.LeaseDuration, "leader-election-lease-duration", o.LeaseDuration, "How long a standby waits after the leader's last renewal of the Lease before it takes over.")
	fs.DurationVar(&o.RenewDeadline, "leader-election-renew-deadline", o.RenewDeadline, "How long the leader retries renewing the Lease before it gives up (and exits).")
	fs.DurationVar(&o.RetryPeriod, "leader-election-retry-period", o.RetryPeriod, "Interval of the leader election's attempts.")
	fs.Float32Var(&o.QPS, "kube-api-qps", o.QPS, "Client-side limit of queries per second to the Kubernetes API server; -1: none, the API server's priority and fairness throttles.")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "Burst of queries to the Kubernetes API server (with a client-side limit).")
	fs.IntVar(&o.Upgrade.MaxConcurrentReconciles, "concurrent", o.Upgrade.MaxConcurrentReconciles, "Number of ClusterUpgradeOperations reconciled at once.")
	fs.DurationVar(&o.Upgrade.PollInterval, "poll-interval", o.Upgrade.PollInterval, "How often a running cloud operation or a Kubernetes-side wait is checked.")
	fs.DurationVar(&o.Upgrade.RetryInterval, "retry-interval", o.Upgrade.RetryInterval, "Wait after a retryable cloud error without a Retry-After hint.")
	fs.DurationVar(&o.Upgrade.MaxRetryDelay, "max-retry-delay", o.Upgrade.MaxRetryDelay, "Longest backoff between retries of a transient error (Kubernetes API errors, timeouts), for upgrades, backups and VMCluster operations.")
	fs.DurationVar(&o.Upgrade.NodesReadyTimeout, "nodes-ready-timeout", o.Upgrade.NodesReadyTimeout, "How long a new node group's Nodes may take to become Ready.")
	fs.DurationVar(&o.Upgrade.RolloutTimeout, "vmstorage-rollout-timeout", o.Upgrade.RolloutTimeout, "How long the VMStorage rollout may take.")
	fs.DurationVar(&o.Upgrade.DrainTimeout, "drain-timeout", o.Upgrade.DrainTimeout, "How long draining an old node group may take before the operation fails.")
	fs.IntVar(&o.Backup.MaxConcurrentReconciles, "backup-concurrent", o.Backup.MaxConcurrentReconciles, "Number of ClusterBackups reconciled at once.")
	fs.DurationVar(&o.Backup.PollInterval, "backup-poll-interval", o.Backup.PollInterval, "How often a running vmbackup upload, or a VMCluster that is not ready, is checked.")
	fs.DurationVar(&o.Operation.PollInterval, "operation-poll-interval", o.Operation.PollInterval, "How often a VMClusterOperation step in flight (a HelmRelease, a rollout, a restarted Pod) or a waiting operation is checked.")
	fs.DurationVar(&o.Backup.StartTimeout, "backup-start-timeout", o.Backup.StartTimeout, "How long a ClusterBackup waits for its VMCluster to be operational before it fails.")
	fs.DurationVar(&o.Backup.SnapshotTimeout, "backup-snapshot-timeout", o.Backup.SnapshotTimeout, "How long an unreachable vmstorage is retried for a snapshot before the replica fails.")
	fs.StringVar(&o.Backup.Job.Image, "vmbackup-image", o.Backup.Job.Image, "Image of the vmbackup Jobs.")
	fs.StringVar(&o.Backup.Job.ServiceAccountName, "vmbackup-service-account", o.Backup.Job.ServiceAccountName, "Service account of the vmbackup Jobs, e.g. one bound to a cloud identity (default: the namespace's default).")
	fs.Int32Var(&o.Backup.Job.BackoffLimit, "vmbackup-backoff-limit", o.Backup.Job.BackoffLimit, "Retries of a failed vmbackup Job (a retry resumes the upload).")
	fs.DurationVar(&o.Backup.Job.ActiveDeadline, "vmbackup-active-deadline", o.Backup.Job.ActiveDeadline, "Longest run time of a vmbackup Job (0: unbounded).")
	fs.StringSliceVar(&o.Backup.FSRoots, "backup-fs-roots", o.Backup.FSRoots, "Comma-separated absolute directories an fs:// ClusterBackup destination must be inside (a hostPath on the vmstorage nodes); empty: fs:// destinations are refused. Give ops-apiserver the same list.")
	fs.StringVar(&o.BackupRunner, "backup-runner", o.BackupRunner, "How vmbackup runs: \"job\" (a Job on the replica's node) or \"local\" (a local process against a local vmstorage named by Pod annotations; for the local stack only, never in production).")
	fs.StringVar(&o.BackupLocal.StateDir, "backup-local-state-dir", o.BackupLocal.StateDir, "With --backup-runner=local: directory of the local vmbackup runs' logs and exit status.")
	fs.StringVar(&o.BackupLocal.StorageRoot, "backup-local-storage-root", o.BackupLocal.StorageRoot, "With --backup-runner=local: every vmstorage data directory a Pod annotation names must be inside this directory.")
	fs.StringVar(&o.BackupLocal.VMBackupBinary, "vmbackup-binary", o.BackupLocal.VMBackupBinary, "With --backup-runner=local: the vmbackup executable (default: vmbackup from PATH).")
	fs.StringVar(&o.MaintenanceWindows, "maintenance-windows", o.MaintenanceWindows, "YAML file of the default maintenance windows of upgrades per cloud provider, region and cluster (docs/upgrades.md); empty: none.")
	fs.StringVar(&o.CloudConfig, "cloud-config", o.CloudConfig, "Cloud providers' configuration file (see docs/providers); empty enables no real cloud.")
	fs.StringVar(&o.RestoreRunner, "restore-runner", o.RestoreRunner, "How vmrestore runs for ClusterRestores: \"job\" (a Job per replica, vmstorage held by the vmcluster chart's ops-hold init container) or \"local\" (a local process, vmstorage held by a Pod annotation the local stack honours; never in production); default: as --backup-runner.")
	fs.StringVar(&o.VMRestoreBinary, "vmrestore-binary", o.VMRestoreBinary, "With --restore-runner=local: the vmrestore executable that ClusterRestores run (default: vmrestore from PATH).")
	fs.StringVar(&o.VMRestoreImage, "vmrestore-image", o.VMRestoreImage, "Image of the vmrestore Jobs of ClusterRestores (with --restore-runner=job; service account, retries and deadline are the vmbackup Jobs').")
	fs.DurationVar(&o.Restore.PollInterval, "restore-poll-interval", o.Restore.PollInterval, "How often a ClusterRestore checks a stopping replica, a vmrestore run and a starting replica.")
	fs.BoolVar(&o.EnableMockCloud, "enable-mock-cloud", o.EnableMockCloud, "Register the simulated cloud (cloudProvider mock), for the local stack and tests.")
	fs.StringVar(&o.MockNamespace, "mock-namespace", o.MockNamespace, "Namespace of the simulated cloud's state (cloudProvider mock).")
	fs.DurationVar(&o.MockOperationTime, "mock-operation-duration", o.MockOperationTime, "Simulated duration of every mock cloud operation.")
	fs.StringVar(&o.WatchNamespace, "watch-namespace", o.WatchNamespace, "Only reconcile objects in this namespace (default: all namespaces).")
	fs.StringVar(&o.Bootstrap.RepositoryURL, "bootstrap-chart-repository", o.Bootstrap.RepositoryURL, "Helm repository URL the HelmReleases of ObservabilityStacks install from (the charts ops-apiserver serves to its source-controller sidecar, e.g. http://127.0.0.1:8089); empty: ObservabilityStacks are not reconciled.")
	fs.DurationVar(&o.Bootstrap.PollInterval, "bootstrap-poll-interval", o.Bootstrap.PollInterval, "How often an ObservabilityStack that is not Ready is looked at again (its HelmReleases are watched as well).")
	fs.DurationVar(&o.Bootstrap.ReleaseInterval, "bootstrap-release-interval", o.Bootstrap.ReleaseInterval, "spec.interval of the HelmReleases of ObservabilityStacks.")
	fs.DurationVar(&o.Bootstrap.SourceInterval, "bootstrap-source-interval", o.Bootstrap.SourceInterval, "Interval of the HelmRepository and charts of ObservabilityStacks.")
	fs.StringVar(&o.Bootstrap.FluxShard, "flux-shard", o.Bootstrap.FluxShard, "Value of the sharding.fluxcd.io/key label on the Flux objects ops-operator creates (ops-server's Flux controllers watch only this shard); empty: no label. Give ops-apiserver the same (flux.shard).")
	fs.DurationVar(&o.GracefulShutdownTime, "graceful-shutdown-timeout", o.GracefulShutdownTime, "How long to wait for reconciles to finish on shutdown.")
}

// Scheme returns the scheme the operator uses.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(opsv1.AddToScheme(s))
	utilruntime.Must(helmv2.AddToScheme(s))
	utilruntime.Must(sourcev1.AddToScheme(s))
	return s
}

// New builds the manager with every reconciler registered. registry may
// be nil: then it is built from the options (the cloud configuration file
// stateMetrics and leader are registered once per process on
// controller-runtime's global registry (tests build several managers in
// one process): the latest manager's cache is the one read.
var (
	stateMetrics = &statemetrics.Collector{}
	leader       = statemetrics.NewLeader()
)

func init() {
	// ops_build_info, as ops-apiserver exports it too.
	metrics.Registry.MustRegister(buildinfo.Collector(), stateMetrics, leader)
}

// and, when enabled, the simulated cloud).
func New(cfg *rest.Config, o Options, registry *cloud.Registry) (ctrl.Manager, error) {
	roots, err := opsv1.CleanFSRoots(o.Backup.FSRoots)
	if err != nil {
		return nil, fmt.Errorf("--backup-fs-roots: %w", err)
	}
	o.Backup.FSRoots = roots
	if o.PprofAddr != "" && !loopback.IsAddress(o.PprofAddr) {
		return nil, fmt.Errorf("--pprof-bind-address must be a loopback host:port (127.0.0.0/8, [::1] or localhost), not %q: profiles are served without authentication", o.PprofAddr)
	}
	if o.LeaderElection && (o.LeaseDuration <= o.RenewDeadline || o.RenewDeadline <= o.RetryPeriod || o.RetryPeriod <= 0) {
		return nil, fmt.Errorf("leader election: --leader-election-lease-duration (%s) must be longer than --leader-election-renew-deadline (%s), and that longer than --leader-election-retry-period (%s) > 0",
			o.LeaseDuration, o.RenewDeadline, o.RetryPeriod)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	recoverPanic, skipName := true, o.SkipControllerNameValidation
	// managedFields are never read here and are a large share of every
	// cached object's memory.
	cacheOpts := cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	if o.WatchNamespace != "" {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{o.WatchNamespace: {}}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Cache:                         cacheOpts,
		Scheme:                        Scheme(),
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:        o.HealthAddr,
		PprofBindAddress:              o.PprofAddr,
		LeaderElection:                o.LeaderElection,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionNamespace:       o.LeaderElectionNS,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &o.LeaseDuration,
		RenewDeadline:                 &o.RenewDeadline,
		RetryPeriod:                   &o.RetryPeriod,
		GracefulShutdownTimeout:       &o.GracefulShutdownTime,
		Controller:                    config.Controller{RecoverPanic: &recoverPanic, SkipNameValidation: &skipName},
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if registry == nil {
		pc := &providers.Config{}
		if o.CloudConfig != "" {
			if pc, err = providers.Load(o.CloudConfig); err != nil {
				return nil, fmt.Errorf("cloud configuration: %w", err)
			}
		}
		var extra []cloud.Provider
		if o.EnableMockCloud {
			// The mock cloud writes its state directly (not through the
			// cache), as a cloud API would answer; its requests are
			// counted apart (mock.RequestsMetric).
			direct, err := client.New(mock.CountedConfig(cfg), client.Options{Scheme: mgr.GetScheme()})
			if err != nil {
				return nil, err
			}
			extra = append(extra, &mock.Provider{Client: direct, Namespace: o.MockNamespace, OperationDuration: o.MockOperationTime})
		}
		if registry, err = providers.Build(context.Background(), pc, providers.Options{Extra: extra}); err != nil {
			return nil, fmt.Errorf("cloud providers: %w", err)
		}
	}
	// Every cloud call of an upgrade is counted (ops_cloud_calls_total).
	registry.Observe = upgrade.ObserveCloudCall
	if o.MaintenanceWindows != "" {
		windows, err := maintenancewindows.Load(o.MaintenanceWindows)
		if err != nil {
			return nil, err
		}
		o.Upgrade.MaintenanceWindows = windows
	}
	// The custom resources' state (ops_clusterupgradeoperations and the
	// other statemetrics gauges) is read from this manager's cache at each
	// scrape; ops_operator_leader is 1 once this replica is elected.
	stateMetrics.SetReader(mgr.GetClient())
	if err := mgr.Add(leader); err != nil {
		return nil, err
	}
	if err := (&upgrade.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Providers: registry,
		Recorder:  mgr.GetEventRecorder("ops-operator"),
		Options:   o.Upgrade,
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the ClusterUpgradeOperation controller: %w", err)
	}
	bo := o.Backup
	// One backoff for both controllers (--max-retry-delay).
	bo.MaxRetryDelay = o.Upgrade.MaxRetryDelay
	switch o.BackupRunner {
	case BackupRunnerJob, "":
	case BackupRunnerLocal:
		runner, resolver, err := backup.NewLocalMode(o.BackupLocal)
		if err != nil {
			return nil, err
		}
		mgr.GetLogger().Info("WARNING: backups run in local mode, for the local stack only: vmbackup runs as a process of ops-operator and vmstorage endpoints come from Pod annotations; never use it in a real cluster",
			"vmbackup", runner.Binary, "stateDir", runner.StateDir, "storageRoot", o.BackupLocal.StorageRoot)
		if bo.Runner == nil {
			bo.Runner = runner
		}
		if bo.Resolver == nil {
			bo.Resolver = resolver
		}
	default:
		return nil, fmt.Errorf("--backup-runner: %q is neither %q nor %q", o.BackupRunner, BackupRunnerJob, BackupRunnerLocal)
	}
	if bo.Runner == nil {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("building the clientset for pod logs: %w", err)
		}
		bo.Runner = &backup.JobRunner{
			Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Logs: backup.PodLogReader(cs), Options: bo.Job,
		}
	}
	if err := (&backup.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder("ops-operator"),
		Options:   bo,
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the ClusterBackup controller: %w", err)
	}
	ro := o.Restore
	ro.FSRoots, ro.MaxRetryDelay = roots, o.Upgrade.MaxRetryDelay
	restoreRunner := o.RestoreRunner
	if restoreRunner == "" {
		restoreRunner = o.BackupRunner
	}
	switch restoreRunner {
	case RestoreRunnerJob, RestoreRunnerLocal, "":
	default:
		return nil, fmt.Errorf("--restore-runner: %q is neither %q nor %q", o.RestoreRunner, RestoreRunnerJob, RestoreRunnerLocal)
	}
	if restoreRunner == RestoreRunnerLocal && ro.Runner == nil {
		runner, err := restore.NewLocalRunner(o.BackupLocal, o.VMRestoreBinary)
		if err != nil {
			return nil, err
		}
		ro.Runner, ro.Stopper = runner, restore.AnnotationStopper{Client: mgr.GetClient()}
	}
	if ro.Runner == nil {
		// A real cluster: vmrestore as a Job per replica, vmstorage held by
		// the vmcluster chart's ops-hold init container.
		jo := bo.Job
		jo.Image = o.VMRestoreImage
		ro.Runner = &restore.JobRunner{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Options: jo}
	}
	if ro.Stopper == nil {
		ro.Stopper = restore.ConfigMapStopper{Client: mgr.GetClient(), Reader: mgr.GetAPIReader()}
	}
	if err := (&restore.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder("ops-operator"),
		Options:   ro,
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the ClusterRestore controller: %w", err)
	}
	if err := (&schedule.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder("ops-operator"),
		Options:   schedule.Options{FSRoots: bo.FSRoots, MaxRetryDelay: o.Upgrade.MaxRetryDelay},
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the ClusterBackupSchedule controller: %w", err)
	}
	if err := (&vmclusterop.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder("ops-operator"),
		Options:   operationOptions(o),
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the VMClusterOperation controller: %w", err)
	}
	if o.Bootstrap.RepositoryURL == "" {
		mgr.GetLogger().Info("ObservabilityStacks are not reconciled: no --bootstrap-chart-repository")
		return mgr, nil
	}
	bs := o.Bootstrap
	bs.MaxRetryDelay = o.Upgrade.MaxRetryDelay
	if err := (&bootstrap.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder("ops-operator"),
		Options:   bs,
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the ObservabilityStack controller: %w", err)
	}
	return mgr, nil
}

// operationOptions are the VMClusterOperation options, with the one
// --max-retry-delay of every controller.
func operationOptions(o Options) vmclusterop.Options {
	oo := o.Operation
	oo.MaxRetryDelay = o.Upgrade.MaxRetryDelay
	return oo
}
