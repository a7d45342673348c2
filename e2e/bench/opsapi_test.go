package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"

	opsclient "github.com/tidbcloud/ops-server/apiserver/pkg/client"
)

// TestOpsAPICalls runs the benchmark's calls through the generated client
// against a fake ops-apiserver on 127.0.0.1: the requests they send and
// what they read from the answers.
func TestOpsAPICalls(t *testing.T) {
	g := NewWithT(t)
	var got []string
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Authorization"))
		bodies = append(bodies, string(b))
		w.Header().Set("Content-Type", "application/json")
		switch r.Method + " " + r.URL.RequestURI() {
		case "POST /api/v1/observability-ops/vmclusters":
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, `{"id":"uid-1","name":"vmclusters/bench-vm-0001"}`)
		case "POST /ops/api/v1/upgradeOperations":
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, `{"id":"uid-2","name":"upgrade-x"}`)
		case "GET /api/v1/observability-ops/vmclusters?page_size=1000":
			_, _ = io.WriteString(w, `{"vmclusters":[{"name":"vmclusters/a","status":"RUNNING"}],"next_page_token":"p2"}`)
		case "GET /api/v1/observability-ops/vmclusters?page_size=1000&page_token=p2":
			_, _ = io.WriteString(w, `{"vmclusters":[{"name":"vmclusters/b","status":"FAILED"}]}`)
		case "GET /ops/api/v1/upgradeOperations?k8sClusterName=c1&pageSize=1000":
			_, _ = io.WriteString(w, `{"upgradeOperations":[{"name":"u1"},{"name":"u2"}]}`)
		case "DELETE /api/v1/observability-ops/vmclusters/a":
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, `{}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":{"code":404,"status":"NOT_FOUND","message":"no"}}`)
		}
	}))
	defer srv.Close()
	g.Expect(srv.URL).To(HavePrefix("http://127.0.0.1:"))
	api, err := opsclient.NewClient(srv.URL, opsclient.WithBearerToken("tok"))
	g.Expect(err).NotTo(HaveOccurred())
	e := &env{opsAPI: api}
	ctx := context.Background()

	id, n, err := e.postVMCluster(ctx, "bench-vm-0001")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(id).To(Equal("uid-1"))
	g.Expect(n).To(BeNumerically(">", 0))
	g.Expect(bodies[0]).To(MatchJSON(`{"name":"bench-vm-0001","values":{"vmstorage":{"replicaCount":1},"vmselect":{"replicaCount":1},"vminsert":{"replicaCount":1}}}`))

	name, _, err := e.postUpgrade(ctx, "c1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(name).To(Equal("upgrade-x"))
	g.Expect(bodies[1]).To(MatchJSON(`{"k8sClusterName":"c1","region":"local","cloudProvider":"mock","targetVersion":"1.30","nodeGroupUpgrades":[{"nodeGroupName":"ng","strategy":"blue-green","newNodeGroupName":"ng-130"}]}`))

	all, err := e.listVMClusters(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(all).To(Equal(map[string]string{"a": "RUNNING", "b": "FAILED"}))

	count, err := e.countUpgrades(ctx, "c1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(count).To(Equal(2))

	_, err = e.countUpgrades(ctx, "unknown")
	g.Expect(err).To(MatchError(ContainSubstring("HTTP 404")))

	for _, r := range got {
		g.Expect(r).To(HaveSuffix(" Bearer tok"))
	}
}
