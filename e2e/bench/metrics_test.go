package bench

import (
	"testing"

	. "github.com/onsi/gomega"
)

const exposition = `# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="clusterupgradeoperation",result="success"} 120
controller_runtime_reconcile_total{controller="clusterupgradeoperation",result="requeue_after"} 30
controller_runtime_reconcile_total{controller="clusterbackup",result="success"} 7
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 10
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="PATCH"} 5.5
rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 2 1700000000000
odd_label{msg="a \"quoted\", comma\\ and } brace"} 1
go_goroutines 42
`

func TestParseMetrics(t *testing.T) {
	g := NewWithT(t)
	ms, err := ParseMetrics(exposition)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ms).To(HaveLen(8))
	g.Expect(ms[7]).To(Equal(Metric{Name: "go_goroutines", Labels: map[string]string{}, Value: 42}))
	g.Expect(ms[6].Labels).To(Equal(map[string]string{"msg": `a "quoted", comma\ and } brace`}))

	ctrl := map[string]string{"controller": "clusterupgradeoperation"}
	g.Expect(Sum(ms, "controller_runtime_reconcile_total", ctrl)).To(Equal(150.0))
	g.Expect(Sum(ms, "controller_runtime_reconcile_total", nil)).To(Equal(157.0))
	g.Expect(Sum(ms, "rest_client_requests_total", nil)).To(Equal(17.5))
	g.Expect(Sum(ms, "absent_total", nil)).To(BeZero())
	g.Expect(SumBy(ms, "rest_client_requests_total", "method")).To(Equal(map[string]float64{"GET": 10, "PATCH": 5.5, "POST": 2}))
}

func TestParseMetricsRejectsMalformedLines(t *testing.T) {
	for _, tc := range []struct{ name, text string }{
		{"no value", "lonely_metric\n"},
		{"value not a number", "m{a=\"b\"} many\n"},
		{"unterminated label", "m{a=\"b} 1\n"},
		{"label without quotes", "m{a=b} 1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseMetrics(tc.text)
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring("line 1")))
		})
	}
}
