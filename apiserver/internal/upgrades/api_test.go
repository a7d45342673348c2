package upgrades_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/idempotency"
	"github.com/tidbcloud/ops-server/apiserver/internal/server"
	"github.com/tidbcloud/ops-server/apiserver/internal/upgrades"
	"github.com/tidbcloud/ops-server/apiserver/internal/upgrades/upgradestest"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

var (
	env    *testenv.Environment
	faults = &mock.Faults{}
)

func TestMain(m *testing.M) {
	os.Exit(testenv.RunMain(m, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{opsv1.AddToScheme}}, func(e *testenv.Environment) error {
		env = e
		p := &mock.Provider{Client: env.Client, Faults: faults}
		return p.Seed(context.Background(), cloud.ClusterRef{Provider: cloud.Mock, Name: "dev-cluster", Region: "local"}, mock.ClusterState{
			Version: "1.29",
			NodeGroups: map[string]*mock.NodeGroupState{
				"observability-ng": {Size: 2, InstanceTypes: []string{"m5.xlarge"}},
				"vmstorage":        {Size: 3, InstanceTypes: []string{"r5.xlarge"}, Taints: []cloud.Taint{{Key: "dedicated", Value: "vmstorage", Effect: "NoSchedule"}}},
			},
			Addons: map[string]*mock.AddonState{"vpc-cni": {Version: "v1.18.3", AvailableVersions: []string{"v1.18.3", "v1.18.5-eksbuild.1"}}},
		})
	}))
}

type api struct {
	t   *testing.T
	url string
	ns  string
}

// newAPI serves the upgrade API for one namespace of the test API server.
func newAPI(t *testing.T) *api {
	return serveAPI(t, env.NewNamespace(t))
}

// serveAPI serves the upgrade API for the namespace: two calls for one
// namespace are two replicas of ops-apiserver.
func serveAPI(t *testing.T, ns string, opts ...func(*upgrades.Service)) *api {
	svc := &upgrades.Service{
		Reader: env.Client, Writer: env.Client, Namespace: ns,
		Providers: cloud.NewRegistry(&mock.Provider{Client: env.Client, Faults: faults}),
		Caller:    func(context.Context) string { return "system:serviceaccount:ci:robot" },
	}
	for _, o := range opts {
		o(svc)
	}
	e, err := server.New(server.Options{}, &upgrades.Handler{Svc: svc})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return &api{t: t, url: srv.URL, ns: ns}
}

type errorBody struct {
	Error struct {
		Code    int    `json:"code"`
		Status  string `json:"status"`
		Message string `json:"message"`
		Details []struct {
			FieldViolations []struct {
				Field       string `json:"field"`
				Description string `json:"description"`
			} `json:"fieldViolations"`
		} `json:"details"`
	} `json:"error"`
}

func (a *api) do(method, path, body string, hdr map[string]string) (int, []byte) {
	a.t.Helper()
	resp := a.raw(method, path, body, hdr)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// raw sends a request; the caller closes the body.
func (a *api) raw(method, path, body string, hdr map[string]string) *http.Response {
	a.t.Helper()
	req, err := http.NewRequest(method, a.url+path, bytes.NewBufferString(body))
	NewWithT(a.t).Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := contractClient(a.t, nil).Do(req)
	NewWithT(a.t).Expect(err).NotTo(HaveOccurred())
	a.t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func (a *api) op(b []byte) upgrades.Operation {
	var op upgrades.Operation
	NewWithT(a.t).Expect(json.Unmarshal(b, &op)).To(Succeed(), string(b))
	return op
}

func (a *api) manifest(b []byte) upgrades.Manifest {
	var m upgrades.Manifest
	NewWithT(a.t).Expect(json.Unmarshal(b, &m)).To(Succeed(), string(b))
	return m
}

func (a *api) count() int {
	list := &opsv1.ClusterUpgradeOperationList{}
	NewWithT(a.t).Expect(env.Client.List(context.Background(), list, client.InNamespace(a.ns))).To(Succeed())
	return len(list.Items)
}

func violations(b []byte) []string {
	var e errorBody
	_ = json.Unmarshal(b, &e)
	var out []string
	for _, d := range e.Error.Details {
		for _, v := range d.FieldViolations {
			out = append(out, v.Field)
		}
	}
	return out
}

// seedRequest is upgradestest.ValidBody on the cluster TestMain seeds in
// the simulated cloud.
var seedRequest = upgradestest.Mutate(func(m map[string]any) {
	m["k8sClusterName"], m["region"], m["cloudProvider"] = "dev-cluster", "local", "mock"
})

func TestCreateGetAndDryRun(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t)

	code, body := a.do(http.MethodPost, upgrades.BasePath+"/dry-run", seedRequest, nil)
	g.Expect(code).To(Equal(http.StatusOK), string(body))
	dry := a.manifest(body)
	g.Expect(a.count()).To(Equal(0), "dry-run creates nothing")
	g.Expect(dry.Spec.NodeGroupUpgrades[1].VMStorageSTSName).To(Equal("vmstorage-vmcluster"))
	g.Expect(dry.Spec.NodeGroupUpgrades[1].VMStorageSTSNamespace).To(Equal("observability"))

	code, body = a.do(http.MethodPost, upgrades.BasePath, seedRequest, nil)
	g.Expect(code).To(Equal(http.StatusAccepted), string(body))
	op := a.op(body)
	g.Expect(op.ID).NotTo(BeEmpty())
	g.Expect(op.Phase).To(Equal("Pending"))
	g.Expect(op.InitiatedBy).To(Equal("system:serviceaccount:ci:robot"))

	obj := &opsv1.ClusterUpgradeOperation{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: a.ns, Name: op.Name}, obj)).To(Succeed())
	g.Expect(dry.Spec).To(Equal(obj.Spec), "dry-run shows exactly the spec POST creates")
	g.Expect(dry.Metadata.Labels).To(Equal(obj.Labels))
	g.Expect(dry.Metadata.Annotations).To(Equal(obj.Annotations))
	g.Expect(dry.Metadata.Namespace).To(Equal(obj.Namespace))
	g.Expect(obj.Spec.NodeGroupUpgrades[1].VMStorageSTSName).To(Equal("vmstorage-vmcluster"))
	g.Expect(obj.Status.ObservedGeneration).To(Equal(int64(-1)))

	for _, id := range []string{op.ID, op.Name} {
		code, body = a.do(http.MethodGet, upgrades.BasePath+"/"+id, "", nil)
		g.Expect(code).To(Equal(http.StatusOK))
		g.Expect(a.op(body).ID).To(Equal(op.ID))
	}
	code, body = a.do(http.MethodGet, upgrades.BasePath+"/nope", "", nil)
	g.Expect(code).To(Equal(http.StatusNotFound), string(body))
}

func TestIdempotencyKey(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t)
	hdr := map[string]string{idempotency.Header: "req-42"}
	code, body := a.do(http.MethodPost, upgrades.BasePath, seedRequest, hdr)
	g.Expect(code).To(Equal(http.StatusAccepted), string(body))
	first := a.op(body)
	code, body = a.do(http.MethodPost, upgrades.BasePath, seedRequest, hdr)
	g.Expect(code).To(Equal(http.StatusOK), string(body))
	g.Expect(a.op(body).ID).To(Equal(first.ID), "the retry returns the operation the first attempt created")
	g.Expect(a.count()).To(Equal(1))

	other := bytes.Replace([]byte(seedRequest), []byte(`"1.30"`), []byte(`"1.30.2"`), 1)
	code, body = a.do(http.MethodPost, upgrades.BasePath, string(other), hdr)
	g.Expect(code).To(Equal(http.StatusConflict), string(body))
	g.Expect(a.count()).To(Equal(1))
}

func TestInvalidRequestsCreateNothing(t *testing.T) {
	a := newAPI(t)
	cases := map[string]struct {
		body  string
		field string
	}{
		"malformed":            {`{"k8sClusterName":`, "body"},
		"unknown field":        {`{"k8sClusterName":"c","region":"r","cloudProvider":"mock","targetVersion":"1.30","extra":1}`, "extra"},
		"bad provider":         {`{"k8sClusterName":"c","region":"r","cloudProvider":"azure","targetVersion":"1.30"}`, "cloudProvider"},
		"bad version":          {`{"k8sClusterName":"c","region":"r","cloudProvider":"mock","targetVersion":"thirty"}`, "targetVersion"},
		"bad schedule":         {`{"k8sClusterName":"c","region":"r","cloudProvider":"mock","targetVersion":"1.30","schedule":"soon"}`, "schedule"},
		"addons on gke":        {`{"k8sClusterName":"c","region":"r","cloudProvider":"gke","targetVersion":"1.30","clusterAddons":[{"name":"a","version":"v1"}]}`, "clusterAddons"},
		"rollout needs values": {`{"k8sClusterName":"c","region":"r","cloudProvider":"mock","targetVersion":"1.30","nodeGroupUpgrades":[{"nodeGroupName":"a","strategy":"blue-green","newNodeGroupName":"b","requiresVMStorageRollout":true}]}`, "nodeGroupUpgrades[0].vmClusterHelmValues"},
		"duplicate group":      {`{"k8sClusterName":"c","region":"r","cloudProvider":"mock","targetVersion":"1.30","nodeGroupUpgrades":[{"nodeGroupName":"a","strategy":"in-place"},{"nodeGroupName":"a","strategy":"in-place"}]}`, "nodeGroupUpgrades[1].nodeGroupName"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			for _, path := range []string{upgrades.BasePath, upgrades.BasePath + "/dry-run"} {
				code, body := a.do(http.MethodPost, path, tc.body, nil)
				g.Expect(code).To(Equal(http.StatusBadRequest), string(body))
				g.Expect(violations(body)).To(ContainElement(tc.field), string(body))
			}
			g.Expect(a.count()).To(Equal(0))
		})
	}
}

func TestListFiltersAndPages(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t)
	for i := 0; i < 7; i++ {
		cluster := "alpha"
		if i%2 == 1 {
			cluster = "beta"
		}
		// One region each: one active upgrade per (provider, region, cluster).
		body := fmt.Sprintf(`{"k8sClusterName":%q,"region":"r%d","cloudProvider":"mock","targetVersion":"1.30"}`, cluster, i)
		code, b := a.do(http.MethodPost, upgrades.BasePath, body, nil)
		g.Expect(code).To(Equal(http.StatusAccepted), string(b))
	}
	// Mark one Failed, as the operator would.
	list := &opsv1.ClusterUpgradeOperationList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(a.ns))).To(Succeed())
	failed := list.Items[0].DeepCopy()
	failed.Status.Phase = opsv1.UpgradePhaseFailed
	g.Expect(env.Client.Status().Update(context.Background(), failed)).To(Succeed())

	seen := map[string]bool{}
	token := ""
	pages := 0
	for {
		path := upgrades.BasePath + "?k8sClusterName=alpha&pageSize=2"
		if token != "" {
			path += "&pageToken=" + token
		}
		code, body := a.do(http.MethodGet, path, "", nil)
		g.Expect(code).To(Equal(http.StatusOK), string(body))
		var page upgrades.ListResponse
		g.Expect(json.Unmarshal(body, &page)).To(Succeed())
		pages++
		for _, op := range page.UpgradeOperations {
			g.Expect(op.Spec.K8sClusterName).To(Equal("alpha"))
			g.Expect(seen[op.ID]).To(BeFalse(), "repeat")
			seen[op.ID] = true
		}
		if page.NextPageToken == "" {
			break
		}
		token = page.NextPageToken
	}
	g.Expect(seen).To(HaveLen(4))
	g.Expect(pages).To(Equal(2))

	code, body := a.do(http.MethodGet, upgrades.BasePath+"?status=Failed", "", nil)
	g.Expect(code).To(Equal(http.StatusOK))
	var page upgrades.ListResponse
	g.Expect(json.Unmarshal(body, &page)).To(Succeed())
	g.Expect(page.UpgradeOperations).To(HaveLen(1))
	g.Expect(page.UpgradeOperations[0].ID).To(Equal(string(failed.UID)))

	code, body = a.do(http.MethodGet, upgrades.BasePath+"?pageToken=bogus", "", nil)
	g.Expect(code).To(Equal(http.StatusBadRequest))
	g.Expect(violations(body)).To(ContainElement("pageToken"))
}

func setStatus(g Gomega, ns, name string, mut func(*opsv1.ClusterUpgradeOperationStatus)) {
	obj := &opsv1.ClusterUpgradeOperation{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)).To(Succeed())
	mut(&obj.Status)
	g.Expect(env.Client.Status().Update(context.Background(), obj)).To(Succeed())
}

func TestPauseResumeDelete(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t)
	code, body := a.do(http.MethodPost, upgrades.BasePath, `{"k8sClusterName":"c","region":"r","cloudProvider":"mock","targetVersion":"1.30"}`, nil)
	g.Expect(code).To(Equal(http.StatusAccepted))
	op := a.op(body)
	now := metav1.Now()
	setStatus(g, a.ns, op.Name, func(s *opsv1.ClusterUpgradeOperationStatus) {
		s.Phase, s.StartTime = opsv1.UpgradePhaseRunning, &now
	})

	// PUTs are idempotent: resuming a running operation and pausing a
	// paused one answer 200 with it and write nothing.
	code, body = a.do(http.MethodPut, upgrades.BasePath+"/"+op.ID+"/resume", "", nil)
	g.Expect(code).To(Equal(http.StatusOK), "not paused: %s", body)
	g.Expect(a.op(body).Paused).To(BeFalse())
	code, body = a.do(http.MethodPut, upgrades.BasePath+"/"+op.ID+"/pause", "", nil)
	g.Expect(code).To(Equal(http.StatusOK), string(body))
	g.Expect(a.op(body).Paused).To(BeTrue())
	before := &opsv1.ClusterUpgradeOperation{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: a.ns, Name: op.Name}, before)).To(Succeed())
	code, body = a.do(http.MethodPut, upgrades.BasePath+"/"+op.ID+"/pause", "", nil)
	g.Expect(code).To(Equal(http.StatusOK), string(body))
	g.Expect(a.op(body).Paused).To(BeTrue())
	after := &opsv1.ClusterUpgradeOperation{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: a.ns, Name: op.Name}, after)).To(Succeed())
	g.Expect(after.ResourceVersion).To(Equal(before.ResourceVersion), "a repeated pause writes nothing")
	code, body = a.do(http.MethodPut, upgrades.BasePath+"/"+op.Name+"/resume", "", nil)
	g.Expect(code).To(Equal(http.StatusOK), string(body))
	g.Expect(a.op(body).Paused).To(BeFalse())
	code, _ = a.do(http.MethodPut, upgrades.BasePath+"/nope/pause", "", nil)
	g.Expect(code).To(Equal(http.StatusNotFound))

	// A running operation is cancelled, not deleted.
	code, body = a.do(http.MethodDelete, upgrades.BasePath+"/"+op.ID, "", nil)
	g.Expect(code).To(Equal(http.StatusAccepted), string(body))
	var del upgrades.DeleteResponse
	g.Expect(json.Unmarshal(body, &del)).To(Succeed())
	g.Expect(del.Result).To(Equal("Cancelling"))
	g.Expect(del.Operation.CancelRequest).To(BeTrue())
	g.Expect(a.count()).To(Equal(1))

	// A finished one is deleted; pausing it is a 409.
	setStatus(g, a.ns, op.Name, func(s *opsv1.ClusterUpgradeOperationStatus) { s.Phase = opsv1.UpgradePhaseCancelled })
	code, body = a.do(http.MethodPut, upgrades.BasePath+"/"+op.ID+"/pause", "", nil)
	g.Expect(code).To(Equal(http.StatusConflict))
	g.Expect(string(body)).To(ContainSubstring("finished"))
	code, body = a.do(http.MethodDelete, upgrades.BasePath+"/"+op.ID, "", nil)
	g.Expect(code).To(Equal(http.StatusOK), string(body))
	g.Expect(json.Unmarshal(body, &del)).To(Succeed())
	g.Expect(del.Result).To(Equal("Deleted"))
	g.Expect(a.count()).To(Equal(0))
	code, _ = a.do(http.MethodDelete, upgrades.BasePath+"/"+op.ID, "", nil)
	g.Expect(code).To(Equal(http.StatusNotFound))

	// One that has not started is deleted outright.
	code, body = a.do(http.MethodPost, upgrades.BasePath, `{"k8sClusterName":"c","region":"r","cloudProvider":"mock","targetVersion":"1.30"}`, nil)
	g.Expect(code).To(Equal(http.StatusAccepted))
	code, body = a.do(http.MethodDelete, upgrades.BasePath+"/"+a.op(body).ID, "", nil)
	g.Expect(code).To(Equal(http.StatusOK), string(body))
	g.Expect(a.count()).To(Equal(0))
}

func TestNodeGroupsAndAddons(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t)
	q := "?k8sClusterName=dev-cluster&region=local&cloudProvider=mock"
	code, body := a.do(http.MethodGet, upgrades.NodeGroupsPath+q, "", nil)
	g.Expect(code).To(Equal(http.StatusOK), string(body))
	var groups struct{ NodeGroups []upgrades.NodeGroup }
	g.Expect(json.Unmarshal(body, &groups)).To(Succeed())
	g.Expect(groups.NodeGroups).To(HaveLen(2))
	g.Expect(groups.NodeGroups[1].Name).To(Equal("vmstorage"))
	g.Expect(groups.NodeGroups[1].DesiredSize).To(Equal(int32(3)))
	g.Expect(groups.NodeGroups[1].Taints).To(HaveLen(1))

	code, body = a.do(http.MethodGet, upgrades.AddonsPath+q, "", nil)
	g.Expect(code).To(Equal(http.StatusOK), string(body))
	var addons struct{ Addons []upgrades.ClusterAddon }
	g.Expect(json.Unmarshal(body, &addons)).To(Succeed())
	g.Expect(addons.Addons[0].AvailableVersions).To(ContainElement("v1.18.5-eksbuild.1"))

	code, body = a.do(http.MethodGet, upgrades.NodeGroupsPath+"?region=local", "", nil)
	g.Expect(code).To(Equal(http.StatusBadRequest))
	g.Expect(violations(body)).To(ConsistOf("cloudProvider", "k8sClusterName"))
	code, body = a.do(http.MethodGet, upgrades.AddonsPath+"?k8sClusterName=c&region=r&cloudProvider=gke", "", nil)
	g.Expect(code).To(Equal(http.StatusBadRequest))
	g.Expect(string(body)).To(ContainSubstring("not supported by this provider"))
	code, body = a.do(http.MethodGet, upgrades.NodeGroupsPath+"?k8sClusterName=c&region=r&cloudProvider=eks", "", nil)
	g.Expect(code).To(Equal(http.StatusBadRequest), "eks is not configured on this server: %s", body)
	code, body = a.do(http.MethodGet, upgrades.NodeGroupsPath+"?k8sClusterName=missing&region=local&cloudProvider=mock", "", nil)
	g.Expect(code).To(Equal(http.StatusNotFound), string(body))

	faults.Add(mock.Fault{Op: mock.OpListNodeGroups, Nth: countCalls(mock.OpListNodeGroups) + 1, Kind: mock.Throttle})
	code, body = a.do(http.MethodGet, upgrades.NodeGroupsPath+q, "", nil)
	g.Expect(code).To(Equal(http.StatusServiceUnavailable), string(body))
	faults.Add(mock.Fault{Op: mock.OpListNodeGroups, Nth: countCalls(mock.OpListNodeGroups) + 1, Kind: mock.PermanentError, Message: "AccessDenied"})
	code, body = a.do(http.MethodGet, upgrades.NodeGroupsPath+q, "", nil)
	g.Expect(code).To(Equal(http.StatusBadGateway), string(body))
	g.Expect(string(body)).To(ContainSubstring("AccessDenied"))
}

// countCalls is how many calls of op the shared faults have counted.
func countCalls(op string) int { return faults.Calls(op) }
