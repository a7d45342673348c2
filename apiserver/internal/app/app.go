// Package app assembles ops-apiserver from its configuration: the
// Kubernetes clients and informer cache, the local chart repository, the
// resources' services and handlers, and the HTTP server. main only parses
// the configuration and calls New and Run; tests do the same with their
// own configuration.
package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/go-logr/logr"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/tidbcloud/ops-server/apiserver/internal/auth"
	"github.com/tidbcloud/ops-server/apiserver/internal/backups"
	"github.com/tidbcloud/ops-server/apiserver/internal/cachetrim"
	"github.com/tidbcloud/ops-server/apiserver/internal/components"
	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/apiserver/internal/docspage"
	"github.com/tidbcloud/ops-server/apiserver/internal/objindex"
	"github.com/tidbcloud/ops-server/apiserver/internal/openapi"
	providersapi "github.com/tidbcloud/ops-server/apiserver/internal/providers"
	"github.com/tidbcloud/ops-server/apiserver/internal/restores"
	"github.com/tidbcloud/ops-server/apiserver/internal/server"
	"github.com/tidbcloud/ops-server/apiserver/internal/stacks"
	"github.com/tidbcloud/ops-server/apiserver/internal/troubleshoot"
	"github.com/tidbcloud/ops-server/apiserver/internal/upgrades"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusterops"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	"github.com/tidbcloud/ops-server/apiserver/internal/watch"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/buildinfo"
	"github.com/tidbcloud/ops-server/operator/pkg/chartrepo"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/providers"
	"github.com/tidbcloud/ops-server/operator/pkg/loopback"
)

// Options configure New.
type Options struct {
	Config *config.Config
	// RESTConfig overrides the Kubernetes client configuration of Config
	// (tests pass the test control plane's).
	RESTConfig *rest.Config
	Logger     logr.Logger
}

// App is an assembled ops-apiserver.
type App struct {
	cfg      *config.Config
	log      logr.Logger
	cache    cache.Cache
	echo     *echo.Echo
	listener net.Listener
	http     *http.Server

	repoListener net.Listener
	repoServer   *http.Server
	// pprofServer serves /debug/pprof/ on pprofListener (--pprof-bind-address).
	pprofServer   *http.Server
	pprofListener net.Listener
	repoURL       string

	events  record.EventBroadcaster
	apis    []server.API
	watches *watch.Broker

	synced       atomic.Bool
	shuttingDown atomic.Bool
}

// APIs lists every API of the server. The OpenAPI drift test builds the
// server from this list, so a resource added here and not to the
// document (or the other way round) fails it. bk is the backups service;
// it may be left out where only the routes matter (that test).
func APIs(vm *vmclusters.Service, up *upgrades.Service, bk ...*backups.Service) []server.API {
	return append(APIsWith(vm, up, nil, nil, nil, bk...), &stacks.Handler{})
}

// APIsWith is APIs with the troubleshooting service ts, the vmcluster
// operations service ops and the components service comps (nil where
// only the routes matter).
func APIsWith(vm *vmclusters.Service, up *upgrades.Service, ts *troubleshoot.Service, ops *vmclusterops.Service, comps *components.Service, bk ...*backups.Service) []server.API {
	var b *backups.Service
	var rs *restores.Service
	if len(bk) > 0 {
		b = bk[0]
		rs = &restores.Service{Backups: b}
	}
	return []server.API{
		openapi.API{},
		&docspage.API{Document: openapi.Document},
		&vmclusters.Handler{Svc: vm},
		&upgrades.Handler{Svc: up},
		&backups.Handler{Svc: b},
		&restores.Handler{Svc: rs},
		&backups.ScheduleHandler{Svc: b},
		&troubleshoot.Handler{Svc: ts},
		&components.Handler{Svc: comps},
		&vmclusterops.Handler{Svc: ops},
		&providersapi.Handler{Configured: providerNames(up)},
	}
}

// providerNames lists the cloud providers the upgrade service is
// configured for (none without one).
func providerNames(up *upgrades.Service) func() []string {
	return func() []string {
		if up == nil || up.Providers == nil {
			return nil
		}
		return up.Providers.Names()
	}
}

// NewScheme returns the scheme of the objects ops-apiserver reads and
// writes.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, helmv2.AddToScheme, sourcev1.AddToScheme, opsv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// New builds the application and opens its listeners (so Addr is known),
// without serving yet.
func New(ctx context.Context, opts Options) (*App, error) {
	cfg := opts.Config
	if cfg == nil {
		return nil, errors.New("no configuration")
	}
	a := &App{cfg: cfg, log: opts.Logger}

	restCfg, err := restConfig(cfg, opts.RESTConfig)
	if err != nil {
		return nil, err
	}
	scheme, err := NewScheme()
	if err != nil {
		return nil, fmt.Errorf("building scheme: %w", err)
	}
	kube, err := client.New(restCfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("building Kubernetes client: %w", err)
	}
	// Every write of every resource carries the configured field manager:
	// the services are handed this client, none names a manager itself.
	kube = client.WithFieldOwner(kube, cfg.FieldManager)
	a.cache, err = cache.New(restCfg, cache.Options{
		Scheme:            scheme,
		DefaultNamespaces: map[string]cache.Config{cfg.Namespace: {}, cfg.Upgrades.Namespace: {}, cfg.Backups.Namespace: {}},
		// What the cache keeps of each kind: cachetrim (docs/apiserver.md,
		// "Memory").
		ByObject: map[client.Object]cache.ByObject{
			&helmv2.HelmRelease{}: {
				Label:     labels.SelectorFromSet(labels.Set{vmclusters.LabelManagedBy: vmclusters.ManagedBy}),
				Transform: cachetrim.Releases(),
			},
			&opsv1.ClusterUpgradeOperation{}: {Transform: cachetrim.Operations()},
		},
		DefaultTransform: cachetrim.Others(),
	})
	if err != nil {
		return nil, fmt.Errorf("building informer cache: %w", err)
	}
	if err := vmclusters.IndexUID(ctx, a.cache); err != nil {
		return nil, fmt.Errorf("indexing HelmReleases by UID: %w", err)
	}
	// Create the informer now, so that it starts (and syncs) with the
	// cache; the index lists releases without copying them.
	releases, err := vmclusters.NewReleaseIndex(ctx, a.cache, cfg.Namespace)
	if err != nil {
		return nil, fmt.Errorf("creating HelmRelease informer: %w", err)
	}

	if err := upgrades.IndexFields(ctx, a.cache); err != nil {
		return nil, fmt.Errorf("indexing ClusterUpgradeOperations: %w", err)
	}
	if _, err := a.cache.GetInformer(ctx, &opsv1.ClusterUpgradeOperation{}); err != nil {
		return nil, fmt.Errorf("creating ClusterUpgradeOperation informer: %w", err)
	}
	if _, err := a.cache.GetInformer(ctx, &opsv1.ClusterBackup{}); err != nil {
		return nil, fmt.Errorf("creating ClusterBackup informer: %w", err)
	}
	if _, err := a.cache.GetInformer(ctx, &opsv1.ClusterRestore{}); err != nil {
		return nil, fmt.Errorf("creating ClusterRestore informer: %w", err)
	}
	if _, err := a.cache.GetInformer(ctx, &opsv1.ClusterBackupSchedule{}); err != nil {
		return nil, fmt.Errorf("creating ClusterBackupSchedule informer: %w", err)
	}
	if _, err := a.cache.GetInformer(ctx, &opsv1.VMClusterOperation{}); err != nil {
		return nil, fmt.Errorf("creating VMClusterOperation informer: %w", err)
	}
	registry, err := cloudRegistry(ctx, cfg.Upgrades, kube)
	if err != nil {
		return nil, err
	}
	up := &upgrades.Service{Reader: a.cache, Live: kube, Indexed: true, Writer: kube, Namespace: cfg.Upgrades.Namespace, Providers: registry, Caller: auth.CallerName}
	if up.Index, err = objindex.New(ctx, a.cache, cfg.Upgrades.Namespace, upgrades.Order); err != nil {
		return nil, fmt.Errorf("indexing ClusterUpgradeOperations: %w", err)
	}
	up.Views = objindex.NewMemo[*server.Encoded[upgrades.Operation]](up.Index)
	wc := cfg.Watch
	a.watches = watch.NewBroker(watch.Options{
		Heartbeat: wc.Heartbeat.Duration, MaxDuration: wc.MaxDuration.Duration,
		MaxPerCaller: wc.MaxPerCaller, MaxTotal: wc.MaxTotal, Caller: auth.CallerName,
	})
	if up.Watch, err = a.watches.NewHub(ctx, a.cache, &opsv1.ClusterUpgradeOperation{}, upgrades.Resource, inNamespace(cfg.Upgrades.Namespace)); err != nil {
		return nil, err
	}

	local, err := a.localCharts()
	if err != nil {
		a.close()
		return nil, err
	}
	source, err := vmclusters.NewChartSource(cfg.Chart, local, a.repoURL)
	if err != nil {
		a.close()
		return nil, err
	}
	catalog, err := a.catalog(local)
	if err != nil {
		a.close()
		return nil, err
	}
	endpoints, err := cfg.Chart.EndpointTemplates()
	if err != nil {
		a.close()
		return nil, err
	}
	svc := &vmclusters.Service{
		Store: &vmclusters.KubeStore{
			Cache: a.cache, Index: releases, Client: kube, Namespace: cfg.Namespace,
			CacheWait: 5 * time.Second,
		},
		Translator: vmclusters.Translator{Namespace: cfg.Namespace, Chart: source, Flux: cfg.Flux, Endpoints: endpoints},
		Work: &vmclusters.KubeWork{Reader: a.cache,
			BackupNamespaces: []string{cfg.Namespace, cfg.Backups.Namespace}, UpgradeNamespaces: []string{cfg.Upgrades.Namespace},
			OperationNamespaces: []string{cfg.Namespace}},
		Views:  vmclusters.NewViews(releases),
		Caller: auth.CallerName,
	}
	up.VMClusters = svc
	if svc.Watch, err = a.watches.NewHub(ctx, a.cache, &helmv2.HelmRelease{}, vmclusters.Resource, inNamespace(cfg.Namespace)); err != nil {
		return nil, err
	}
	comps := &components.Service{
		Store: &vmclusters.KubeStore{
			Cache: a.cache, Index: releases, Client: kube, Namespace: cfg.Namespace,
			CacheWait: 5 * time.Second, SourceLabels: components.Labels,
		},
		Catalog: catalog, Namespace: cfg.Namespace, Flux: cfg.Flux, Caller: auth.CallerName,
	}
	bk := &backups.Service{
		Reader: a.cache, Writer: kube, Namespace: cfg.Backups.Namespace, VMClusters: svc,
		Defaults: cfg.Backups, Caller: auth.CallerName, CacheWait: 5 * time.Second,
	}
	if bk.Watch, err = a.watches.NewHub(ctx, a.cache, &opsv1.ClusterBackup{}, backups.Resource, inNamespace(cfg.Backups.Namespace)); err != nil {
		return nil, err
	}
	svc.Seeder = restores.Seeder{Svc: &restores.Service{Backups: bk}, Namespace: cfg.Namespace}

	guard, err := a.newGuard(restCfg, scheme)
	if err != nil {
		a.close()
		return nil, err
	}

	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		a.close()
		return nil, fmt.Errorf("building Kubernetes clientset: %w", err)
	}
	tc := cfg.Troubleshoot
	ts := &troubleshoot.Service{
		VMClusters: svc, HelmNamespace: cfg.Namespace, Reader: kube, Clientset: cs, RESTConfig: restCfg,
		MaxLogBytes: tc.LogMaxBytes, FollowMaxDuration: tc.LogFollowMaxDuration.Duration,
		ExecAllowed: tc.ExecAllowedCommands, ExecMaxOutputBytes: tc.ExecMaxOutputBytes, DefaultTimeout: cfg.RequestTimeout.Duration,
		DiagnosticsLogLines: tc.DiagnosticsLogLines, DiagnosticsMaxBytes: tc.DiagnosticsMaxBytes,
	}

	ops := &vmclusterops.Service{
		Reader: a.cache, Writer: kube, Namespace: cfg.Namespace, VMClusters: svc,
		Caller: auth.CallerName, CacheWait: 5 * time.Second,
	}
	a.apis = append(APIsWith(svc, up, ts, ops, comps, bk), &stacks.Handler{Reader: kube, Namespace: cfg.Namespace})
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildinfo.Collector())
	reg.MustRegister(a.watches.Collectors()...)
	query, err := openapi.QueryParameters(openapi.Document)
	if err != nil {
		a.close()
		return nil, err
	}
	a.echo, err = server.New(server.Options{
		QueryParameters: query,
		Logger:          a.log,
		Registry:        reg,
		MaxBodyBytes:    cfg.MaxRequestBodyBytes,
		RequestTimeout:  cfg.RequestTimeout.Duration,
		Ready:           a.ready,
		Guard:           guard.Middleware,
	}, a.apis...)
	if err != nil {
		a.close()
		return nil, err
	}
	var certs *server.CertReloader
	if cfg.TLS.Enabled() {
		if certs, err = server.NewCertReloader(cfg.TLS.CertFile, cfg.TLS.PrivateKeyFile, a.log.WithName("tls")); err != nil {
			a.close()
			return nil, err
		}
	}
	a.listener, err = net.Listen("tcp", cfg.ListenAddress)
	if err != nil {
		a.close()
		return nil, fmt.Errorf("listening on %s: %w", cfg.ListenAddress, err)
	}
	if certs != nil {
		if a.listener, err = server.TLSListener(a.listener, certs); err != nil {
			a.close()
			return nil, err
		}
	}
	a.http = server.NewHTTPServer(a.echo, a.log.WithName("http"))
	if cfg.PprofAddress != "" {
		if !loopback.IsAddress(cfg.PprofAddress) {
			// Validate says so too; this keeps a hand-built configuration
			// from getting past it.
			a.close()
			return nil, fmt.Errorf("--pprof-bind-address must be a loopback host:port, not %q", cfg.PprofAddress)
		}
		if a.pprofListener, err = net.Listen("tcp", cfg.PprofAddress); err != nil {
			a.close()
			return nil, fmt.Errorf("listening on %s (--pprof-bind-address): %w", cfg.PprofAddress, err)
		}
		a.pprofServer = server.NewPprofServer()
	}
	return a, nil
}

// newGuard builds the authentication, authorization, rate limit and audit
// of every route (docs/auth.md).
func (a *App) newGuard(restCfg *rest.Config, scheme *runtime.Scheme) (*auth.Guard, error) {
	c := a.cfg.Auth
	if c.InsecureDisableAuth && !loopback.IsAddress(a.cfg.ListenAddress) {
		// Validate says so too; this keeps a hand-built configuration from
		// getting past it.
		return nil, fmt.Errorf("--insecure-disable-auth needs a loopback --listen-address, not %q", a.cfg.ListenAddress)
	}
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("building Kubernetes clientset: %w", err)
	}
	a.events = record.NewBroadcaster()
	a.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	g := &auth.Guard{
		Namespace:     a.cfg.Namespace,
		ClientLimiter: auth.NewRateLimiter(c.ClientRateLimitQPS, c.ClientRateLimitBurst),
		Limiter:       auth.NewRateLimiter(c.RateLimitQPS, c.RateLimitBurst),
		Audit:         a.log.WithName("audit"),
		Recorder:      a.events.NewRecorder(scheme, corev1.EventSource{Component: "ops-apiserver"}),
		Disabled:      c.InsecureDisableAuth,
	}
	if c.InsecureDisableAuth {
		a.log.Info("WARNING: AUTHENTICATION AND AUTHORIZATION ARE DISABLED (--insecure-disable-auth): anyone who can reach " +
			a.cfg.ListenAddress + " may deploy, change and delete vmclusters and start cluster upgrades. Use this only for local experiments.")
		return g, nil
	}
	var authn auth.Union
	if c.TokenFile != "" {
		tf, err := auth.NewTokenFile(c.TokenFile, a.log.WithName("auth"))
		if err != nil {
			return nil, err
		}
		authn = append(authn, tf)
	}
	authn = append(authn, auth.NewTokenReviewAuthenticator(cs.AuthenticationV1().TokenReviews(), c.TokenAudiences, c.CacheTTL.Duration, c.CacheMaxEntries))
	g.Authenticator = authn
	g.Authorizer = auth.NewSubjectAccessReviewAuthorizer(cs.AuthorizationV1().SubjectAccessReviews(), c.CacheTTL.Duration, c.CacheMaxEntries)
	return g, nil
}

// inNamespace selects the objects of namespace ns (the cache holds
// several namespaces).
func inNamespace(ns string) func(client.Object) bool {
	return func(o client.Object) bool { return o.GetNamespace() == ns }
}

// cloudRegistry builds the cloud providers the nodeGroups and addons
// endpoints call: the configured real clouds and, when enabled, the
// simulated one.
func cloudRegistry(ctx context.Context, c config.UpgradesConfig, kube client.Client) (*cloud.Registry, error) {
	pc := &providers.Config{}
	if c.CloudConfig != "" {
		var err error
		if pc, err = providers.Load(c.CloudConfig); err != nil {
			return nil, fmt.Errorf("cloud configuration: %w", err)
		}
	}
	var extra []cloud.Provider
	if c.EnableMockCloud {
		extra = append(extra, &mock.Provider{Client: kube, Namespace: c.MockNamespace})
	}
	reg, err := providers.Build(ctx, pc, providers.Options{Extra: extra})
	if err != nil {
		return nil, fmt.Errorf("cloud providers: %w", err)
	}
	return reg, nil
}

func restConfig(cfg *config.Config, override *rest.Config) (*rest.Config, error) {
	var rc *rest.Config
	var err error
	switch {
	case override != nil:
		rc = rest.CopyConfig(override)
	case cfg.Kubeconfig != "":
		rc, err = clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	default:
		// $KUBECONFIG, in-cluster, then ~/.kube/config.
		rc, err = ctrlconfig.GetConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("loading Kubernetes client configuration: %w", err)
	}
	rc.QPS = cfg.KubeAPIQPS
	rc.Burst = cfg.KubeAPIBurst
	rc.UserAgent = "ops-apiserver"
	return rc, nil
}

// catalog builds the components' catalog (config.CatalogConfig).
func (a *App) catalog(local []*chartrepo.Chart) (components.Catalog, error) {
	cat := components.Catalog{Entries: map[string]components.Entry{}, VMClusterChart: a.cfg.Chart.Name}
	for _, c := range a.cfg.Catalog.Charts {
		src, err := vmclusters.NewCatalogChartSource(c, local, a.cfg.CatalogLocalDir(), a.repoURL)
		if err != nil {
			return cat, fmt.Errorf("catalog: %w", err)
		}
		cat.Entries[c.Name] = components.Entry{Source: src, Namespaces: c.Namespaces}
	}
	return cat, nil
}

// localCharts packages the baked charts (chart.localDir for a baked
// vmcluster chart, catalog.localDir for baked catalog charts) and opens
// the local repository's listener; none when nothing is baked.
func (a *App) localCharts() ([]*chartrepo.Chart, error) {
	if !a.cfg.HasLocalCharts() {
		return nil, nil
	}
	var dirs []string
	if a.cfg.Chart.SourceType() == config.SourceLocal {
		dirs = append(dirs, a.cfg.Chart.LocalDir)
	}
	for _, c := range a.cfg.Catalog.Charts {
		if c.SourceType() == config.SourceLocal && !slices.Contains(dirs, a.cfg.CatalogLocalDir()) {
			dirs = append(dirs, a.cfg.CatalogLocalDir())
		}
	}
	repo := chartrepo.New()
	var charts []*chartrepo.Chart
	seen := map[string]bool{}
	for _, dir := range dirs {
		added, err := repo.AddDirs(dir)
		if err != nil {
			return nil, fmt.Errorf("packaging the charts in %s: %w", dir, err)
		}
		for _, ch := range added {
			if key := ch.Name + "@" + ch.Version; !seen[key] {
				seen[key] = true
				charts = append(charts, ch)
			}
		}
	}
	ln, err := net.Listen("tcp", a.cfg.LocalRepository.ListenAddress)
	if err != nil {
		return nil, fmt.Errorf("listening on %s for the local chart repository: %w", a.cfg.LocalRepository.ListenAddress, err)
	}
	a.repoListener = ln
	a.repoServer = server.NewHTTPServer(repo, a.log.WithName("chartrepo"))
	a.repoURL = a.cfg.LocalRepository.URL
	if a.repoURL == "" {
		a.repoURL = "http://" + ln.Addr().String()
	}
	for _, ch := range charts {
		a.log.Info("Serving local chart", "chart", ch.Name, "version", ch.Version, "url", a.repoURL)
	}
	return charts, nil
}

func (a *App) close() {
	if a.listener != nil {
		_ = a.listener.Close()
	}
	if a.repoListener != nil {
		_ = a.repoListener.Close()
	}
	if a.pprofListener != nil {
		_ = a.pprofListener.Close()
	}
}

// Addr is the address the REST API listens on.
func (a *App) Addr() string { return a.listener.Addr().String() }

// Scheme is "https" when the REST API serves TLS, "http" otherwise.
func (a *App) Scheme() string {
	if a.cfg.TLS.Enabled() {
		return "https"
	}
	return "http"
}

// LocalRepositoryURL is the URL of the local chart repository ("" when
// the chart comes from a remote repository).
func (a *App) LocalRepositoryURL() string { return a.repoURL }

// Routes are the routes the server serves (each with the permission it
// needs).
func (a *App) Routes() []server.Route {
	var out []server.Route
	for _, api := range a.apis {
		out = append(out, api.Routes()...)
	}
	return out
}

// Handler is the REST API handler.
func (a *App) Handler() http.Handler { return a.echo }

func (a *App) ready(context.Context) error {
	switch {
	case a.shuttingDown.Load():
		return errors.New("shutting down")
	case !a.synced.Load():
		return errors.New("the informer cache has not synced yet")
	}
	return nil
}

// Run starts the cache and serves until ctx ends, then shuts down
// gracefully.
func (a *App) Run(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	timeout := a.cfg.ShutdownTimeout.Duration
	g.Go(func() error {
		<-gctx.Done()
		a.shuttingDown.Store(true)
		// http.Server.Shutdown waits for running requests without
		// cancelling them: end the watch streams.
		a.watches.Stop()
		return nil
	})
	g.Go(func() error {
		if err := a.cache.Start(gctx); err != nil {
			return fmt.Errorf("informer cache: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		if !a.cache.WaitForCacheSync(gctx) {
			if gctx.Err() != nil {
				return nil
			}
			return errors.New("the informer cache did not sync")
		}
		a.synced.Store(true)
		a.log.Info("Informer cache synced", "namespace", a.cfg.Namespace)
		return nil
	})
	if a.repoServer != nil {
		g.Go(func() error { return server.Serve(gctx, a.repoServer, a.repoListener, timeout) })
	}
	if a.pprofServer != nil {
		g.Go(func() error {
			a.log.Info("Serving Go profiles", "address", a.pprofListener.Addr().String()+"/debug/pprof/")
			return server.Serve(gctx, a.pprofServer, a.pprofListener, timeout)
		})
	}
	g.Go(func() error {
		a.log.Info("Serving the REST API", "address", a.Addr(), "scheme", a.Scheme())
		return server.Serve(gctx, a.http, a.listener, timeout)
	})
	err := g.Wait()
	if a.events != nil {
		a.events.Shutdown()
	}
	a.log.Info("Stopped")
	return err
}
