package deploy

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
)

// TestBinariesRunWithChartArguments builds ops-apiserver and ops-operator
// from this checkout and runs them with exactly the arguments (and, for the
// apiserver, the configuration file) the chart renders with the dev values,
// authenticated with tokens of the chart's ServiceAccounts, against the
// chart's RBAC applied for real. Both must become ready; the operator must
// win its leader election and carry a ClusterUpgradeOperation on the
// simulated cloud to Succeeded. This is what catches a flag the chart passes
// and a binary no longer has, and a permission its real code paths need.
func TestBinariesRunWithChartArguments(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	dir := t.TempDir()

	build := exec.Command("go", "build", "-o", dir+"/", "./apiserver/cmd/ops-apiserver", "./operator/cmd/ops-operator")
	build.Dir = root
	out, err := build.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "go build: %s", out)

	in := install(t, nil, exampleValues(t)["values-dev.yaml"])
	ns := in.ns
	ref := cloud.ClusterRef{Provider: cloud.Mock, Name: ns, Region: "local"}
	seed := &mock.Provider{Client: env.Client, Namespace: mockNamespace}
	g.Expect(seed.Seed(ctx, ref, mock.ClusterState{Version: "1.29"})).To(Succeed())

	// ops-apiserver: the rendered configuration file and arguments; only
	// what the Pod provides differently is replaced (the downward-API
	// namespace, the listen address on 127.0.0.1, the chart directory of
	// the image, a free port for the local chart repository).
	server := toDeployment(t, find(t, in.res.Objects, "Deployment", in.fullname)).Spec.Template.Spec
	apiserver := container(t, server, "ops-apiserver")
	cm := find(t, in.res.Objects, "ConfigMap", in.fullname+"-apiserver")
	cfgPath := filepath.Join(dir, "apiserver.yaml")
	g.Expect(os.WriteFile(cfgPath, []byte(nestedString(cm, "data", "apiserver.yaml")), 0o600)).To(Succeed())
	apiAddr, repoAddr := freeAddr(t), freeAddr(t)
	var apiArgs []string
	for _, a := range apiserver.Args {
		switch {
		case strings.HasPrefix(a, "--config="):
			a = "--config=" + cfgPath
		case strings.HasPrefix(a, "--listen-address="):
			a = "--listen-address=" + apiAddr
		}
		apiArgs = append(apiArgs, strings.ReplaceAll(a, "$(VMCLUSTER_NAMESPACE)", ns))
	}
	apiArgs = append(apiArgs,
		"--chart-dir="+filepath.Join(root, "deploy", "charts"),
		"--local-repository-listen-address="+repoAddr,
		"--local-repository-url=http://"+repoAddr,
	)
	api := startBinary(t, dir, "ops-apiserver", apiArgs, serviceAccountKubeconfig(t, dir, ns, in.serverSA()))
	g.Expect(api.waitOK(ctx, "http://"+apiAddr+"/readyz")).To(Succeed(), api.log)

	// ops-operator: the rendered arguments, addresses on 127.0.0.1, the
	// Pod's namespace.
	operator := toDeployment(t, find(t, in.res.Objects, "Deployment", in.fullname+"-operator")).Spec.Template.Spec
	var opArgs []string
	health := freeAddr(t)
	for _, a := range operator.Containers[0].Args {
		switch {
		case strings.HasPrefix(a, "--metrics-bind-address="):
			a = "--metrics-bind-address=" + freeAddr(t)
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			a = "--health-probe-bind-address=" + health
		}
		opArgs = append(opArgs, strings.ReplaceAll(a, "$(POD_NAMESPACE)", ns))
	}
	op := startBinary(t, dir, "ops-operator", opArgs, serviceAccountKubeconfig(t, dir, ns, in.operatorSA()))
	g.Expect(op.waitOK(ctx, "http://"+health+"/readyz")).To(Succeed(), op.log)

	lease := &coordinationv1.Lease{}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ops-operator.ops.observability.tidbcloud.com"}, lease)).To(Succeed())
		g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
	}, timeout, 250*time.Millisecond).Should(Succeed(), op.log)

	cuo := &opsv1.ClusterUpgradeOperation{
		ObjectMeta: metav1.ObjectMeta{Name: "control-plane", Namespace: ns},
		Spec:       opsv1.ClusterUpgradeOperationSpec{K8sClusterName: ns, Region: "local", CloudProvider: "mock", TargetVersion: "1.30"},
	}
	g.Expect(env.Client.Create(ctx, cuo)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cuo), cuo)).To(Succeed())
		g.Expect(cuo.Status.Phase).To(Equal(opsv1.UpgradePhaseSucceeded), "status: %+v", cuo.Status)
	}, timeout, 250*time.Millisecond).Should(Succeed(), op.log)
	st, err := seed.State(ctx, ref)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Version).To(Equal("1.30"))

	// No RBAC refusal. (Other tests of the package create and delete
	// namespaces with ClusterBackups in them meanwhile; an Event refused
	// because its namespace is being terminated is not one.)
	for _, p := range []*binary{api, op} {
		for _, line := range strings.Split(strings.ToLower(p.log()), "\n") {
			if strings.Contains(line, "forbidden") && !strings.Contains(line, "because it is being terminated") {
				t.Errorf("%s", line)
			}
		}
	}
}

// binary is a process started by startBinary.
type binary struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
}

// startBinary runs dir/name with args and KUBECONFIG, logging to a file,
// and stops it when the test ends.
func startBinary(t *testing.T, dir, name string, args []string, kubeconfig string) *binary {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(dir, name), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		_ = logFile.Close()
	})
	return &binary{cmd: cmd, logPath: logPath, done: done}
}

// log is the tail of the process's log.
func (b *binary) log() string {
	raw, _ := os.ReadFile(b.logPath)
	if len(raw) > 12000 {
		raw = raw[len(raw)-12000:]
	}
	return fmt.Sprintf("--- %s ---\n%s", filepath.Base(b.cmd.Path), raw)
}

// waitOK waits until url answers 200, or the process exits.
func (b *binary) waitOK(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-b.done:
			return fmt.Errorf("%s exited", b.cmd.Path)
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w", url, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
