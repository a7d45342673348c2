package vmclusterops_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/apiserver/internal/server"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusterops"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters/vmclusterstest"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

var (
	env       *testenv.Environment
	informers cache.Cache
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	var err error
	env, err = testenv.Start(testenv.Options{AddToScheme: []func(*runtime.Scheme) error{opsv1.AddToScheme}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	informers, err = vmclusterstest.StartCache(ctx, env, &opsv1.VMClusterOperation{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

type api struct {
	t   *testing.T
	url string
	ns  string
	vm  *vmclusters.Service
}

func newAPI(t *testing.T) *api {
	ns := env.NewNamespace(t)
	vm := &vmclusters.Service{
		Store: &vmclusters.KubeStore{Cache: informers, Client: client.WithFieldOwner(env.Client, "ops-server"), Namespace: ns, CacheWait: 10 * time.Second},
		Translator: vmclusters.Translator{
			Namespace: ns, Chart: vmclusters.ChartSource{Name: "vmcluster", DefaultVersion: "0.1.0", URL: "http://127.0.0.1:1"},
			Flux: config.Default().Flux,
		},
	}
	svc := &vmclusterops.Service{Reader: informers, Writer: env.Client, Namespace: ns, VMClusters: vm,
		Caller: func(context.Context) string { return "robot" }, CacheWait: 10 * time.Second}
	e, err := server.New(server.Options{}, &vmclusterops.Handler{Svc: svc})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return &api{t: t, url: srv.URL, ns: ns, vm: vm}
}

// vmcluster creates a vmcluster's HelmRelease (no Flux runs) with values.
func (a *api) vmcluster(name, values string) string {
	a.t.Helper()
	g := NewWithT(a.t)
	hr := a.vm.Translator.Release(vmclusters.CreateRequest{Name: name, Values: []byte(values)}, time.Now())
	g.Expect(env.Client.Create(context.Background(), hr)).To(Succeed())
	g.Eventually(func() error {
		_, err := a.vm.Get(context.Background(), string(hr.UID))
		return err
	}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
	return string(hr.UID)
}

func (a *api) path(vmcluster string, rest ...string) string {
	return "/api/v1/observability-ops/vmclusters/" + vmcluster + "/operations" + strings.Join(rest, "")
}

func (a *api) do(method, path, body string, hdr map[string]string) (int, []byte) {
	a.t.Helper()
	req, err := http.NewRequest(method, a.url+path, bytes.NewBufferString(body))
	NewWithT(a.t).Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := contractClient(a.t, nil).Do(req)
	NewWithT(a.t).Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (a *api) count() int {
	list := &opsv1.VMClusterOperationList{}
	NewWithT(a.t).Expect(env.Client.List(context.Background(), list, client.InNamespace(a.ns))).To(Succeed())
	return len(list.Items)
}

type errorBody struct {
	Error struct {
		Message string `json:"message"`
		Details []struct {
			Reason          string `json:"reason"`
			FieldViolations []struct {
				Field       string `json:"field"`
				Description string `json:"description"`
			} `json:"fieldViolations"`
		} `json:"details"`
	} `json:"error"`
}

func fields(t *testing.T, b []byte) map[string]string {
	var e errorBody
	NewWithT(t).Expect(json.Unmarshal(b, &e)).To(Succeed(), string(b))
	out := map[string]string{}
	for _, d := range e.Error.Details {
		for _, v := range d.FieldViolations {
			out[v.Field] = v.Description
		}
	}
	return out
}

// Every refused request names its field and creates nothing.
func TestCreateRefusalsNameTheirField(t *testing.T) {
	a := newAPI(t)
	id := a.vmcluster("refusals", `{"replicationFactor":2,"vmstorage":{"replicaCount":5}}`)
	cases := []struct{ name, body, field, words string }{
		{"no type", `{}`, "type", "is required"},
		{"unknown type", `{"type":"Upgrade"}`, "type", "must be one of"},
		{"sub-object missing", `{"type":"HorizontalScaling"}`, "horizontal_scaling", "is required for type HorizontalScaling"},
		{"sub-object of another type", `{"type":"HorizontalScaling","horizontal_scaling":{"vminsert":2},"restart":{"components":["vmstorage"]}}`, "restart", "is only valid with type Restart"},
		{"nothing to scale", `{"type":"HorizontalScaling","horizontal_scaling":{}}`, "horizontal_scaling", "at least one"},
		{"replicas 0", `{"type":"HorizontalScaling","horizontal_scaling":{"vmselect":0}}`, "horizontal_scaling.vmselect", "between 1 and 100"},
		{"unknown field", `{"type":"HorizontalScaling","horizontal_scaling":{"vmagent":2}}`, "vmagent", "unknown field"},
		{"resource kind", `{"type":"VerticalScaling","vertical_scaling":{"vmstorage":{"limits":{"gpu":"1"}}}}`, "vertical_scaling.vmstorage.limits", "only cpu and memory"},
		{"quantity", `{"type":"VerticalScaling","vertical_scaling":{"vmstorage":{"requests":{"cpu":"lots"}}}}`, "vertical_scaling.vmstorage.requests.cpu", "quantity"},
		{"restart nothing", `{"type":"Restart","restart":{"components":[]}}`, "restart.components", "at least one"},
		{"restart twice", `{"type":"Restart","restart":{"components":["vmstorage","vmstorage"]}}`, "restart.components[1]", "listed twice"},
		{"order unknown", `{"type":"Restart","restart":{"components":["vmstorage"]},"order":["vmauth"]}`, "order[0]", "must be one of"},
		{"step timeout", `{"type":"Restart","restart":{"components":["vmstorage"]},"step_timeout":"10s"}`, "step_timeout", "between 1m and 6h"},
		{"below replicationFactor", `{"type":"HorizontalScaling","horizontal_scaling":{"vmstorage":1}}`, "horizontal_scaling.vmstorage", opsv1.ReplicationRiskProblem(5, 1, 2, false)},
		{"removing replicationFactor replicas at once", `{"type":"HorizontalScaling","horizontal_scaling":{"vmstorage":3}}`, "horizontal_scaling.vmstorage", opsv1.ReplicationRiskProblem(5, 3, 2, false)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			code, b := a.do(http.MethodPost, a.path(id), tc.body, nil)
			g.Expect(code).To(Equal(http.StatusBadRequest), string(b))
			f := fields(t, b)
			g.Expect(f).To(HaveKey(tc.field), string(b))
			g.Expect(f[tc.field]).To(ContainSubstring(tc.words))
			g.Expect(a.count()).To(BeZero())
		})
	}
	// Fewer than replicationFactor replicas at once, or acknowledged, is
	// accepted.
	for _, body := range []string{`{"type":"HorizontalScaling","horizontal_scaling":{"vmstorage":4}}`,
		`{"type":"HorizontalScaling","horizontal_scaling":{"vmstorage":3},"acknowledge_replication_risk":true}`} {
		code, b := a.do(http.MethodPost, a.path(id)+"?dry_run=true", body, nil)
		NewWithT(t).Expect(code).To(Equal(http.StatusOK), "%s: %s", body, b)
	}
}

// One active operation per vmcluster (409 naming it); dry run creates
// nothing; pause, resume, cancel set the spec; list filters.
func TestLifecycle(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t)
	id := a.vmcluster("life", `{"replicationFactor":2}`)

	code, b := a.do(http.MethodPost, a.path(id)+"?dry_run=true", `{"type":"HorizontalScaling","horizontal_scaling":{"vmstorage":1},"acknowledge_replication_risk":true}`, nil)
	g.Expect(code).To(Equal(http.StatusOK), string(b))
	var manifest opsv1.VMClusterOperation
	g.Expect(json.Unmarshal(b, &manifest)).To(Succeed())
	g.Expect(manifest.Kind).To(Equal(opsv1.VMClusterOperationKind))
	g.Expect(manifest.Spec.VMCluster).To(Equal(opsv1.VMClusterReference{Namespace: a.ns, Name: "life"}))
	g.Expect(*manifest.Spec.HorizontalScaling.VMStorage).To(Equal(int32(1)))
	g.Expect(manifest.Spec.AcknowledgeReplicationRisk).To(BeTrue())
	g.Expect(a.count()).To(BeZero(), "a dry run creates nothing")

	key := map[string]string{"Idempotency-Key": "k1"}
	body := `{"type":"Restart","restart":{"components":["vmstorage"]},"step_timeout":"20m"}`
	code, b = a.do(http.MethodPost, a.path(id), body, key)
	g.Expect(code).To(Equal(http.StatusAccepted), string(b))
	var op vmclusterops.Operation
	g.Expect(json.Unmarshal(b, &op)).To(Succeed())
	g.Expect(op.Phase).To(Equal("Pending"))
	g.Expect(op.Request.StepTimeout).To(Equal("20m0s"))
	short := op.Name[strings.LastIndex(op.Name, "/")+1:]
	code, b = a.do(http.MethodPost, a.path(id), body, key)
	g.Expect(code).To(Equal(http.StatusOK), "a retry returns the same operation: %s", b)

	code, b = a.do(http.MethodPost, a.path(id), `{"type":"HorizontalScaling","horizontal_scaling":{"vminsert":2}}`, nil)
	g.Expect(code).To(Equal(http.StatusConflict), string(b))
	g.Expect(string(b)).To(ContainSubstring(short))
	g.Expect(a.count()).To(Equal(1))

	for _, step := range []struct{ path, method string }{{"/pause", http.MethodPut}, {"/resume", http.MethodPut}, {"", http.MethodDelete}} {
		code, b = a.do(step.method, a.path(id, "/", op.ID, step.path), "", nil)
		g.Expect(code).To(BeElementOf(http.StatusOK, http.StatusAccepted), string(b))
	}
	obj := &opsv1.VMClusterOperation{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: a.ns, Name: short}, obj)).To(Succeed())
	g.Expect(obj.Spec.Paused).To(BeFalse())
	g.Expect(obj.Spec.Cancel).To(BeTrue())
	g.Expect(obj.Annotations[opsv1.AnnotationInitiatedBy]).To(Equal("robot"))

	code, b = a.do(http.MethodGet, a.path(id)+"?type=Restart&phase=Pending", "", nil)
	g.Expect(code).To(Equal(http.StatusOK), string(b))
	var list vmclusterops.ListResponse
	g.Expect(json.Unmarshal(b, &list)).To(Succeed())
	g.Expect(list.Operations).To(HaveLen(1))
	code, b = a.do(http.MethodGet, a.path(id)+"?type=HorizontalScaling", "", nil)
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(json.Unmarshal(b, &list)).To(Succeed())
	g.Expect(list.Operations).To(BeEmpty())
	code, _ = a.do(http.MethodGet, a.path(id, "/no-such-op"), "", nil)
	g.Expect(code).To(Equal(http.StatusNotFound))
}
