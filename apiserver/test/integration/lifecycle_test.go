package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
)

func configMap(g Gomega, ns, release string) map[string]string {
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: release + "-config"}, cm)).To(Succeed())
	return cm.Data
}

// TestVMClusterLifecycle walks one vmcluster from an https repository
// through create, idempotent and conflicting creates, values change,
// chart upgrade and delete, checking what Flux and Helm did each time.
func TestVMClusterLifecycle(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	s := startServer(t, ns, nil)

	// ---- create ----
	values := map[string]any{"retentionPeriod": "7", "vmstorage": map[string]any{"replicaCount": 2}}
	body := map[string]any{"name": "c1", "values": values}
	created := s.create(body)
	g.Expect(created.Name).To(Equal("vmclusters/c1"))
	g.Expect(created.ID).To(MatchRegexp(`^[0-9a-f-]{36}$`))
	g.Expect(created.Status).To(Equal(vmclusters.StatusCreating))
	g.Expect(created.Endpoints).To(BeEmpty())
	g.Expect(created.ValuesOverrides).To(MatchJSON(`{"retentionPeriod":"7","vmstorage":{"replicaCount":2}}`))
	// The chart comes from a remote repository here, whose defaults the
	// server does not hold: values are the overrides (TestVMClusterLocalChart
	// shows the defaults merged in).
	g.Expect(created.Values).To(MatchJSON(created.ValuesOverrides))
	g.Expect(created.HelmReleaseInfo).To(Equal(vmclusters.HelmReleaseInfo{ReleaseName: "c1", ReleaseNamespace: ns, Chart: "vmcluster", Version: "0.1.0"}))

	hr := &helmv2.HelmRelease{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c1"}, hr)).To(Succeed())
	g.Expect(string(hr.UID)).To(Equal(created.ID))
	g.Expect(hr.Labels).To(HaveKeyWithValue(vmclusters.LabelManagedBy, vmclusters.ManagedBy))
	g.Expect(hr.Annotations).To(HaveKey(meta.ReconcileRequestAnnotation))
	g.Expect(hr.ManagedFields).To(ContainElement(HaveField("Manager", "ops-server")))
	repo := &sourcev1.HelmRepository{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c1"}, repo)).To(Succeed())
	g.Expect(repo.Spec.URL).To(Equal(chartRepoURL))
	g.Expect(repo.OwnerReferences).To(ContainElement(HaveField("UID", hr.UID)))

	// An identical repeat is answered with the same vmcluster...
	again := s.create(map[string]any{"name": "vmclusters/c1", "values": values, "helm_release_info": map[string]any{"version": "0.1.0"}})
	g.Expect(again.ID).To(Equal(created.ID))
	// ...a different body for the name is a conflict.
	code, b := s.do(http.MethodPost, vmclusters.BasePath, map[string]any{"name": "c1", "values": map[string]any{"retentionPeriod": "8"}})
	g.Expect(code).To(Equal(http.StatusConflict), string(b))
	g.Expect(errorOf(t, b).Error.Status).To(Equal("ALREADY_EXISTS"))

	// ---- running ----
	running := s.waitStatus(created.ID, vmclusters.StatusRunning)
	g.Expect(running.Endpoints).To(HaveKeyWithValue("prometheus", "http://vmselect-c1."+ns+".svc:8481/select/0/prometheus"))
	g.Expect(s.get("c1").ID).To(Equal(created.ID), "the name works as the id too")
	g.Eventually(func(g Gomega) {
		data := configMap(g, ns, "c1")
		g.Expect(data).To(HaveKeyWithValue("retentionPeriod", "7"))
		g.Expect(data).To(HaveKeyWithValue("vmstorageReplicas", "2"))
		g.Expect(data).To(HaveKeyWithValue("chartVersion", "0.1.0"))
	}).Should(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "vmselect-c1"}, &corev1.Service{})).To(Succeed())

	code, b = s.do(http.MethodGet, vmclusters.BasePath, nil)
	g.Expect(code).To(Equal(http.StatusOK))
	var list map[string][]map[string]any
	g.Expect(json.Unmarshal(b, &list)).To(Succeed())
	g.Expect(list["vmclusters"]).To(HaveLen(1))
	g.Expect(list["vmclusters"][0]).To(HaveKeyWithValue("status", "RUNNING"))
	g.Expect(list["vmclusters"][0]).NotTo(HaveKey("values"), "lists carry no values")

	// ---- change the values: they replace, not merge ----
	code, b = s.do(http.MethodPut, itemPath(created.ID), map[string]any{"values": map[string]any{"retentionPeriod": "14"}})
	g.Expect(code).To(Equal(http.StatusAccepted), string(b))
	updated := decode[vmclusters.VMCluster](t, b)
	g.Expect(updated.Status).To(Equal(vmclusters.StatusUpdating))
	g.Expect(updated.ValuesOverrides).To(MatchJSON(`{"retentionPeriod":"14"}`))
	s.waitStatus("c1", vmclusters.StatusRunning)
	g.Eventually(func(g Gomega) {
		data := configMap(g, ns, "c1")
		g.Expect(data).To(HaveKeyWithValue("retentionPeriod", "14"))
		g.Expect(data).To(HaveKeyWithValue("vmstorageReplicas", "1"), "the old vmstorage value is gone: the chart default applies")
	}).Should(Succeed())

	// ---- Day-2 chart upgrade, sending back the body GET returned ----
	current := s.get("c1")
	current.HelmReleaseInfo.Version = "0.2.0"
	code, b = s.do(http.MethodPut, itemPath("c1"), current)
	g.Expect(code).To(Equal(http.StatusAccepted), string(b))
	g.Expect(decode[vmclusters.VMCluster](t, b).Status).To(Equal(vmclusters.StatusUpdating))
	upgraded := s.waitStatus("c1", vmclusters.StatusRunning)
	g.Expect(upgraded.HelmReleaseInfo.Version).To(Equal("0.2.0"))
	// Like the ConfigMap below, the history may show the upgrade a moment
	// after RUNNING.
	g.Eventually(func(g Gomega) {
		info := s.get("c1").HelmReleaseInfo
		g.Expect(info.DeployedVersion).To(Equal("0.2.0"), "from the HelmRelease's history")
		g.Expect(info.LastAction).To(HaveValue(And(HaveField("Action", "upgrade"), HaveField("Result", "Succeeded"), HaveField("Time", Not(BeEmpty())))))
	}).Should(Succeed())
	g.Eventually(func(g Gomega) {
		data := configMap(g, ns, "c1")
		g.Expect(data).To(HaveKeyWithValue("chartVersion", "0.2.0"))
		g.Expect(data).To(HaveKeyWithValue("dedupInterval", "30s"))
		g.Expect(data).To(HaveKeyWithValue("retentionPeriod", "14"))
	}).Should(Succeed())
	// helm-controller may mark the new generation Ready before the
	// HelmChart has the new version, then upgrade: the history follows.
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(hr), hr)).To(Succeed())
		g.Expect(hr.Status.History.Latest().ChartVersion).To(Equal("0.2.0"))
	}).Should(Succeed())

	// A changed identity field is refused and changes nothing.
	current = s.get("c1")
	current.HelmReleaseInfo.ReleaseName = "other"
	code, b = s.do(http.MethodPut, itemPath("c1"), current)
	g.Expect(code).To(Equal(http.StatusBadRequest), string(b))
	g.Expect(violations(t, b)).To(ConsistOf("helm_release_info.release_name"))

	// A chart version the repository does not have: Flux cannot fetch it,
	// the last release keeps running, and the vmcluster says why.
	code, b = s.do(http.MethodPut, itemPath("c1"), map[string]any{"values": map[string]any{"retentionPeriod": "14"},
		"helm_release_info": map[string]any{"version": "9.9.9"}})
	g.Expect(code).To(Equal(http.StatusAccepted), string(b))
	g.Eventually(func(g Gomega) {
		v := s.get("c1")
		g.Expect(v.Status).To(Equal(vmclusters.StatusUpdating))
		g.Expect(v.StatusMessage).To(ContainSubstring("9.9.9"))
	}, fluxTimeout, poll).Should(Succeed(), func() string { return s.describe("c1") })
	g.Expect(configMap(g, ns, "c1")).To(HaveKeyWithValue("chartVersion", "0.2.0"))

	// ---- delete ----
	code, b = s.do(http.MethodDelete, itemPath(created.ID), nil)
	g.Expect(code).To(Equal(http.StatusAccepted), string(b))
	deleted := decode[vmclusters.VMCluster](t, b)
	g.Expect(deleted.Status).To(Equal(vmclusters.StatusDeleting))
	g.Expect(deleted.ID).To(Equal(created.ID))
	s.waitGone(created.ID)
	g.Eventually(func(g Gomega) {
		for _, obj := range []client.Object{&helmv2.HelmRelease{}, &sourcev1.HelmRepository{}} {
			err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c1"}, obj)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T: %v", obj, err)
		}
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ns + "-c1"}, &sourcev1.HelmChart{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "HelmChart: %v", err)
		err = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c1-config"}, &corev1.ConfigMap{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ConfigMap: %v", err)
		err = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "vmselect-c1"}, &corev1.Service{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Service: %v", err)
	}, fluxTimeout, poll).Should(Succeed(), func() string { return s.describe("c1") })

	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		code, _ = s.do(method, itemPath(created.ID), nil)
		g.Expect(code).To(Equal(http.StatusNotFound), method)
	}
	code, _ = s.do(http.MethodPut, itemPath("c1"), map[string]any{"values": map[string]any{}})
	g.Expect(code).To(Equal(http.StatusNotFound))
}

// TestVMClusterFailedRelease: values the chart's template rejects make
// the vmcluster FAILED with Helm's message; fixing the values recovers it.
func TestVMClusterFailedRelease(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := env.NewNamespace(t)
	s := startServer(t, ns, nil)

	created := s.create(map[string]any{"name": "broken", "values": map[string]any{"failOnPurpose": true}})
	failed := s.waitStatus(created.ID, vmclusters.StatusFailed)
	g.Expect(failed.StatusReason).To(Equal(helmv2.InstallFailedReason))
	g.Expect(failed.StatusMessage).To(ContainSubstring("failOnPurpose is set: the test chart refuses to render"))
	g.Expect(failed.Endpoints).To(BeEmpty())
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "broken-config"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue())

	code, b := s.do(http.MethodGet, vmclusters.BasePath+"?status=FAILED", nil)
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(decode[vmclusters.ListResponse](t, b).VMClusters).To(ConsistOf(HaveField("Name", "vmclusters/broken")))

	code, b = s.do(http.MethodPut, itemPath("broken"), map[string]any{"values": map[string]any{"failOnPurpose": false}})
	g.Expect(code).To(Equal(http.StatusAccepted), string(b))
	g.Expect(decode[vmclusters.VMCluster](t, b).Status).To(Equal(vmclusters.StatusCreating), "never installed, so the fix reads CREATING")
	s.waitStatus("broken", vmclusters.StatusRunning)
	g.Eventually(func(g Gomega) { configMap(g, ns, "broken") }).Should(Succeed())
}
