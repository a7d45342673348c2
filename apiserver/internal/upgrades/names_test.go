package upgrades_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/server"
	"github.com/tidbcloud/ops-server/apiserver/internal/upgrades"
	"github.com/tidbcloud/ops-server/apiserver/internal/upgrades/upgradestest"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// TestCloudNamesInLabels: operations of clusters with real-world names —
// an EKS name with upper case and underscores, one longer than a label
// value may be, an ACK name in Chinese characters — are created; the
// cluster label holds the name when it is a valid label value and a hash
// of it otherwise, so `kubectl get -l` still finds them, and the REST
// list filters by the raw k8sClusterName.
func TestCloudNamesInLabels(t *testing.T) {
	ns := env.NewNamespace(t)
	// No provider registry: the cloud is not consulted (validation and
	// the API server's admission only).
	e, err := server.New(server.Options{}, &upgrades.Handler{Svc: &upgrades.Service{Reader: env.Client, Writer: env.Client, Namespace: ns}})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	a := &api{t: t, url: srv.URL, ns: ns}

	long := "Prod_" + strings.Repeat("x", 70)
	cases := []struct {
		provider, cluster, label string
	}{
		{"eks", "Prod_Cluster-01", "Prod_Cluster-01"},
		{"aks", "myAKS_cluster", "myAKS_cluster"},
		{"eks", long, opsv1.ClusterNameLabelValue(long)},
		{"ack", "生产集群-01", opsv1.ClusterNameLabelValue("生产集群-01")},
	}
	for _, tc := range cases {
		t.Run(tc.provider+"/"+tc.cluster, func(t *testing.T) {
			g := NewWithT(t)
			code, body := a.do(http.MethodPost, upgrades.BasePath, upgradestest.OnCloud(tc.provider, tc.cluster, "", "workers"), nil)
			g.Expect(code).To(Equal(http.StatusAccepted), string(body))
			op := a.op(body)
			g.Expect(op.Spec.K8sClusterName).To(Equal(tc.cluster))

			list := &opsv1.ClusterUpgradeOperationList{}
			g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns),
				client.MatchingLabels{upgrades.LabelCluster: tc.label})).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1), "a label selector finds the operation")
			g.Expect(list.Items[0].Name).To(Equal(op.Name))

			code, body = a.do(http.MethodGet, upgrades.BasePath+"?k8sClusterName="+url.QueryEscape(tc.cluster), "", nil)
			g.Expect(code).To(Equal(http.StatusOK), string(body))
			g.Expect(string(body)).To(ContainSubstring(op.ID))
			g.Expect(strings.Count(string(body), `"id":`)).To(Equal(1), "only this cluster's operation: %s", body)
		})
	}
	g := NewWithT(t)
	g.Expect(opsv1.ClusterNameLabelValue(long)).To(HavePrefix("h-"))
	g.Expect(opsv1.ClusterNameLabelValue("生产集群-01")).To(HavePrefix("h-"))
}
