// Command ops-dev runs the local ops-server stack on 127.0.0.1 in the
// foreground (see package stack), writes an admin kubeconfig to
// <state-dir>/kubeconfig, and stops everything it started on Ctrl-C.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tidbcloud/ops-server/e2e/stack"
)

func main() {
	stateDir := flag.String("state-dir", ".dev", "directory for the local stack's state (etcd data), kubeconfig and logs")
	addr := flag.String("listen-address", stack.APIAddress, "address of the REST API")
	services := flag.String("services-address", stack.ServicesAddress, "address where the Services of the vmclusters are published (/<namespace>/<service>/...)")
	charts := flag.String("chart-repository-address", stack.ChartRepositoryAddress, "address where ops-apiserver serves the baked-in chart to the source-controller (kept in every vmcluster's HelmRepository: keep it between runs)")
	restart := flag.Bool("restart-on-rebuild", false, "restart ops-apiserver or ops-operator when its binary in bin/ is rebuilt (the Tiltfile's local mode)")
	replicas := flag.Int("replicas", envReplicas(), "2: HA mode, two ops-apiservers (the second on the next free port), two Flux pairs and two ops-operators, leader-elected (default $OPS_REPLICAS, else 1; docs/ha-local.md)")
	flag.Parse()
	if *replicas < 1 || *replicas > 2 {
		fmt.Fprintln(os.Stderr, "ops-dev: --replicas (OPS_REPLICAS) must be 1 or 2")
		os.Exit(2)
	}
	if err := run(*stateDir, *addr, *services, *charts, *restart, *replicas); err != nil {
		fmt.Fprintln(os.Stderr, "ops-dev:", err)
		os.Exit(1)
	}
}

// envReplicas is $OPS_REPLICAS (`OPS_REPLICAS=2 make dev`), 1 when unset
// or not a number.
func envReplicas() int {
	if n, err := strconv.Atoi(os.Getenv("OPS_REPLICAS")); err == nil {
		return n
	}
	return 1
}

func run(stateDir, addr, services, charts string, restart bool, replicas int) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	s, err := stack.Start(ctx, stack.Options{StateDir: stateDir, Out: os.Stdout, WithOperator: true, APIAddress: addr, ServicesAddress: services, ChartRepositoryAddress: charts, Replicas: replicas,
		// The whole default stack: the VictoriaMetrics operator, a vmcluster
		// and a vmagent scraping it, installed in that order.
		Components: stack.DefaultComponents()})
	if err != nil {
		return err
	}
	defer s.Stop()
	api := s.APIURL
	tokenPath := filepath.Join(stateDir, stack.TokenFile)
	fmt.Printf(`
Local stack ready in %s.

  REST API:        %s   (readiness: %s/readyz, OpenAPI: %s/openapi.yaml)
  API reference:   %s/docs   (open it in a browser; no token needed)
  API token:       %s   (ServiceAccount observability/%s, every API permission;
                   send it as "Authorization: Bearer <token>", see docs/auth.md)
  kubeconfig:      %s
  logs:            %s/logs/   (each backed Pod's: %s/pods/<namespace>/<pod>/<container>.log)
  Services:        %s/<namespace>/<service>/   (vmclusters' endpoints, e.g. vminsert-vmcluster, vmselect-vmcluster)
  volumes:         %s   (default StorageClass %s: one directory per PersistentVolumeClaim)
  simulated cloud: cluster %s in region %s (cloudProvider mock), Kubernetes 1.29,
                   node groups observability-ng and vmstorage as kwok Nodes
  bootstrap:       ObservabilityStack %s/%s: vm-operator (Ready), then vmcluster %s and
                   a vmagent scraping it, coming up now (docs/bootstrap.md)

Try:
  export TOKEN=$(cat %s)
  curl -s -H "Authorization: Bearer $TOKEN" %s/ops/api/v1/nodeGroups?k8sClusterName=dev-cluster\&region=local\&cloudProvider=mock
  curl -s -H "Authorization: Bearer $TOKEN" -X POST %s/api/v1/observability-ops/vmclusters -H 'Content-Type: application/json' \
       -d '{"name":"vmcluster","values":{"vmstorage":{"replicaCount":3,"nodeSelector":{"node-role.observability/vmstorage":"true"}}}}'
  curl -s -H "Authorization: Bearer $TOKEN" %s/api/v1/observability-ops/vmclusters/vmcluster

  curl -s -H "Authorization: Bearer $TOKEN" %s/api/v1/observability-ops/bootstrap
  curl -s '%s/%s/vmselect-%s/select/0/prometheus/api/v1/query?query=up'   (vmagent's scrapes)

  export KUBECONFIG=%s
  bin/kubectl get obstack,helmreleases,vmclusters,vmagents,statefulsets,pods -n observability -o wide

docs/quickstart.md goes on from here (a blue-green upgrade of dev-cluster).
Press Ctrl-C to stop everything; state stays in %s until make dev-clean.
`, time.Since(start).Round(100*time.Millisecond), api, api, api, api, tokenPath, stack.DevServiceAccount, s.Kubeconfig, stateDir, stateDir, s.ServicesURL(), s.VMStorageRoot(), stack.StorageClassName,
		stack.DevCluster.Name, stack.DevCluster.Region, stack.Namespace, stack.StackName, stack.DevVMCluster,
		tokenPath, api, api, api, api, s.ServicesURL(), stack.Namespace, stack.DevVMCluster, s.Kubeconfig, stateDir)
	if s.HA() {
		src, helm := stack.FluxLeases()
		fmt.Printf(`HA mode: %d replicas of each.
  REST API replicas: %s
  processes:         %s   (name, pid, ports, leader election identity)
  leaders:           bin/kubectl get leases -n %s   (holder "<identity>_<uuid>": %s, %s, %s)
  failover:          kill -9 <pid of a leader>; a standby takes its Lease within about %s (docs/ha-local.md)
`, s.Replicas(), strings.Join(s.APIURLs, "  "), filepath.Join(stateDir, stack.ProcessesFile), stack.Namespace, stack.OperatorLease, src, helm, stack.LeaseDuration+stack.RetryPeriod)
	}
	if restart {
		if err := restartOnRebuild(ctx, s, addr); err != nil {
			return err
		}
	}
	<-ctx.Done()
	fmt.Println("\nStopping ...")
	return nil
}
