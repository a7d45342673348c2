package stories

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/e2e/deploy/render"
	"github.com/tidbcloud/ops-server/e2e/stack"
	"github.com/tidbcloud/ops-server/e2e/suite"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

// storyUpgradeFailedAlert: an upgrade fails on the simulated cloud (an
// operation of someone else is injected in progress on its control plane,
// so the cloud refuses to start another); ops-operator's /metrics,
// scraped and pushed into a vmcluster, raise the chart's
// OpsServerUpgradeFailed expression to 1 for that operation.
func storyUpgradeFailedAlert(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	// The build the binaries report: --version and GET /version agree.
	bin, err := testenv.Binary("ops-operator")
	g.Expect(err).NotTo(HaveOccurred())
	out, err := exec.Command(bin, "--version").Output()
	g.Expect(err).NotTo(HaveOccurred())
	code, version := suite.Call(t, http.MethodGet, "/version", nil)
	g.Expect(code).To(Equal(http.StatusOK), "%v", version)
	g.Expect(string(out)).To(Equal(fmt.Sprintf("ops-operator %s (revision %s, %s)\n", version["version"], version["revision"], version["goVersion"])))

	ref := cloud.ClusterRef{Provider: cloud.Mock, Name: "alert-cluster", Region: "local"}
	now := time.Now().UTC()
	g.Expect((&mock.Provider{Client: st.Env.Client}).Seed(ctx, ref, mock.ClusterState{
		Version: "1.29",
		Operations: map[string]*mock.Operation{"op-elsewhere": {
			ID: "op-elsewhere", Kind: mock.OpStartControlPlaneUpgrade, Target: "cluster/" + ref.Name, Version: "1.30",
			Started: now, Due: now.Add(24 * time.Hour), State: string(cloud.OperationRunning),
		}},
	})).To(Succeed())
	code, body := suite.Call(t, http.MethodPost, suite.Upgrades, map[string]any{
		"k8sClusterName": ref.Name, "region": ref.Region, "cloudProvider": "mock", "targetVersion": "1.30",
	})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	name, namespace := body["name"].(string), body["namespace"].(string)
	failed := suite.WaitUpgrade(t, body["id"].(string), "Failed", 2*time.Minute)
	g.Expect(fmt.Sprint(failed["steps"])).To(ContainSubstring("has an operation in progress"))

	// A vmcluster to push the scrape into (as a Prometheus would scrape).
	base := runningVMCluster(t, "alerts")
	_, running := suite.Call(t, http.MethodGet, base, nil)
	remoteWrite, _ := suite.Field(running, "endpoints.remote_write").(string)
	prometheus, _ := suite.Field(running, "endpoints.prometheus").(string)
	g.Expect(remoteWrite).NotTo(BeEmpty(), "%v", running["endpoints"])

	scrape := get(t, st.OperatorMetricsURL)
	var ours []string
	for _, l := range strings.Split(scrape, "\n") {
		if strings.HasPrefix(l, "ops_") {
			ours = append(ours, l)
		}
	}
	for _, want := range []string{
		fmt.Sprintf(`ops_clusterupgradeoperation_status_phase{name=%q,namespace=%q,phase="Failed",provider="mock"} 1`, name, namespace),
		`ops_cloud_calls_total{operation="StartControlPlaneUpgrade",provider="mock",result="Permanent"}`,
		`ops_clusterupgradeoperation_step_duration_seconds_count{action="UpgradeControlPlane",result="Failed"}`,
		`ops_operator_leader 1`,
		`ops_build_info{goversion=`,
	} {
		g.Expect(strings.Join(ours, "\n")).To(ContainSubstring(want))
	}
	// vminsert takes the exposition format as it is (samples at the time
	// of the import); job like a scrape config's.
	g.Eventually(func(g Gomega) {
		resp, err := http.Post(stack.ImportURL(remoteWrite)+"?extra_label=job=ops-operator", "text/plain", strings.NewReader(scrape))
		g.Expect(err).NotTo(HaveOccurred())
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
		g.Expect(resp.StatusCode/100).To(Equal(2), string(msg))
	}, 2*time.Minute, time.Second).Should(Succeed(), "importing the scrape while the vmcluster's vminsert Service comes up")

	expr := alertExpr(t, "OpsServerUpgradeFailed")
	g.Eventually(func(g Gomega) {
		var res struct {
			Data struct {
				Result []struct {
					Metric map[string]string `json:"metric"`
					Value  [2]any            `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		g.Expect(testenv.GetJSON(ctx, nil, prometheus+"/api/v1/query?"+url.Values{"query": {expr}}.Encode(), &res)).To(Succeed())
		found := false
		for _, r := range res.Data.Result {
			if r.Metric["name"] == name && r.Metric["namespace"] == namespace && r.Metric["provider"] == "mock" {
				found = true
				g.Expect(r.Value[1]).To(Equal("1"))
			}
		}
		g.Expect(found).To(BeTrue(), "%s: %v", expr, res.Data.Result)
	}, 2*time.Minute, 2*time.Second).Should(Succeed())
}

// get returns the body of a GET of u.
func get(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(resp.StatusCode).To(Equal(http.StatusOK), string(b))
	return string(b)
}

// alertExpr is the expression of an alert of the ops-server chart's VMRule.
func alertExpr(t *testing.T, alert string) string {
	t.Helper()
	g := NewWithT(t)
	root, err := render.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	chart := filepath.Join(root, "deploy", "charts", "ops-server")
	res, err := render.Render(render.Options{ChartDir: chart, ReleaseName: "ops-server", Namespace: "ops",
		Values: map[string]any{"monitoring": map[string]any{"rules": map[string]any{"enabled": true}}}})
	g.Expect(err).NotTo(HaveOccurred())
	for _, obj := range res.Objects {
		if obj.GetKind() != "VMRule" {
			continue
		}
		groups, _ := obj.Object["spec"].(map[string]any)["groups"].([]any)
		for _, gr := range groups {
			rules, _ := gr.(map[string]any)["rules"].([]any)
			for _, r := range rules {
				if m := r.(map[string]any); m["alert"] == alert {
					return m["expr"].(string)
				}
			}
		}
	}
	t.Fatalf("the chart has no alert %s", alert)
	return ""
}
