// Package ha is the e2e suite of the local stack in HA mode (Options.Replicas
// 2, as `OPS_REPLICAS=2 make dev` runs it): two ops-apiservers, two Flux
// pairs and two ops-operators, the controllers leader-elected. Its tests
// SIGKILL one process of a pair — the leader, for the controllers — in
// the middle of an operation and check that the other carries on: the
// operation completes, no cloud call is repeated, and the time a standby
// took to take the Lease over is logged (t.Logf; see docs/ha-local.md).
package ha

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/e2e/stack"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

var st *stack.Stack

func TestMain(m *testing.M) {
	os.Exit(stack.RunSuite(m, "ops-ha-", &st, dump, func(o *stack.Options) {
		o.Replicas = 2
		// Simulated cloud operations long enough for a step to outlast a
		// failover and the restart of the killed replica.
		o.OperatorArgs = []string{"--mock-operation-duration=8s"}
	}))
}

func dump() {
	for _, args := range [][]string{
		{"get", "leases", "-n", stack.Namespace, "-o", "wide"},
		{"get", "clusterupgradeoperations,clusterbackups,helmreleases,helmcharts,helmrepositories,vmclusters", "-A", "-o", "wide"},
		{"get", "helmreleases,helmcharts", "-A", "-o", "yaml"},
		{"get", "pods", "-A", "-o", "wide"},
		{"get", "clusterupgradeoperations", "-A", "-o", "yaml"},
		{"get", "clusterbackups", "-A", "-o", "yaml"},
	} {
		out, _ := kubectl(args...)
		fmt.Fprintf(os.Stderr, "----- kubectl %s\n%s\n", strings.Join(args, " "), out)
	}
	b, _ := json.MarshalIndent(st.ProcessList(), "", "  ")
	fmt.Fprintf(os.Stderr, "----- %s\n%s\n", stack.ProcessesFile, b)
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

const (
	vmclusters = "/api/v1/observability-ops/vmclusters"
	upgrades   = "/ops/api/v1/upgradeOperations"
)

// callAt sends one REST request to the ops-apiserver at base, with extra
// headers (name, value pairs); an error when it cannot be sent.
func callAt(base, method, path string, body any, headers ...string) (int, map[string]any, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if st.Token != "" {
		req.Header.Set("Authorization", "Bearer "+st.Token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := map[string]any{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			return resp.StatusCode, nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
		}
	}
	return resp.StatusCode, out, nil
}

// call sends one REST request to ops-apiserver replica 0 (or the first
// replica running) and fails the test when it cannot be sent.
func call(t *testing.T, method, path string, body any) (int, map[string]any) {
	t.Helper()
	base := st.APIURLs[0]
	if st.APIServers[0] == nil {
		base = st.APIURLs[1]
	}
	code, out, err := callAt(base, method, path, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return code, out
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

func waitVMCluster(t *testing.T, name, status string, timeout time.Duration) map[string]any {
	t.Helper()
	var last map[string]any
	NewWithT(t).Eventually(func(g Gomega) {
		code, body := call(t, http.MethodGet, vmclusters+"/"+name, nil)
		last = body
		g.Expect(code).To(Equal(http.StatusOK), "%v", body)
		g.Expect(body["status"]).To(Equal(status), "%v", body)
	}, timeout, time.Second).Should(Succeed())
	return last
}

func waitUpgrade(t *testing.T, id, phase string, timeout time.Duration) map[string]any {
	t.Helper()
	var last map[string]any
	NewWithT(t).Eventually(func(g Gomega) {
		code, body := call(t, http.MethodGet, upgrades+"/"+id, nil)
		last = body
		g.Expect(code).To(Equal(http.StatusOK))
		g.Expect(body["phase"]).To(Equal(phase), "currentStep=%v message=%v", body["currentStep"], body["message"])
	}, timeout, 500*time.Millisecond).Should(Succeed())
	return last
}
