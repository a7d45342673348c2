// Package stories is the e2e suite: it starts the same local stack as
// `make dev` (control plane, kcm, scheduler, kwok, Flux, the simulated
// cloud, ops-operator and ops-apiserver, then the VictoriaMetrics operator
// bootstrapped by an ObservabilityStack) and runs the user stories only through the REST API and
// kubectl.
package stories

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/apiserver/pkg/apicontract"
	"github.com/tidbcloud/ops-server/e2e/stack"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

var st *stack.Stack

func TestMain(m *testing.M) {
	// The suite runs the binaries a user runs: RunSuite builds them fresh
	// into bin/.
	os.Exit(stack.RunSuite(m, "ops-e2e-", &st, dump))
}

// dump prints what a failure needs to be explained: the ops objects,
// VMClusters, workloads, nodes, Events and the component logs.
func dump() {
	for _, args := range [][]string{
		{"get", "clusterupgradeoperations,clusterbackups,helmreleases,helmrepositories,vmclusters,observabilitystacks,vmagents", "-A", "-o", "wide"},
		{"get", "statefulsets,deployments,pods", "-A", "-o", "wide"},
		{"get", "nodes", "-L", stack.NodeGroupLabel},
		{"get", "events", "-A", "--sort-by=.lastTimestamp"},
		{"get", "clusterupgradeoperations", "-A", "-o", "yaml"},
		{"get", "clusterbackups", "-A", "-o", "yaml"},
	} {
		out, _ := kubectl(args...)
		fmt.Fprintf(os.Stderr, "----- kubectl %s\n%s\n", strings.Join(args, " "), out)
	}
	st.WriteLogs(os.Stderr, 6000)
}

func kubectl(args ...string) (string, error) {
	bin, err := testenv.Binary("kubectl")
	if err != nil {
		return "", err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+st.Kubeconfig)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// kubectlApply applies a manifest given on standard input.
func kubectlApply(manifest string) (string, error) {
	bin, err := testenv.Binary("kubectl")
	if err != nil {
		return "", err
	}
	cmd := exec.Command(bin, "apply", "-f", "-")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+st.Kubeconfig)
	cmd.Stdin = strings.NewReader(manifest)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// apiClient is the client of every REST request to ops-apiserver: it
// checks each request and response against the OpenAPI document, and a
// response that does not match fails t (apiserver/pkg/apicontract).
func apiClient(t *testing.T) *http.Client {
	t.Helper()
	c, err := apicontract.New()
	if err != nil {
		t.Fatalf("loading the OpenAPI contract: %v", err)
	}
	return c.Client(t, nil)
}

// call sends one REST request to ops-apiserver.
func call(t *testing.T, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, st.APIURL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if st.Token != "" {
		req.Header.Set("Authorization", "Bearer "+st.Token)
	}
	resp, err := apiClient(t).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := map[string]any{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
		}
	}
	return resp.StatusCode, out
}

// field reads a nested field of a JSON object by dotted path.
func field(m map[string]any, path string) any {
	var cur any = m
	for _, k := range strings.Split(path, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

func repoRoot(t *testing.T) string {
	root, err := testenv.RepoRoot()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return root
}
