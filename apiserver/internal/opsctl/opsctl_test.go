package opsctl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/tidbcloud/ops-server/apiserver/pkg/client"
)

var now = time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)

// fakeAPI is an ops-apiserver stand-in on 127.0.0.1: it answers each
// "METHOD path" with the next of its responses (the last one repeats) and
// records the requests.
type fakeAPI struct {
	mu        sync.Mutex
	responses map[string][]response
	requests  []recorded
}

type response struct {
	code int
	body string
}

type recorded struct {
	method, uri, auth, body string
	header                  http.Header
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	f.requests = append(f.requests, recorded{method: r.Method, uri: r.URL.RequestURI(), auth: r.Header.Get("Authorization"), body: string(body), header: r.Header.Clone()})
	key := r.Method + " " + r.URL.Path
	rs := f.responses[key]
	if len(rs) == 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"error":{"code":404,"status":"NOT_FOUND","message":"no route %s"}}`, key)
		return
	}
	resp := rs[0]
	if len(rs) > 1 {
		f.responses[key] = rs[1:]
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.code)
	_, _ = io.WriteString(w, resp.body)
}

func (f *fakeAPI) last() recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[len(f.requests)-1]
}

func newFake(t *testing.T, responses map[string][]response) (*fakeAPI, string) {
	t.Helper()
	f := &fakeAPI{responses: responses}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	NewWithT(t).Expect(srv.URL).To(HavePrefix("http://127.0.0.1:"))
	return f, srv.URL
}

// run runs opsctl with args against server and returns the exit code,
// stdout and stderr.
func run(t *testing.T, env map[string]string, tty bool, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(args, IO{
		Out: &out, Err: &errOut,
		Getenv:       func(k string) string { return env[k] },
		IsTerminal:   func(io.Writer) bool { return tty },
		PollInterval: time.Millisecond,
		Now:          func() time.Time { return now },
	})
	return code, out.String(), errOut.String()
}

const vmclusterList = `{"vmclusters":[
 {"id":"u1","name":"vmclusters/demo","status":"RUNNING","create_time":"2026-01-02T15:00:00Z","endpoints":{},"helm_release_info":{"deployed_version":"0.1.0"},"values":{}},
 {"id":"u2","name":"vmclusters/a-much-longer-name","status":"CREATING","create_time":"2026-01-01T15:04:05Z","endpoints":{},"helm_release_info":{},"values":{}}]}`

func TestTableOutput(t *testing.T) {
	upgrade := `{"id":"u-1","name":"upgrade-x","phase":"Running","currentStep":"controlplane/Upgrade","createTime":"2026-01-02T15:03:05Z","spec":{"k8sClusterName":"dev-cluster","targetVersion":"1.30"}}`
	_, server := newFake(t, map[string][]response{
		"GET /api/v1/observability-ops/vmclusters": {{200, vmclusterList}},
		"GET /ops/api/v1/upgradeOperations/u-1":    {{200, upgrade}},
		"GET /ops/api/v1/upgradeOperations":        {{200, `{"upgradeOperations":[]}`}},
	})
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"vmclusters list: upper-case headers, aligned, <none> for absent values, kubectl ages", []string{"vmclusters", "list"}, "" +
			"NAME                STATUS    CHART VERSION  AGE\n" +
			"demo                RUNNING   0.1.0          4m\n" +
			"a-much-longer-name  CREATING  <none>         24h\n"},
		{"upgrades get: one row", []string{"upgrades", "get", "u-1"}, "" +
			"NAME       CLUSTER      TARGET  PHASE    CURRENT STEP          AGE\n" +
			"upgrade-x  dev-cluster  1.30    Running  controlplane/Upgrade  60s\n"},
		{"an empty list", []string{"upgrades", "list"}, "No resources found.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			code, out, errOut := run(t, nil, false, append(tc.args, "--server", server)...)
			g.Expect(errOut).To(BeEmpty())
			g.Expect(code).To(Equal(0))
			g.Expect(out).To(Equal(tc.want))
		})
	}
}

func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second:                "0s",
		90 * time.Second:            "90s",
		5 * time.Minute:             "5m",
		3 * time.Hour:               "3h",
		47 * time.Hour:              "47h",
		72 * time.Hour:              "3d",
		119*time.Second + 999999999: "119s",
	} {
		NewWithT(t).Expect(humanDuration(d)).To(Equal(want), "%s", d)
	}
}

func TestJSONAndYAMLOutputAreTheAPIBody(t *testing.T) {
	body := `{"id":"u-1","name":"upgrade-x","phase":"Succeeded","steps":[{"id":"a","phase":"Succeeded"}],"unknownField":{"kept":true}}`
	_, server := newFake(t, map[string][]response{"GET /ops/api/v1/upgradeOperations/u-1": {{200, body}}})
	var want any
	NewWithT(t).Expect(json.Unmarshal([]byte(body), &want)).To(Succeed())
	for _, format := range []string{"json", "yaml"} {
		t.Run(format, func(t *testing.T) {
			g := NewWithT(t)
			code, out, errOut := run(t, nil, false, "upgrades", "get", "u-1", "--server", server, "-o", format)
			g.Expect(code).To(Equal(0), errOut)
			var got any
			if format == "json" {
				g.Expect(json.Unmarshal([]byte(out), &got)).To(Succeed())
			} else {
				g.Expect(yaml.Unmarshal([]byte(out), &got)).To(Succeed())
			}
			g.Expect(got).To(Equal(want), "fields the client's types do not know are kept too")
		})
	}
}

func TestPagesAreFollowed(t *testing.T) {
	g := NewWithT(t)
	f, server := newFake(t, map[string][]response{"GET /api/v1/observability-ops/vmclusters": {
		{200, `{"vmclusters":[{"name":"vmclusters/one","status":"RUNNING"}],"next_page_token":"p2"}`},
		{200, `{"vmclusters":[{"name":"vmclusters/two","status":"FAILED"}]}`},
	}})
	code, out, errOut := run(t, nil, false, "vmclusters", "list", "--server", server, "--status", "RUNNING", "-o", "json")
	g.Expect(code).To(Equal(0), errOut)
	var got map[string]any
	g.Expect(json.Unmarshal([]byte(out), &got)).To(Succeed())
	g.Expect(got).To(Equal(map[string]any{"vmclusters": []any{
		map[string]any{"name": "vmclusters/one", "status": "RUNNING"},
		map[string]any{"name": "vmclusters/two", "status": "FAILED"},
	}}))
	g.Expect(f.last().uri).To(ContainSubstring("page_token=p2"))
	g.Expect(f.last().uri).To(ContainSubstring("status=RUNNING"))
}

// Optional parameters not given are not sent: no page_size=0, status= or
// empty If-Match.
func TestUnsetParametersAreNotSent(t *testing.T) {
	g := NewWithT(t)
	f, server := newFake(t, map[string][]response{
		"GET /api/v1/observability-ops/vmclusters":      {{200, `{"vmclusters":[]}`}},
		"DELETE /api/v1/observability-ops/vmclusters/v": {{202, `{}`}},
		"GET /ops/api/v1/upgradeOperations":             {{200, `{"upgradeOperations":[]}`}},
	})
	for _, args := range [][]string{{"vmclusters", "list"}, {"vmclusters", "delete", "v"}, {"upgrades", "list"}} {
		code, _, errOut := run(t, nil, false, append(args, "--server", server)...)
		g.Expect(code).To(Equal(0), errOut)
		g.Expect(f.last().uri).NotTo(ContainSubstring("?"), "%v", args)
		g.Expect(f.last().header).NotTo(HaveKey("If-Match"), "%v", args)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	g.Expect(f.requests).To(HaveLen(3))
}

func TestServerAndToken(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	NewWithT(t).Expect(os.WriteFile(tokenFile, []byte("from-file\n"), 0o600)).To(Succeed())
	f, server := newFake(t, map[string][]response{"GET /version": {{200, `{"version":"v1","revision":"abc","goVersion":"go1.26"}`}}})
	config := filepath.Join(dir, "config.yaml")
	NewWithT(t).Expect(os.WriteFile(config, []byte("server: "+server+"\ntoken: from-config\n"), 0o600)).To(Succeed())
	xdg := filepath.Join(dir, "xdg")
	NewWithT(t).Expect(os.MkdirAll(filepath.Join(xdg, "opsctl"), 0o700)).To(Succeed())
	NewWithT(t).Expect(os.WriteFile(filepath.Join(xdg, "opsctl", "config.yaml"), []byte("server: "+server+"\ntokenFile: "+tokenFile+"\n"), 0o600)).To(Succeed())

	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		auth string
	}{
		{"flags", nil, []string{"--server", server, "--token", "t1"}, "Bearer t1"},
		{"token file flag", nil, []string{"--server", server, "--token-file", tokenFile}, "Bearer from-file"},
		{"environment", map[string]string{EnvServer: server, EnvToken: "t-env"}, nil, "Bearer t-env"},
		{"a flag wins over the environment", map[string]string{EnvServer: server, EnvToken: "t-env"}, []string{"--token", "t-flag"}, "Bearer t-flag"},
		{"config file from --config", nil, []string{"--config", config}, "Bearer from-config"},
		{"config file from OPSCTL_CONFIG, env token wins", map[string]string{EnvConfig: config, EnvTokenFile: tokenFile}, nil, "Bearer from-file"},
		{"the default config file under XDG_CONFIG_HOME", map[string]string{"XDG_CONFIG_HOME": xdg}, nil, "Bearer from-file"},
		{"no token", nil, []string{"--server", server}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			code, out, errOut := run(t, tc.env, false, append([]string{"version"}, tc.args...)...)
			g.Expect(code).To(Equal(0), errOut)
			g.Expect(out).To(ContainSubstring("SERVER VERSION  REVISION  GO\nv1              abc       go1.26\n"))
			g.Expect(f.last().auth).To(Equal(tc.auth))
		})
	}
}

func TestErrors(t *testing.T) {
	_, server := newFake(t, map[string][]response{
		"POST /ops/api/v1/upgradeOperations": {{400, `{"error":{"code":400,"status":"INVALID_ARGUMENT","message":"targetVersion is required"}}`}},
	})
	body := filepath.Join(t.TempDir(), "req.yaml")
	NewWithT(t).Expect(os.WriteFile(body, []byte("k8sClusterName: c\n"), 0o600)).To(Succeed())
	for _, tc := range []struct {
		name    string
		env     map[string]string
		args    []string
		code    int
		message string
	}{
		{"an API error: its status and message", nil, []string{"upgrades", "create", "-f", body, "--server", server}, 1, "Error: INVALID_ARGUMENT (HTTP 400): targetVersion is required"},
		{"not found", nil, []string{"vmclusters", "get", "nope", "--server", server}, 1, "NOT_FOUND (HTTP 404)"},
		{"no server", nil, []string{"vmclusters", "list"}, 2, "no server"},
		{"unknown output format", nil, []string{"vmclusters", "list", "--server", server, "-o", "xml"}, 2, `unknown output format "xml"`},
		{"unknown flag", nil, []string{"vmclusters", "list", "--nope"}, 2, "unknown flag: --nope"},
		{"no -f", nil, []string{"upgrades", "create", "--server", server}, 2, "-f is required"},
		{"missing --vmcluster", nil, []string{"backups", "list", "--server", server}, 2, "--vmcluster is required"},
		{"a missing token file", nil, []string{"vmclusters", "list", "--server", server, "--token-file", "/nonexistent/token"}, 1, "reading the token file"},
		{"a broken config file", map[string]string{EnvConfig: body}, []string{"vmclusters", "list"}, 1, "config file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			code, _, errOut := run(t, tc.env, false, tc.args...)
			g.Expect(code).To(Equal(tc.code), errOut)
			g.Expect(errOut).To(ContainSubstring(tc.message))
		})
	}
}

func TestCreateSendsTheFileAsJSON(t *testing.T) {
	g := NewWithT(t)
	f, server := newFake(t, map[string][]response{
		"POST /ops/api/v1/upgradeOperations": {{202, `{"id":"u-9","name":"upgrade-9","phase":"Pending"}`}},
	})
	path := filepath.Join(t.TempDir(), "req.yaml")
	g.Expect(os.WriteFile(path, []byte("k8sClusterName: dev-cluster\ntargetVersion: \"1.30\"\nnodeGroupUpgrades:\n- nodeGroupName: ng\n  strategy: in-place\n"), 0o600)).To(Succeed())
	code, out, errOut := run(t, nil, false, "upgrades", "create", "-f", path, "--server", server, "--idempotency-key", "k1", "-o", "json")
	g.Expect(code).To(Equal(0), errOut)
	g.Expect(out).To(ContainSubstring(`"id": "u-9"`))
	g.Expect(f.last().header.Get("Idempotency-Key")).To(Equal("k1"))
	g.Expect(f.last().body).To(MatchJSON(`{"k8sClusterName":"dev-cluster","targetVersion":"1.30","nodeGroupUpgrades":[{"nodeGroupName":"ng","strategy":"in-place"}]}`))
}

// states of an upgrade operation, as GET returns them one after the other.
func states(final string) []response {
	op := func(phase, message string, steps ...string) response {
		return response{200, fmt.Sprintf(`{"id":"u-1","name":"upgrade-x","phase":%q,"message":%q,"steps":[%s]}`, phase, message, strings.Join(steps, ","))}
	}
	step := func(id, phase, message string) string {
		return fmt.Sprintf(`{"id":%q,"phase":%q,"message":%q,"startTime":"2026-01-02T15:00:00Z"}`, id, phase, message)
	}
	out := []response{
		op("Pending", "", step("controlplane/Upgrade", "Pending", ""), step("nodegroup/ng/Upgrade", "Pending", "")),
		op("Running", "", step("controlplane/Upgrade", "Running", "waiting on the cloud"), step("nodegroup/ng/Upgrade", "Pending", "")),
		op("Running", "", step("controlplane/Upgrade", "Succeeded", ""), step("nodegroup/ng/Upgrade", "Running", "")),
	}
	switch final {
	case "Succeeded":
		out = append(out, op("Succeeded", "", step("controlplane/Upgrade", "Succeeded", ""), step("nodegroup/ng/Upgrade", "Succeeded", "")))
	case "Failed":
		out = append(out, op("Failed", "step nodegroup/ng/Upgrade failed", step("controlplane/Upgrade", "Succeeded", ""), step("nodegroup/ng/Upgrade", "Failed", "the cloud refused: ng has an operation in progress")))
	case "Cancelled":
		out = append(out, op("Cancelled", "cancelled by alice", step("controlplane/Upgrade", "Succeeded", ""), step("nodegroup/ng/Upgrade", "Skipped", "")))
	}
	return out
}

func TestWatch(t *testing.T) {
	for _, tc := range []struct {
		final   string
		tty     bool
		code    int
		out     []string
		errOut  string
		notInto string
	}{
		{final: "Succeeded", code: 0, out: []string{
			"operation upgrade-x  Pending",
			"step controlplane/Upgrade  Pending",
			"step controlplane/Upgrade  Running  ",
			"waiting on the cloud",
			"step controlplane/Upgrade  Succeeded",
			"step nodegroup/ng/Upgrade  Running",
			"step nodegroup/ng/Upgrade  Succeeded",
			"upgrade operation upgrade-x Succeeded",
		}, notInto: "\x1b["},
		{final: "Failed", code: 1, out: []string{"step nodegroup/ng/Upgrade  Failed"},
			errOut: "Error: upgrade operation upgrade-x Failed: step nodegroup/ng/Upgrade: the cloud refused: ng has an operation in progress"},
		{final: "Cancelled", code: 1, out: []string{"step nodegroup/ng/Upgrade  Skipped"}, errOut: "was Cancelled: cancelled by alice"},
		{final: "Succeeded", tty: true, code: 0, out: []string{"\x1b[2K", "✓", "STEP", "STATE", "ELAPSED", "[##############################] 2/2 steps  phase Succeeded"}},
		{final: "Failed", tty: true, code: 1, out: []string{"✗", "nodegroup/ng/Upgrade"}, errOut: "the cloud refused"},
	} {
		t.Run(fmt.Sprintf("%s tty=%v", tc.final, tc.tty), func(t *testing.T) {
			g := NewWithT(t)
			_, server := newFake(t, map[string][]response{"GET /ops/api/v1/upgradeOperations/u-1": states(tc.final)})
			code, out, errOut := run(t, nil, tc.tty, "upgrades", "watch", "u-1", "--server", server)
			g.Expect(code).To(Equal(tc.code), "stdout:\n%s\nstderr:\n%s", out, errOut)
			for _, want := range tc.out {
				g.Expect(out).To(ContainSubstring(want))
			}
			if tc.errOut != "" {
				g.Expect(errOut).To(ContainSubstring(tc.errOut))
			}
			if tc.notInto != "" {
				g.Expect(out).NotTo(ContainSubstring(tc.notInto))
			}
			if !tc.tty {
				// Each change is one line, written once.
				g.Expect(strings.Count(out, "step controlplane/Upgrade  Succeeded")).To(Equal(1))
			}
		})
	}
}

func TestWatchGivesUpAfterTimeout(t *testing.T) {
	g := NewWithT(t)
	_, server := newFake(t, map[string][]response{"GET /ops/api/v1/upgradeOperations/u-1": states("")})
	code, _, errOut := run(t, nil, false, "upgrades", "watch", "u-1", "--server", server, "--timeout", "50ms")
	g.Expect(code).To(Equal(1))
	g.Expect(errOut).To(ContainSubstring("still running after 50ms"))
}

func TestWatchNotFound(t *testing.T) {
	g := NewWithT(t)
	_, server := newFake(t, nil)
	code, _, errOut := run(t, nil, false, "upgrades", "watch", "nope", "--server", server)
	g.Expect(code).To(Equal(1))
	g.Expect(errOut).To(ContainSubstring("NOT_FOUND"))
}

// sliceSource is an UpgradeSource of given states (as a server-sent-event
// source would deliver them).
type sliceSource struct{ states []client.UpgradeOperation }

func (s *sliceSource) Next(ctx context.Context) (*client.UpgradeOperation, error) {
	if len(s.states) == 0 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	op := s.states[0]
	s.states = s.states[1:]
	return &op, nil
}

func TestWatchTakesAnotherSource(t *testing.T) {
	g := NewWithT(t)
	_, server := newFake(t, nil) // never asked: the source delivers the states
	var out, errOut bytes.Buffer
	var gotID string
	code := Main([]string{"upgrades", "watch", "u-7", "--server", server}, IO{
		Out: &out, Err: &errOut,
		Getenv:     func(string) string { return "" },
		IsTerminal: func(io.Writer) bool { return false },
		NewUpgradeSource: func(_ *client.Client, id string, _ time.Duration) UpgradeSource {
			gotID = id
			return &sliceSource{states: []client.UpgradeOperation{
				{Name: "u", Phase: client.UpgradeOperationPhaseRunning, Steps: []client.UpgradeStep{{Id: "s1", Phase: client.UpgradeStepPhaseRunning}}},
				{Name: "u", Phase: client.UpgradeOperationPhaseSucceeded, Steps: []client.UpgradeStep{{Id: "s1", Phase: client.UpgradeStepPhaseSucceeded}}},
			}}
		},
	})
	g.Expect(code).To(Equal(0), errOut.String())
	g.Expect(gotID).To(Equal("u-7"))
	g.Expect(out.String()).To(ContainSubstring("step s1  Succeeded"))
}

func TestVMClusterCreateWait(t *testing.T) {
	for _, tc := range []struct {
		name   string
		states []response
		code   int
		out    string
		errOut string
	}{
		{"RUNNING", []response{
			{200, `{"name":"vmclusters/demo","status":"CREATING"}`},
			{200, `{"name":"vmclusters/demo","status":"RUNNING","create_time":"2026-01-02T15:04:00Z"}`},
		}, 0, "NAME  STATUS   CHART VERSION  AGE\ndemo  RUNNING  <none>         5s\n", "vmcluster demo: CREATING\nvmcluster demo: RUNNING\n"},
		{"FAILED", []response{
			{200, `{"name":"vmclusters/demo","status":"FAILED","status_reason":"InstallFailed","status_message":"chart not found"}`},
		}, 1, "", "vmcluster demo is FAILED: InstallFailed: chart not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			f, server := newFake(t, map[string][]response{
				"POST /api/v1/observability-ops/vmclusters":     {{202, `{"name":"vmclusters/demo","status":"CREATING"}`}},
				"GET /api/v1/observability-ops/vmclusters/demo": tc.states,
			})
			path := filepath.Join(t.TempDir(), "vmc.json")
			g.Expect(os.WriteFile(path, []byte(`{"name":"demo","values":{"vmstorage":{"replicaCount":1}}}`), 0o600)).To(Succeed())
			code, out, errOut := run(t, nil, false, "vmclusters", "create", "-f", path, "--wait", "--server", server)
			g.Expect(code).To(Equal(tc.code), errOut)
			g.Expect(out).To(Equal(tc.out))
			g.Expect(errOut).To(ContainSubstring(tc.errOut))
			g.Expect(f.requests[0].body).To(MatchJSON(`{"name":"demo","values":{"vmstorage":{"replicaCount":1}}}`))
		})
	}
}

func TestEveryCommandReachesItsRoute(t *testing.T) {
	dir := t.TempDir()
	body := filepath.Join(dir, "body.json")
	NewWithT(t).Expect(os.WriteFile(body, []byte(`{}`), 0o600)).To(Succeed())
	cloudArgs := []string{"--k8s-cluster", "c", "--region", "r", "--cloud-provider", "mock"}
	for _, tc := range []struct {
		args  []string
		route string
	}{
		{[]string{"vmclusters", "update", "v", "-f", body, "--if-match", "e1"}, "PUT /api/v1/observability-ops/vmclusters/v"},
		{[]string{"vmclusters", "delete", "v"}, "DELETE /api/v1/observability-ops/vmclusters/v"},
		{[]string{"upgrades", "dry-run", "-f", body}, "POST /ops/api/v1/upgradeOperations/dry-run"},
		{[]string{"upgrades", "preflight", "-f", body}, "POST /ops/api/v1/upgradeOperations/preflight"},
		{[]string{"upgrades", "pause", "u"}, "PUT /ops/api/v1/upgradeOperations/u/pause"},
		{[]string{"upgrades", "resume", "u"}, "PUT /ops/api/v1/upgradeOperations/u/resume"},
		{[]string{"upgrades", "cancel", "u"}, "DELETE /ops/api/v1/upgradeOperations/u"},
		{[]string{"upgrades", "approve", "u", "--gate", "BeforeNodeGroups"}, "PUT /ops/api/v1/upgradeOperations/u/approve"},
		{[]string{"upgrades", "events", "u"}, "GET /ops/api/v1/upgradeOperations/u/events"},
		{[]string{"backups", "list", "-c", "v"}, "GET /api/v1/observability-ops/vmclusters/v/backups"},
		{[]string{"backups", "get", "b", "--vmcluster", "v"}, "GET /api/v1/observability-ops/vmclusters/v/backups/b"},
		{[]string{"backups", "create", "-f", body, "-c", "v"}, "POST /api/v1/observability-ops/vmclusters/v/backups"},
		{[]string{"backups", "delete", "b", "-c", "v"}, "DELETE /api/v1/observability-ops/vmclusters/v/backups/b"},
		{[]string{"schedules", "list", "-c", "v"}, "GET /api/v1/observability-ops/vmclusters/v/backupSchedules"},
		{[]string{"schedules", "update", "s", "-f", body, "-c", "v"}, "PUT /api/v1/observability-ops/vmclusters/v/backupSchedules/s"},
		{[]string{"restores", "create", "-f", body, "-c", "v"}, "POST /api/v1/observability-ops/vmclusters/v/restores"},
		{[]string{"restores", "get", "r", "-c", "v"}, "GET /api/v1/observability-ops/vmclusters/v/restores/r"},
		{[]string{"operations", "create", "-f", body, "-c", "v", "--dry-run"}, "POST /api/v1/observability-ops/vmclusters/v/operations"},
		{[]string{"operations", "cancel", "o", "-c", "v"}, "DELETE /api/v1/observability-ops/vmclusters/v/operations/o"},
		{[]string{"operations", "pause", "o", "-c", "v"}, "PUT /api/v1/observability-ops/vmclusters/v/operations/o/pause"},
		{[]string{"components", "list"}, "GET /api/v1/observability-ops/components"},
		{[]string{"components", "delete", "x"}, "DELETE /api/v1/observability-ops/components/x"},
		{[]string{"resources", "v"}, "GET /api/v1/observability-ops/vmclusters/v/resources"},
		{[]string{"pods", "v"}, "GET /api/v1/observability-ops/vmclusters/v/pods"},
		{[]string{"events", "v"}, "GET /api/v1/observability-ops/vmclusters/v/events"},
		{[]string{"diagnostics", "v"}, "GET /api/v1/observability-ops/vmclusters/v/diagnostics"},
		{[]string{"logs", "v", "p", "--tail", "5"}, "GET /api/v1/observability-ops/vmclusters/v/pods/p/logs"},
		{append([]string{"nodegroups"}, cloudArgs...), "GET /ops/api/v1/nodeGroups"},
		{append([]string{"addons", "list"}, cloudArgs...), "GET /ops/api/v1/addons"},
		{[]string{"providers"}, "GET /ops/api/v1/providers"},
		{[]string{"bootstrap"}, "GET /api/v1/observability-ops/bootstrap"},
	} {
		t.Run(tc.route, func(t *testing.T) {
			g := NewWithT(t)
			f, server := newFake(t, map[string][]response{tc.route: {{200, `{"ok":true}`}}})
			code, out, errOut := run(t, nil, false, append(tc.args, "--server", server, "-o", "json")...)
			g.Expect(code).To(Equal(0), errOut)
			g.Expect(out).To(MatchJSON(`{"ok":true}`))
			req := f.last()
			g.Expect(req.method + " " + strings.SplitN(req.uri, "?", 2)[0]).To(Equal(tc.route))
		})
	}
}
