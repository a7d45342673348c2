package stack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"

	"github.com/tidbcloud/ops-server/operator/testenv"
)

// startKubeControllers starts kube-controller-manager, kube-scheduler and
// kwok against the environment, so that Deployments, StatefulSets and Jobs
// really get scheduled Pods that become Ready on kwok's simulated Nodes.
func (s *Stack) startKubeControllers(ctx context.Context) error {
	kc := s.Env.KubeconfigPath
	certDir := s.Env.CertDir()
	kcmPort, err := testenv.FreePort()
	if err != nil {
		return err
	}
	kcm, err := testenv.StartProcess("kube-controller-manager", s.logDir, []string{
		"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", kcmPort),
		// No cloud, no pod CIDRs; service-account tokens are not needed
		// (the test API server runs without the ServiceAccount admission).
		"--controllers=*,-nodeipam,-serviceaccount-token",
		"--service-account-private-key-file=" + filepath.Join(certDir, "sa-signer.key"),
		"--use-service-account-credentials=false",
		"--concurrent-deployment-syncs=5", "--concurrent-statefulset-syncs=5",
	}, nil)
	if err != nil {
		return err
	}
	s.procs = append(s.procs, kcm)
	schedPort, err := testenv.FreePort()
	if err != nil {
		return err
	}
	sched, err := testenv.StartProcess("kube-scheduler", s.logDir, []string{
		"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", schedPort),
	}, nil)
	if err != nil {
		return err
	}
	s.procs = append(s.procs, sched)

	kwok, err := s.startKwok()
	if err != nil {
		return err
	}
	s.procs = append(s.procs, kwok)
	// Give the three a moment, and fail early if one exits at once.
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(2 * time.Second):
	}
	for _, p := range []*testenv.Process{kcm, sched, kwok} {
		if p.Exited() {
			return fmt.Errorf("%s exited at start; log tail:\n%s", p.Name, p.Log(3000))
		}
	}
	return s.startPodIO()
}

// startKwok starts kwok, its kubelet server on a new free port (which the
// kwok Nodes then publish, see podio.go).
func (s *Stack) startKwok() (*testenv.Process, error) {
	kwokPort, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	stages := filepath.Join(s.logDir, "kwok-stages.yaml")
	docs := []string{nodefast.DefaultNodeInit, nodeheartbeat.DefaultNodeHeartbeat, podfast.DefaultPodReady, podCompleteStage(), podfast.DefaultPodDelete, kubeletEndpointStage(kwokPort)}
	if err := os.WriteFile(stages, []byte(strings.Join(docs, "\n---\n")), 0o644); err != nil {
		return nil, err
	}
	kwok, err := testenv.StartProcess("kwok", s.logDir, []string{
		"--kubeconfig=" + s.Env.KubeconfigPath,
		"--config=" + stages,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--node-ip=" + kwokNodeIP,
		"--cidr=10.244.0.0/16",
		// kwok's kubelet server, published as every kwok Node's kubelet
		// endpoint, serves kubectl logs/exec from kwok's Logs and Exec
		// resources (podio.go).
		fmt.Sprintf("--server-address=127.0.0.1:%d", kwokPort),
		fmt.Sprintf("--node-port=%d", kwokPort),
		"--enable-crds=" + kwokCRDKinds,
	}, nil)
	if err != nil {
		return nil, err
	}
	return kwok, nil
}
