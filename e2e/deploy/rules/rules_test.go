// Package rules evaluates the alert rules of the ops-server chart
// (templates/_rules.tpl, docs/metrics.md "Alerts") with the real
// VictoriaMetrics binaries: synthetic series are imported into a local
// vmstorage through vminsert, one tenant per case, and each rule's
// expression is queried at vmselect at a fixed time.
package rules

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/e2e/deploy/render"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

var httpc = &http.Client{Timeout: 30 * time.Second}

// series is one synthetic series: its samples are value(t) every 30 s over
// the 20 minutes before the evaluation time.
type series struct {
	text  string // name{labels}
	value func(minutesBefore float64) float64
}

func constant(v float64) func(float64) float64 { return func(float64) float64 { return v } }

// counter grows by perMinute a minute.
func counter(perMinute float64) func(float64) float64 {
	return func(m float64) float64 { return 1000 + perMinute*(20-m) }
}

type ruleCase struct {
	name  string
	data  []series
	fires []string // the label sets (`k="v"` pairs, sorted) expected in the result; empty: no result
}

func TestAlertRules(t *testing.T) {
	g := NewWithT(t)
	root, err := render.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	chart := filepath.Join(root, "deploy", "charts", "ops-server")
	res, err := render.Render(render.Options{ChartDir: chart, ReleaseName: "ops-server", Namespace: "ops",
		ValuesFiles: []string{filepath.Join(chart, "examples", "values-monitoring.yaml")}})
	g.Expect(err).NotTo(HaveOccurred())
	exprs := map[string]string{}
	kinds := 0
	for _, obj := range res.Objects {
		if obj.GetKind() != "VMRule" && obj.GetKind() != "PrometheusRule" {
			continue
		}
		kinds++
		spec, _ := obj.Object["spec"].(map[string]any)
		b, err := json.Marshal(spec["groups"])
		g.Expect(err).NotTo(HaveOccurred())
		var groups []struct {
			Rules []struct{ Alert, Expr string }
		}
		g.Expect(json.Unmarshal(b, &groups)).To(Succeed())
		for _, gr := range groups {
			for _, r := range gr.Rules {
				if prev, ok := exprs[r.Alert]; ok {
					g.Expect(r.Expr).To(Equal(prev), "%s: the PrometheusRule and the VMRule differ", r.Alert)
				}
				exprs[r.Alert] = r.Expr
			}
		}
	}
	g.Expect(kinds).To(Equal(2), "a PrometheusRule and a VMRule")

	const (
		failed   = `ops_clusterupgradeoperation_status_phase{namespace="ns",name="%s",provider="eks",phase="%s"}`
		blocked  = `ops_clusterupgradeoperation_blocked_since_timestamp_seconds{namespace="ns",name="up",provider="eks",step="nodegroup/ng/DrainNodes",reason="PodDisruptionBudget"}`
		lastOK   = `ops_backup_last_success_timestamp_seconds{namespace="ns",vmcluster="%s"}`
		requests = `ops_apiserver_http_requests_total{route="/x",method="GET",code="%s"}`
	)
	at := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	ago := func(d time.Duration) float64 { return float64(at.Add(-d).Unix()) }
	// Every case but the ones named "... good" fires; the labels say on what.
	cases := map[string][]ruleCase{
		"OpsServerUpgradeFailed": {
			{name: "failed", data: []series{{fmt.Sprintf(failed, "bad", "Failed"), constant(1)}, {fmt.Sprintf(failed, "ok", "Running"), constant(1)}},
				fires: []string{`name="bad",namespace="ns",provider="eks"`}},
			{name: "good", data: []series{{fmt.Sprintf(failed, "ok", "Succeeded"), constant(1)}, {fmt.Sprintf(failed, "run", "Running"), constant(1)}}},
		},
		"OpsServerUpgradeBlocked": {
			{name: "blocked an hour", data: []series{{blocked, constant(ago(time.Hour))}},
				fires: []string{`name="up",namespace="ns",provider="eks",reason="PodDisruptionBudget",step="nodegroup/ng/DrainNodes"`}},
			{name: "blocked 10 minutes good", data: []series{{blocked, constant(ago(10 * time.Minute))}}},
		},
		"OpsServerBackupMissing": {
			{name: "old and never", data: []series{{fmt.Sprintf(lastOK, "old"), constant(ago(30 * time.Hour))},
				{fmt.Sprintf(lastOK, "never"), constant(0)}, {fmt.Sprintf(lastOK, "fresh"), constant(ago(2 * time.Hour))}},
				fires: []string{`namespace="ns",vmcluster="never"`, `namespace="ns",vmcluster="old"`}},
			{name: "fresh good", data: []series{{fmt.Sprintf(lastOK, "fresh"), constant(ago(2 * time.Hour))}}},
		},
		"OpsServerAPIErrors": {
			{name: "20% 5xx", data: []series{{fmt.Sprintf(requests, "200"), counter(80)}, {fmt.Sprintf(requests, "503"), counter(20)}},
				fires: []string{``}},
			{name: "1% 5xx good", data: []series{{fmt.Sprintf(requests, "200"), counter(99)}, {fmt.Sprintf(requests, "500"), counter(1)}}},
		},
		"OpsServerOperatorNotLeading": {
			{name: "no replica leads", data: []series{{`ops_operator_leader{pod="a"}`, constant(0)}, {`ops_operator_leader{pod="b"}`, constant(0)}},
				fires: []string{``}},
			{name: "no operator at all", data: []series{{`ops_build_info{version="v1",revision="r",goversion="go"}`, constant(1)}},
				fires: []string{``}},
			{name: "one leads good", data: []series{{`ops_operator_leader{pod="a"}`, constant(1)}, {`ops_operator_leader{pod="b"}`, constant(0)}}},
		},
	}
	g.Expect(exprs).To(HaveLen(len(cases)), "a case for every alert of the chart")

	vminsert, vmselect := startVictoriaMetrics(t)
	tenant := 0
	type evaluation struct {
		alert, expr string
		rc          ruleCase
		tenant      int
	}
	var evals []evaluation
	for alert, rcs := range cases {
		expr, ok := exprs[alert]
		g.Expect(ok).To(BeTrue(), "the chart has no alert %s", alert)
		for _, rc := range rcs {
			tenant++
			importSeries(t, vminsert, tenant, at, rc.data)
			evals = append(evals, evaluation{alert, expr, rc, tenant})
		}
	}
	for _, e := range evals {
		t.Run(e.alert+"/"+e.rc.name, func(t *testing.T) {
			g := NewWithT(t)
			// The imported series are searchable once vmstorage flushed them.
			g.Eventually(func() (int, error) {
				return countSeries(vmselect, e.tenant, at)
			}, time.Minute, time.Second).Should(Equal(len(e.rc.data)))
			got, err := query(vmselect, e.tenant, e.expr, at)
			g.Expect(err).NotTo(HaveOccurred())
			want := e.rc.fires
			if want == nil {
				want = []string{}
			}
			g.Expect(got).To(ConsistOf(want), "%s at %s", e.expr, at)
		})
	}
}

func startVictoriaMetrics(t *testing.T) (vminsert, vmselect string) {
	t.Helper()
	g := NewWithT(t)
	dir := t.TempDir()
	addr := func() string {
		p, err := testenv.FreePort()
		g.Expect(err).NotTo(HaveOccurred())
		return "127.0.0.1:" + strconv.Itoa(p)
	}
	start := func(name, healthAddr string, args ...string) {
		p, err := testenv.StartProcess(name, dir, args, nil)
		g.Expect(err).NotTo(HaveOccurred(), "starting %s (run `make tools` first)", name)
		t.Cleanup(func() {
			if err := p.Stop(10 * time.Second); err != nil {
				t.Logf("stopping %s: %v", name, err)
			}
			if t.Failed() {
				t.Logf("%s log:\n%s", name, p.Log(4000))
			}
		})
		g.Expect(p.WaitHTTPOK(context.Background(), "http://"+healthAddr+"/health", time.Minute)).To(Succeed(), p.Log(4000))
	}
	storageHTTP, insertAddr, selectAddr := addr(), addr(), addr()
	start("vmstorage", storageHTTP, "-storageDataPath="+filepath.Join(dir, "data"), "-httpListenAddr="+storageHTTP,
		"-vminsertAddr="+insertAddr, "-vmselectAddr="+selectAddr, "-retentionPeriod=1y", "-inmemoryDataFlushInterval=1s")
	insertHTTP, selectHTTP := addr(), addr()
	start("vminsert", insertHTTP, "-storageNode="+insertAddr, "-httpListenAddr="+insertHTTP)
	start("vmselect", selectHTTP, "-storageNode="+selectAddr, "-httpListenAddr="+selectHTTP, "-search.latencyOffset=0s", "-search.disableCache")
	return "http://" + insertHTTP, "http://" + selectHTTP
}

// importSeries writes the series' samples, every 30 s over the 20 minutes
// before at, into tenant through vminsert's Prometheus text import.
func importSeries(t *testing.T, vminsert string, tenant int, at time.Time, data []series) {
	t.Helper()
	g := NewWithT(t)
	var b strings.Builder
	for _, s := range data {
		for m := 20.0; m >= 0; m -= 0.5 {
			ts := at.Add(-time.Duration(m * float64(time.Minute))).UnixMilli()
			fmt.Fprintf(&b, "%s %s %d\n", s.text, strconv.FormatFloat(s.value(m), 'f', -1, 64), ts)
		}
	}
	resp, err := httpc.Post(fmt.Sprintf("%s/insert/%d/prometheus/api/v1/import/prometheus", vminsert, tenant), "text/plain", strings.NewReader(b.String()))
	g.Expect(err).NotTo(HaveOccurred())
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusNoContent), string(body))
}

// countSeries is how many series tenant has at at.
func countSeries(vmselect string, tenant int, at time.Time) (int, error) {
	r, err := instant(vmselect, tenant, `count({__name__=~"ops_.+"})`, at)
	if err != nil || len(r) == 0 {
		return 0, err
	}
	return strconv.Atoi(r[0].Value[1].(string))
}

type sample struct {
	Metric map[string]string
	Value  []any
}

// query evaluates expr at at and returns each result's labels as sorted
// `k="v"` pairs joined by commas.
func query(vmselect string, tenant int, expr string, at time.Time) ([]string, error) {
	r, err := instant(vmselect, tenant, expr, at)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, s := range r {
		var pairs []string
		for k, v := range s.Metric {
			pairs = append(pairs, fmt.Sprintf("%s=%q", k, v))
		}
		slices.Sort(pairs)
		out = append(out, strings.Join(pairs, ","))
	}
	return out, nil
}

func instant(vmselect string, tenant int, expr string, at time.Time) ([]sample, error) {
	q := url.Values{"query": {expr}, "time": {strconv.FormatInt(at.Unix(), 10)}, "nocache": {"1"}}
	resp, err := httpc.Get(fmt.Sprintf("%s/select/%d/prometheus/api/v1/query?%s", vmselect, tenant, q.Encode()))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %d %s", expr, resp.StatusCode, body)
	}
	var out struct {
		Data struct{ Result []sample }
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("%s: %w: %s", expr, err, body)
	}
	return out.Data.Result, nil
}
