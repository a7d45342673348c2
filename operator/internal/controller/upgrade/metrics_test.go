package upgrade

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

func TestCloudCallsMetric(t *testing.T) {
	g := NewWithT(t)
	reg := cloud.NewRegistry(&policyProvider{})
	reg.Observe = ObserveCloudCall
	ok := cloudCalls.WithLabelValues(cloud.Mock, "DescribeCluster", "Success")
	before := testutil.ToFloat64(ok)
	p, ref, err := reg.Resolve(cloud.Mock, "c", "r")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = p.DescribeCluster(context.Background(), ref)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(testutil.ToFloat64(ok)).To(Equal(before + 1))

	// Through a reconcile: a permanent error of a start call is counted
	// with its kind.
	failed := cloudCalls.WithLabelValues(cloud.Mock, "StartNodeGroupUpgrade", "Permanent")
	before = testutil.ToFloat64(failed)
	op, _ := policyOp(opsv1.ActionUpgradeNodeGroup, false)
	r := policyReconciler(t, &policyProvider{err: cloud.Errorf(cloud.Permanent, cloud.Mock, "StartNodeGroupUpgrade", "no")}, nil)
	r.Providers.Observe = ObserveCloudCall
	_, _, _, err = r.act(context.Background(), op)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(testutil.ToFloat64(failed)).To(Equal(before + 1))
}

func TestStepDurationMetric(t *testing.T) {
	g := NewWithT(t)
	before, _ := policyOp(opsv1.ActionUpgradeNodeGroup, true)
	after := before.DeepCopy()
	st := after.Status.Step("nodegroup/inplace/UpgradeNodeGroup")
	st.Phase, st.CompletionTime = opsv1.StepPhaseSucceeded, &metav1.Time{Time: st.StartTime.Add(90 * time.Second)}
	count := func() int {
		return testutil.CollectAndCount(stepDuration, "ops_clusterupgradeoperation_step_duration_seconds")
	}
	series := count()
	recordStepMetrics(before, after)
	g.Expect(count()).To(Equal(series+1), "a new action/result series")
	// The steps that were already finished before are not observed again.
	recordStepMetrics(after, after)
	g.Expect(count()).To(Equal(series + 1))
	g.Expect(testutil.CollectAndCompare(stepDuration, strings.NewReader(`
# HELP ops_clusterupgradeoperation_step_duration_seconds Time from the start to the end of an upgrade step, by action and result (Succeeded, Failed, Skipped).
# TYPE ops_clusterupgradeoperation_step_duration_seconds histogram
ops_clusterupgradeoperation_step_duration_seconds_sum{action="UpgradeNodeGroup",result="Succeeded"} 90
ops_clusterupgradeoperation_step_duration_seconds_count{action="UpgradeNodeGroup",result="Succeeded"} 1
`), "ops_clusterupgradeoperation_step_duration_seconds_sum", "ops_clusterupgradeoperation_step_duration_seconds_count")).To(Succeed())
}

// TestStepDurationMetricFailedAtStart: a step the cloud refused to start
// has no start time; it is counted as Failed (0 s), once.
func TestStepDurationMetricFailedAtStart(t *testing.T) {
	g := NewWithT(t)
	before, _ := policyOp(opsv1.ActionUpgradeControlPlane, false)
	after := before.DeepCopy()
	st := after.Status.Step(opsv1.ControlPlaneStepID)
	g.Expect(st.StartTime).To(BeNil())
	st.Phase, st.CompletionTime = opsv1.StepPhaseFailed, &metav1.Time{Time: time.Now()}
	reg := prometheus.NewRegistry()
	g.Expect(reg.Register(stepDuration)).To(Succeed())
	scrape := func() string {
		rec := httptest.NewRecorder()
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return rec.Body.String()
	}
	const series = `ops_clusterupgradeoperation_step_duration_seconds_count{action="UpgradeControlPlane",result="Failed"} `
	g.Expect(scrape()).NotTo(ContainSubstring(series))
	recordStepMetrics(before, after)
	g.Expect(scrape()).To(ContainSubstring(series + "1\n"))
	g.Expect(scrape()).To(ContainSubstring(`ops_clusterupgradeoperation_step_duration_seconds_sum{action="UpgradeControlPlane",result="Failed"} 0` + "\n"))
	recordStepMetrics(after, after)
	g.Expect(scrape()).To(ContainSubstring(series + "1\n"))
}
