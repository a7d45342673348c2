package stories

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
	"github.com/tidbcloud/ops-server/operator/testenv"

	"github.com/tidbcloud/ops-server/e2e/docshell"
	"github.com/tidbcloud/ops-server/e2e/stack"
	"github.com/tidbcloud/ops-server/e2e/suite"
)

// quickstartSkipped are the ```sh blocks of docs/quickstart.md the story
// does not run, by first line: the page's markers must skip exactly these.
var quickstartSkipped = []string{
	"make dev", // the suite's stack is running already
	"bin/kubectl logs -n observability vmstorage-vmcluster-0 -f     # Ctrl-C to stop",
}

// storyQuickstart runs docs/quickstart.md: every ```sh block in order,
// each in bash (set -e, pipefail) from a scratch directory holding .dev
// (the stack's state directory: token, kubeconfig, volumes, Pod logs,
// backups) and bin (the tool binaries), with the variables a block sets
// kept for the next ones, as in the reader's second terminal. The page's
// markers say which blocks are only shown, which output a block must
// print and which blocks are repeated until their output appears (the
// waits the page describes). Two things differ from a reader's machine:
// the suite's stack listens on free ports, so the page's
// http://127.0.0.1:8080 and :8427 are replaced by the stack's addresses
// and $PWD/.dev by its state directory (ops-apiserver accepts fs://
// backups only under its real path, not through the scratch directory's
// .dev link), and curl fails on an HTTP error (--fail-with-body) so that a request
// the page gets wrong fails its block. Earlier stories changed dev-cluster
// and may have left a vmcluster named vmcluster: the story first puts
// both back as `make dev` starts them.
func storyQuickstart(t *testing.T) {
	g := NewWithT(t)
	root := repoRoot(t)
	page, err := os.ReadFile(filepath.Join(root, "docs", "quickstart.md"))
	g.Expect(err).NotTo(HaveOccurred())
	blocks, err := docshell.Parse(string(page))
	g.Expect(err).NotTo(HaveOccurred(), "docs/quickstart.md's test markers")
	var skipped []string
	run := 0
	for _, b := range blocks {
		if b.Mode == docshell.ModeSkip {
			skipped = append(skipped, b.FirstLine())
		} else {
			run++
		}
	}
	g.Expect(skipped).To(Equal(quickstartSkipped), "blocks marked skip")
	g.Expect(run).To(BeNumerically(">=", 25), "the page's steps")

	resetForQuickstart(t)

	dir := quickstartDir(t)
	env := quickstartEnv(t, dir)
	envFile := filepath.Join(dir, ".quickstart-env")
	g.Expect(os.WriteFile(envFile, nil, 0o600)).To(Succeed())
	for i, b := range blocks {
		if b.Mode == docshell.ModeSkip {
			t.Logf("block %d (line %d) not run: %s", i+1, b.Line, b.Reason)
			continue
		}
		script := strings.NewReplacer(
			"http://127.0.0.1:8080", st.APIURL,
			"http://127.0.0.1:8427", st.ServicesURL(),
			"$PWD/.dev", filepath.Dir(st.Kubeconfig),
		).Replace(b.Script)
		runQuickstartBlock(t, i+1, b, script, dir, env, envFile)
	}
}

// runQuickstartBlock runs one block and judges it by its marker.
func runQuickstartBlock(t *testing.T, n int, b docshell.Block, script, dir string, env []string, envFile string) {
	t.Helper()
	name := fmt.Sprintf("block %d (docs/quickstart.md:%d, %q)", n, b.Line, b.FirstLine())
	once := func() (string, string, error) {
		// set -a: every variable a block sets is exported, and written to
		// envFile for the next block (a reader's shell keeps them too).
		wrapped := "set -eo pipefail\nsource " + envFile + "\nset -a\n" + script +
			"\nset +a\nexport -p | grep -v -E '^declare -x (PWD|OLDPWD|SHLVL|_)=' > " + envFile + ".next\nmv " + envFile + ".next " + envFile + "\n"
		cmd := exec.Command("bash", "-c", wrapped)
		cmd.Dir, cmd.Env = dir, env
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	switch b.Mode {
	case docshell.ModeWait:
		var out, errOut string
		var runErr error
		NewWithT(t).Eventually(func(g Gomega) {
			out, errOut, runErr = once()
			g.Expect(runErr).NotTo(HaveOccurred(), "%s\nstdout: %s\nstderr: %s", name, out, errOut)
			g.Expect(out).To(MatchRegexp(b.Pattern.String()), name)
		}, b.Timeout, 2*time.Second).Should(Succeed())
		t.Logf("%s:\n%s", name, tail(out, 800))
	case docshell.ModeFails:
		out, errOut, err := once()
		t.Logf("%s:\n%s%s", name, tail(out, 800), tail(errOut, 800))
		NewWithT(t).Expect(err).To(HaveOccurred(), "%s should fail", name)
		NewWithT(t).Expect(out+errOut).To(MatchRegexp(b.Pattern.String()), name)
	default:
		out, errOut, err := once()
		t.Logf("%s:\n%s", name, tail(out, 800))
		NewWithT(t).Expect(err).NotTo(HaveOccurred(), "%s\nstdout: %s\nstderr: %s", name, out, errOut)
		if b.Mode == docshell.ModeExpect {
			NewWithT(t).Expect(out).To(MatchRegexp(b.Pattern.String()), name)
		}
	}
}

// quickstartDir is the reader's clone as the page sees it: .dev is the
// stack's state directory and bin the tool binaries.
func quickstartDir(t *testing.T) string {
	t.Helper()
	g := NewWithT(t)
	dir := t.TempDir()
	bin, err := testenv.BinDir()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.Symlink(filepath.Dir(st.Kubeconfig), filepath.Join(dir, ".dev"))).To(Succeed())
	g.Expect(os.Symlink(bin, filepath.Join(dir, "bin"))).To(Succeed())
	return dir
}

// quickstartEnv is the test's environment without what the page sets
// itself (TOKEN, KUBECONFIG, …), with a curl that fails on HTTP errors
// first on PATH.
func quickstartEnv(t *testing.T, dir string) []string {
	t.Helper()
	g := NewWithT(t)
	curl, err := exec.LookPath("curl")
	g.Expect(err).NotTo(HaveOccurred(), "the quickstart uses curl")
	shims := filepath.Join(dir, ".shims")
	g.Expect(os.Mkdir(shims, 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(shims, "curl"), []byte("#!/bin/sh\nexec "+curl+" --fail-with-body \"$@\"\n"), 0o755)).To(Succeed())
	var env []string
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "TOKEN", "KUBECONFIG", "API", "ID", "BACKUP", "T":
		case "PATH":
			env = append(env, "PATH="+shims+":"+v)
		default:
			env = append(env, kv)
		}
	}
	return env
}

// resetForQuickstart puts dev-cluster and the namespace back as `make dev`
// starts them: no vmcluster named vmcluster, no upgrade operation of
// dev-cluster, no backup schedule named every-minute, the simulated cluster at its seed state with only its seed
// node groups' Nodes. On a fresh stack it changes nothing.
func resetForQuickstart(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	ops := &opsv1.ClusterUpgradeOperationList{}
	g.Expect(st.Env.Client.List(ctx, ops, client.InNamespace(obs))).To(Succeed())
	for i := range ops.Items {
		op := &ops.Items[i]
		if op.Spec.K8sClusterName != stack.DevCluster.Name {
			continue
		}
		g.Expect(client.IgnoreNotFound(st.Env.Client.Delete(ctx, op))).To(Succeed())
		g.Eventually(func() bool {
			return apierrors.IsNotFound(st.Env.Client.Get(ctx, client.ObjectKeyFromObject(op), &opsv1.ClusterUpgradeOperation{}))
		}, 2*time.Minute, time.Second).Should(BeTrue(), "upgrade operation %s deleted", op.Name)
	}
	if code, _ := suite.Call(t, http.MethodGet, suite.VMClusters+"/vmcluster", nil); code == http.StatusOK {
		code, body := suite.Call(t, http.MethodDelete, suite.VMClusters+"/vmcluster", nil)
		g.Expect(code).To(BeNumerically("<", 300), "%v", body)
		g.Eventually(func() int {
			code, _ := suite.Call(t, http.MethodGet, suite.VMClusters+"/vmcluster", nil)
			return code
		}, 3*time.Minute, time.Second).Should(Equal(http.StatusNotFound))
	}
	// The page's schedule is named every-minute, like story 19's (a
	// ClusterBackupSchedule is named after the schedule).
	sched := &opsv1.ClusterBackupSchedule{}
	sched.Namespace, sched.Name = obs, "every-minute"
	g.Expect(client.IgnoreNotFound(st.Env.Client.Delete(ctx, sched))).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(st.Env.Client.Get(ctx, client.ObjectKeyFromObject(sched), &opsv1.ClusterBackupSchedule{}))
	}, 2*time.Minute, time.Second).Should(BeTrue(), "backup schedule every-minute deleted")
	seed := stack.DevClusterState()
	nodes := &corev1.NodeList{}
	g.Expect(st.Env.Client.List(ctx, nodes, client.MatchingLabels{mock.ClusterLabel: stack.DevCluster.Name})).To(Succeed())
	for i := range nodes.Items {
		if _, ok := seed.NodeGroups[nodes.Items[i].Labels[mock.NodeGroupLabel]]; !ok {
			g.Expect(client.IgnoreNotFound(st.Env.Client.Delete(ctx, &nodes.Items[i]))).To(Succeed())
		}
	}
	g.Expect((&mock.Provider{Client: st.Env.Client}).Seed(ctx, stack.DevCluster, seed)).To(Succeed())
	// Seed makes missing Nodes; uncordon the ones an earlier drain left.
	g.Expect(st.Env.Client.List(ctx, nodes, client.MatchingLabels{mock.ClusterLabel: stack.DevCluster.Name})).To(Succeed())
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.Spec.Unschedulable {
			patch := client.MergeFrom(n.DeepCopy())
			n.Spec.Unschedulable = false
			g.Expect(st.Env.Client.Patch(ctx, n, patch)).To(Succeed())
		}
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
