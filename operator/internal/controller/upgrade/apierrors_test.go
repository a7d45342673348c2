package upgrade_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// apiFaults answers some of the operator's requests with what an unwell
// Kubernetes API server answers — 503, 429, an etcd leader change, a
// timeout, a refused connection — in turn: every other request of each
// kind, up to limit per kind. Watches are left alone.
type apiFaults struct {
	mu       sync.Mutex
	seen     map[string]int
	injected map[string]int
	limit    int
}

// kind names the requests that fail: the steps' Node and Pod reads and
// writes, evictions, and the operation's own status patches.
func (f *apiFaults) kind(r *http.Request) string {
	if r.URL.Query().Get("watch") == "true" {
		return ""
	}
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/eviction"):
		return "evict"
	case strings.HasPrefix(p, "/api/v1/nodes"):
		return r.Method + " nodes"
	case strings.HasSuffix(p, "/pods") || strings.Contains(p, "/pods?"):
		return r.Method + " pods"
	case strings.Contains(p, "/clusterupgradeoperations/") && strings.HasSuffix(p, "/status"):
		return r.Method + " operation status"
	}
	return ""
}

var apiFaultAnswers = []struct {
	code   int
	reason string
	msg    string
}{
	{http.StatusServiceUnavailable, "ServiceUnavailable", "the server is currently unable to handle the request"},
	{http.StatusTooManyRequests, "TooManyRequests", "too many requests"},
	{http.StatusInternalServerError, "InternalError", "etcdserver: leader changed"},
	{http.StatusGatewayTimeout, "Timeout", "the server was unable to return a response in the time allotted"},
	{0, "", "connection refused"},
}

func (f *apiFaults) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		k := f.kind(r)
		if k == "" {
			return rt.RoundTrip(r)
		}
		f.mu.Lock()
		f.seen[k]++
		n, inject := f.injected[k], f.seen[k]%2 == 1 && f.injected[k] < f.limit
		if inject {
			f.injected[k]++
		}
		f.mu.Unlock()
		if !inject {
			return rt.RoundTrip(r)
		}
		a := apiFaultAnswers[n%len(apiFaultAnswers)]
		if a.code == 0 {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		}
		body := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"` + a.msg + `","reason":"` + a.reason + `","code":` + strconv.Itoa(a.code) + `}`
		return &http.Response{StatusCode: a.code, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	})
}

func (f *apiFaults) total() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, v := range f.injected {
		out[k] = v
	}
	return out
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestKubernetesAPIErrorsNeverFailAnUpgrade: a blue-green upgrade whose
// Kubernetes requests (Nodes listed and cordoned, Pods listed and evicted,
// its own status written) fail every other time — with 503, 429, an etcd
// leader change, a gateway timeout or a refused connection — Succeeds,
// and the simulated cloud saw each mutating call once. (Before the one
// error policy, the first such error in CordonNodes or WaitNodesReady
// failed the operation.)
func TestKubernetesAPIErrorsNeverFailAnUpgrade(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	f := newCloud(t, "apierrors", 0, seed("ae-old"))
	faults := &apiFaults{seen: map[string]int{}, injected: map[string]int{}, limit: 6}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(faults.wrap)
	startOperatorWith(t, cfg, ns, f, nil)
	workload(t, ns, "ae-old", 2, map[string]string{"app": "web"})
	kubeletLoop(t, ns)

	op := newOp(ns, "ae", f, func(s *opsv1.ClusterUpgradeOperationSpec) {
		s.NodeGroupUpgrades = []opsv1.NodeGroupUpgrade{{NodeGroupName: "ae-old", Strategy: opsv1.StrategyBlueGreen, NewNodeGroupName: "ae-new"}}
	})
	g.Expect(env.Client.Create(ctx, op)).To(Succeed())
	done := waitPhase(t, op, opsv1.UpgradePhaseSucceeded, 2*time.Minute)
	for _, s := range done.Status.Steps {
		g.Expect(s.Phase).To(Equal(opsv1.StepPhaseSucceeded), s.ID)
	}
	injected := faults.total()
	t.Logf("injected Kubernetes API errors: %v", injected)
	g.Expect(injected).To(HaveKey("GET nodes"), "the steps' Node reads failed")
	g.Expect(injected).To(HaveKey("PATCH nodes"), "cordoning failed")
	g.Expect(injected).To(HaveKey("PATCH operation status"), "status writes failed")
	for k, n := range mutationCounts(f) {
		g.Expect(n).To(Equal(1), k)
	}
	g.Expect(nodesOf(g, "ae-old")).To(BeEmpty())
	g.Expect(podsOn(g, ns)).To(BeEmpty(), "the old nodes' pods were evicted")
}
