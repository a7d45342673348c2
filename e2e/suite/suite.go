// Package suite is what the e2e suites that start their own stack and
// drive it through the REST API (e2e/stories, e2e/ha) share: their
// TestMain (Run), kubectl on the stack, the REST request checked against
// the OpenAPI document (Call, CallAt, Client), the waits for a vmcluster's
// status and an upgrade's phase, and a JSON field by dotted path. A test
// package has one stack (CONTRIBUTING.md, Tests): Run keeps it for these
// helpers, so they are called from the package's tests only.
package suite

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

	"github.com/tidbcloud/ops-server/apiserver/pkg/apicontract"
	"github.com/tidbcloud/ops-server/e2e/stack"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

// The REST collections the suites wait on.
const (
	VMClusters = "/api/v1/observability-ops/vmclusters"
	Upgrades   = "/ops/api/v1/upgradeOperations"
)

// requestTimeout bounds one REST request.
const requestTimeout = 30 * time.Second

// running is the suite's stack, as Run hands it to the package's tests.
var running **stack.Stack

// Run is the TestMain of a suite: stack.RunSuite (build the binaries,
// start the stack with the Options changed by configure, keep it in *st,
// run the tests, call onFailure when they fail, stop the stack), with the
// stack kept for this package's helpers too. It returns the exit code for
// os.Exit.
func Run(m testenv.M, prefix string, st **stack.Stack, onFailure func(), configure ...func(*stack.Options)) int {
	running = st
	return stack.RunSuite(m, prefix, st, onFailure, configure...)
}

func current() *stack.Stack {
	if running == nil || *running == nil {
		panic("suite: no stack; the package's TestMain calls suite.Run")
	}
	return *running
}

// Kubectl runs kubectl on the stack and returns its combined output.
func Kubectl(args ...string) (string, error) {
	return kubectl("", args...)
}

// KubectlApply applies a manifest given on standard input.
func KubectlApply(manifest string) (string, error) {
	return kubectl(manifest, "apply", "-f", "-")
}

func kubectl(stdin string, args ...string) (string, error) {
	bin, err := testenv.Binary("kubectl")
	if err != nil {
		return "", err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+current().Kubeconfig)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// PrintKubectl writes to standard error what kubectl prints for each
// argument list, under a "----- kubectl <args>" line: the objects a
// suite's onFailure shows first.
func PrintKubectl(argLists ...[]string) {
	for _, args := range argLists {
		out, _ := Kubectl(args...)
		fmt.Fprintf(os.Stderr, "----- kubectl %s\n%s\n", strings.Join(args, " "), out)
	}
}

// Client is the client of every REST request to ops-apiserver: it checks
// each request and response against the OpenAPI document, and a response
// that does not match fails t (apiserver/pkg/apicontract).
func Client(t testing.TB) *http.Client {
	t.Helper()
	c, err := apicontract.New()
	if err != nil {
		t.Fatalf("loading the OpenAPI contract: %v", err)
	}
	return c.Client(t, nil)
}

// Call sends one REST request to ops-apiserver: replica 0, or the first
// replica running when it was killed (the HA suite).
func Call(t testing.TB, method, path string, body any) (int, map[string]any) {
	t.Helper()
	return CallAt(t, apiURL(), method, path, body)
}

// CallAt sends one REST request to the ops-apiserver at base, with the
// stack's token and extra headers (name, value pairs), through Client, and
// decodes the JSON answer. It fails t when the request cannot be sent or
// the answer is not JSON.
func CallAt(t testing.TB, base, method, path string, body any, headers ...string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token := current().Token; token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := Client(t).Do(req)
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

// apiURL is replica 0's URL, or the first running replica's.
func apiURL() string {
	s := current()
	for i, p := range s.APIServers {
		if p != nil && i < len(s.APIURLs) {
			return s.APIURLs[i]
		}
	}
	return s.APIURL
}

// Field reads a nested field of a JSON object by dotted path (nil when a
// step is missing or not an object).
func Field(m map[string]any, path string) any {
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

// WaitVMCluster waits until GET vmcluster name answers 200 with status,
// polling every second, and returns the last answer.
func WaitVMCluster(t testing.TB, name, status string, timeout time.Duration) map[string]any {
	t.Helper()
	return waitFor(t, VMClusters+"/"+name, "status", status, timeout, time.Second,
		func(body map[string]any) []any { return []any{"%v", body} })
}

// WaitUpgrade waits until GET upgrade operation id answers 200 in phase,
// polling every 500ms, and returns the last answer.
func WaitUpgrade(t testing.TB, id, phase string, timeout time.Duration) map[string]any {
	t.Helper()
	return waitFor(t, Upgrades+"/"+id, "phase", phase, timeout, 500*time.Millisecond,
		func(body map[string]any) []any {
			return []any{"currentStep=%v message=%v", body["currentStep"], body["message"]}
		})
}

// waitFor polls GET path every poll until it answers 200 with want in
// field key, and returns the last answer; describe is what a failure says
// of an answer with another value.
func waitFor(t testing.TB, path, key, want string, timeout, poll time.Duration, describe func(map[string]any) []any) map[string]any {
	t.Helper()
	var last map[string]any
	NewWithT(t).Eventually(func(g Gomega) {
		code, body := Call(t, http.MethodGet, path, nil)
		last = body
		g.Expect(code).To(Equal(http.StatusOK), "%v", body)
		g.Expect(body[key]).To(Equal(want), describe(body)...)
	}, timeout, poll).Should(Succeed())
	return last
}
