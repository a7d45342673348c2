package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/e2e/stack"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

// operatorArgs are added to the local stack's ops-operator flags for the
// throughput run: the simulated cloud answers at once.
var operatorArgs = []string{"--mock-operation-duration=0s"}

// operatorProfileLimit caps the CPU profile of the operator run.
const operatorProfileLimit = 30 * time.Second

func opCluster(i int) string { return fmt.Sprintf("bench-op-%03d", i) }

// operatorPhase creates one ClusterUpgradeOperation per simulated cluster
// at once and times ops-operator until all are finished.
func (e *env) operatorPhase(ctx context.Context, res *Results) error {
	cfg := e.cfg
	n := cfg.OperatorOps
	if e.upTemplate == nil {
		return fmt.Errorf("no upgrade operation was created by the write path to copy")
	}
	// ops-operator comes with the stack's backer, which runs a
	// real vmstorage process for every vmstorage Pod: uninstall the
	// releases of the previous run first (with Flux still running), then
	// stop Flux, which this run does not need.
	e.logf("Deleting every HelmRelease; waiting for the uninstalls and the vmstorage Pods to go")
	for _, ns := range []string{stack.Namespace, namespaceDirect} {
		if err := e.kube.DeleteAllOf(ctx, &helmv2.HelmRelease{}, client.InNamespace(ns), stack.NotStack()); err != nil {
			return err
		}
		if err := e.kube.DeleteAllOf(ctx, &sourcev1.HelmRepository{}, client.InNamespace(ns), stack.NotStack()); err != nil {
			return err
		}
	}
	if err := e.waitReleasesGone(ctx, cfg.RunningTimeout, ""); err != nil {
		return err
	}
	var left []string
	if ok, err := poll(ctx, time.Second, 5*time.Minute, func() (bool, error) {
		var pods corev1.PodList
		err := e.kube.List(ctx, &pods, client.MatchingLabels{"app.kubernetes.io/name": "vmstorage"})
		left = left[:0]
		for _, p := range pods.Items {
			left = append(left, fmt.Sprintf("%s/%s (deleting: %t, finalizers %v, owners %d)",
				p.Namespace, p.Name, p.DeletionTimestamp != nil, p.Finalizers, len(p.OwnerReferences)))
		}
		return err == nil && len(pods.Items) == 0, err
	}); err != nil || !ok {
		return fmt.Errorf("%d vmstorage Pods left after five minutes (%v): %s", len(left), err, strings.Join(left[:min(len(left), 5)], ", "))
	}
	if e.st.Flux != nil {
		e.logf("Stopping Flux")
		e.st.Flux.Stop()
	}
	// The operations of the read and write paths would be worked on too.
	e.logf("Deleting the upgrade operations of the read and write paths")
	for _, ns := range []string{stack.Namespace, namespaceDirect} {
		if err := e.kube.DeleteAllOf(ctx, &opsv1.ClusterUpgradeOperation{}, client.InNamespace(ns)); err != nil {
			return err
		}
	}
	if ok, err := poll(ctx, 500*time.Millisecond, time.Minute, func() (bool, error) {
		var list opsv1.ClusterUpgradeOperationList
		err := e.kube.List(ctx, &list)
		return err == nil && len(list.Items) == 0, err
	}); err != nil || !ok {
		return fmt.Errorf("upgrade operations left after a minute (%v)", err)
	}

	e.logf("Seeding %d simulated clusters, each with node group ng of %d node(s)", n, cfg.OperatorNodes)
	provider := &mock.Provider{Client: e.kube}
	seeded := RunN(ctx, 16, n, func(ctx context.Context, _, seq int) (int, error) {
		return 0, provider.Seed(ctx, cloud.ClusterRef{Provider: cloud.Mock, Name: opCluster(seq), Region: "local"}, mock.ClusterState{
			Version:    "1.29",
			NodeGroups: map[string]*mock.NodeGroupState{"ng": {Size: int32(cfg.OperatorNodes), InstanceTypes: []string{"m5.large"}}},
		})
	})
	if seeded.Errors > 0 {
		return fmt.Errorf("seeding %d of %d clusters failed; first: %v", seeded.Errors, n, seeded.FirstError)
	}

	metricsPort, err := testenv.FreePort()
	if err != nil {
		return err
	}
	saved := stack.OperatorArgs
	defer func() { stack.OperatorArgs = saved }()
	// Later flags win: the metrics address is known, the cloud is instant.
	args := append(append(slices.Clone(saved), operatorArgs...), cfg.OperatorExtraArgs...)
	res.Settings.OperatorArgs = args
	stack.OperatorArgs = append(slices.Clone(args), fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", metricsPort))
	if e.profileDir != "" {
		if hasFlag(filepath.Join(e.binDir, "ops-operator"), pprofFlag) {
			port, err := testenv.FreePort()
			if err != nil {
				return err
			}
			addr := fmt.Sprintf("127.0.0.1:%d", port)
			stack.OperatorArgs = append(stack.OperatorArgs, pprofFlag+"="+addr)
			e.opProf = newProfiler("operator", addr, e.profileDir)
		} else {
			res.ProfileErrors = append(res.ProfileErrors, "ops-operator: this build has no "+pprofFlag)
		}
	}
	e.logf("Starting ops-operator: %s", strings.Join(res.Settings.OperatorArgs, " "))
	if err := e.st.StartOperator(ctx); err != nil {
		return err
	}
	pid, err := FindChild(os.Getpid(), filepath.Join(e.binDir, "ops-operator"))
	if err != nil {
		return err
	}
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)
	before, err := Scrape(ctx, metricsURL)
	if err != nil {
		return fmt.Errorf("scraping ops-operator: %w", err)
	}

	o := &OperatorResult{Operations: n}
	res.Operator = o
	e.logf("Creating %d ClusterUpgradeOperations at once; waiting until all are finished (at most %s)", n, cfg.OperatorTimeout)
	var cpu *cpuSession
	if e.opProf != nil {
		// The run, or its first operatorProfileLimit.
		cpu = e.opProf.startCPU(ctx, operatorProfileLimit)
	}
	start := time.Now()
	created := RunN(ctx, n, n, func(ctx context.Context, _, seq int) (int, error) {
		return 0, e.kube.Create(ctx, upgradeCopy(e.upTemplate, stack.Namespace, opCluster(seq)))
	})
	o.CreateSeconds = created.Elapsed.Seconds()
	if created.Errors > 0 {
		return fmt.Errorf("%d of %d creates failed; first: %v", created.Errors, n, created.FirstError)
	}
	var list opsv1.ClusterUpgradeOperationList
	done, err := poll(ctx, 250*time.Millisecond, cfg.OperatorTimeout, func() (bool, error) {
		list = opsv1.ClusterUpgradeOperationList{}
		if err := e.kube.List(ctx, &list, client.InNamespace(stack.Namespace)); err != nil {
			return false, err
		}
		finished := 0
		for _, op := range list.Items {
			if op.Status.Phase.IsTerminal() {
				finished++
			}
		}
		return finished >= n, nil
	})
	if err != nil {
		return err
	}
	o.Seconds = time.Since(start).Seconds()
	o.TimedOut = !done
	if cpu != nil {
		what := fmt.Sprintf("ops-operator during the throughput run of %d operations (its first %s at most)", n, operatorProfileLimit)
		e.saveProfile(res, "ops-operator CPU", func() (ProfileSummary, error) {
			prof, err := cpu.stop()
			if err != nil {
				return ProfileSummary{}, err
			}
			return e.opProf.save("cpu", "throughput", what, prof)
		})
		e.saveProfile(res, "ops-operator heap", func() (ProfileSummary, error) {
			return e.opProf.heap(ctx, "after throughput", fmt.Sprintf("ops-operator after the throughput run of %d operations (after a GC)", n))
		})
	}
	var took []time.Duration
	var firstFailure string
	for _, op := range list.Items {
		switch op.Status.Phase {
		case opsv1.UpgradePhaseSucceeded:
			o.Succeeded++
		case opsv1.UpgradePhaseFailed:
			o.Failed++
			if firstFailure == "" {
				firstFailure = fmt.Sprintf("%s (%s): %s", op.Name, op.Spec.K8sClusterName, failureMessage(&op))
			}
		}
		if op.Status.CompletionTime != nil {
			took = append(took, op.Status.CompletionTime.Sub(op.CreationTimestamp.Time))
		}
	}
	slices.Sort(took)
	o.P50Seconds, o.P99Seconds = Percentile(took, 50).Seconds(), Percentile(took, 99).Seconds()

	after, err := Scrape(ctx, metricsURL)
	if err != nil {
		return fmt.Errorf("scraping ops-operator: %w", err)
	}
	ctrl := map[string]string{"controller": "clusterupgradeoperation"}
	o.Reconciles = Sum(after, "controller_runtime_reconcile_total", ctrl) - Sum(before, "controller_runtime_reconcile_total", ctrl)
	o.ReconcileErrors = Sum(after, "controller_runtime_reconcile_errors_total", ctrl) - Sum(before, "controller_runtime_reconcile_errors_total", ctrl)
	o.ReconcilesPerSecond = Ratio(o.Reconciles, o.Seconds)
	// The simulated cloud's own requests (its state, its Nodes) go through
	// the same client-go metrics; they stand for cloud API calls.
	cloudReqs := Sum(after, mock.RequestsMetric, nil) - Sum(before, mock.RequestsMetric, nil)
	o.CloudRequestsPerOperation = Ratio(cloudReqs, float64(n))
	o.APIRequests = Sum(after, "rest_client_requests_total", nil) - Sum(before, "rest_client_requests_total", nil) - cloudReqs
	o.RequestsPerOperation = Ratio(o.APIRequests, float64(n))
	o.RequestsByMethod = map[string]float64{}
	b4 := SumBy(before, "rest_client_requests_total", "method")
	cloudB4, cloudAfter := SumBy(before, mock.RequestsMetric, "method"), SumBy(after, mock.RequestsMetric, "method")
	for method, v := range SumBy(after, "rest_client_requests_total", "method") {
		if d := v - b4[method] - (cloudAfter[method] - cloudB4[method]); d > 0 {
			o.RequestsByMethod[method] = d / float64(n)
		}
	}
	if m, err := ReadMem(pid); err == nil {
		o.PeakRSSMiB = MiB(m.Peak)
	}
	e.logf("  %d succeeded, %d failed in %.1f s; %.0f reconciles (%.1f/s); %.2f API requests per operation; peak RSS %.0f MiB",
		o.Succeeded, o.Failed, o.Seconds, o.Reconciles, o.ReconcilesPerSecond, o.RequestsPerOperation, o.PeakRSSMiB)
	if o.Failed > 0 {
		return fmt.Errorf("%d operations failed; first: %s", o.Failed, firstFailure)
	}
	if o.TimedOut {
		return fmt.Errorf("only %d of %d operations finished within %s", o.Succeeded+o.Failed, n, cfg.OperatorTimeout)
	}
	return nil
}

// failureMessage is the message of the failed step, or the operation's.
func failureMessage(op *opsv1.ClusterUpgradeOperation) string {
	for _, s := range op.Status.Steps {
		if s.Phase == opsv1.StepPhaseFailed {
			return s.ID + ": " + s.Message
		}
	}
	for _, c := range op.Status.Conditions {
		if c.Type == opsv1.ReadyCondition {
			return c.Message
		}
	}
	return string(op.Status.Phase)
}
