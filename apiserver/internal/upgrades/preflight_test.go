package upgrades_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/upgrades"
	"github.com/tidbcloud/ops-server/apiserver/internal/upgrades/upgradestest"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
)

func report(g Gomega, b []byte) (opsv1.PreflightReport, map[string]opsv1.PreflightCheck) {
	var rep opsv1.PreflightReport
	g.Expect(json.Unmarshal(b, &rep)).To(Succeed(), string(b))
	byName := map[string]opsv1.PreflightCheck{}
	for _, c := range rep.Checks {
		byName[c.Name] = c
	}
	return rep, byName
}

// TestPreflight: POST …/preflight answers with the report of the checks
// ops-operator runs at start, creates nothing, takes no lock and makes no
// mutating cloud call; a PodDisruptionBudget with maxUnavailable 0 over a
// vmstorage Pod on a node group being replaced fails it, naming both; a
// request POST refuses is refused the same way.
func TestPreflight(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	a := serveAPI(t, env.NewNamespace(t), func(s *upgrades.Service) { s.Live = env.Client })
	mutationsBefore := 0
	for _, op := range []string{mock.OpStartControlPlaneUpgrade, mock.OpStartNodeGroupUpgrade, mock.OpStartCreateNodeGroup, mock.OpStartDeleteNodeGroup, mock.OpStartAddonUpdate} {
		mutationsBefore += countCalls(op)
	}

	code, body := a.do(http.MethodPost, upgrades.BasePath+"/preflight", seedRequest, nil)
	g.Expect(code).To(Equal(http.StatusOK), string(body))
	rep, checks := report(g, body)
	g.Expect(rep.TargetVersion).To(Equal("1.30"))
	g.Expect(checks).To(HaveLen(7))
	g.Expect(checks[opsv1.PreflightCheckVersionSkew].Result).To(Equal(opsv1.PreflightPass))
	g.Expect(checks[opsv1.PreflightCheckNodeGroups].Result).To(Equal(opsv1.PreflightPass))
	g.Expect(checks[opsv1.PreflightCheckAddons].Result).To(Equal(opsv1.PreflightPass))
	g.Expect(checks[opsv1.PreflightCheckAddonCompatibility].Result).To(Equal(opsv1.PreflightWarn), "the mock cloud has no compatibility data")
	g.Expect(checks[opsv1.PreflightCheckCapacity].Result).To(Equal(opsv1.PreflightWarn), "vmstorage is blue-green")
	g.Expect(checks[opsv1.PreflightCheckDisruptionBudgets].Result).To(Equal(opsv1.PreflightPass))
	g.Expect(rep.Result).To(Equal(opsv1.PreflightWarn))

	// A vmstorage Pod on the vmstorage node group, guarded by a budget
	// that never allows an eviction.
	podNS := env.NewNamespace(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: podNS, Name: "vmstorage-vmcluster-0", Labels: map[string]string{"app.kubernetes.io/name": "vmstorage"}},
		Spec:       corev1.PodSpec{NodeName: "dev-cluster-vmstorage-node-0", Containers: []corev1.Container{{Name: "vmstorage", Image: "victoriametrics/vmstorage"}}},
	}
	g.Expect(env.Client.Create(ctx, pod)).To(Succeed())
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	g.Expect(env.Client.Status().Update(ctx, pod)).To(Succeed())
	maxUnavailable := intstr.FromInt32(0)
	g.Expect(env.Client.Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: podNS, Name: "vmstorage-vmcluster"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &maxUnavailable,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "vmstorage"}}},
	})).To(Succeed())

	code, body = a.do(http.MethodPost, upgrades.BasePath+"/preflight", seedRequest, nil)
	g.Expect(code).To(Equal(http.StatusOK), string(body))
	rep, checks = report(g, body)
	g.Expect(rep.Result).To(Equal(opsv1.PreflightFail))
	pdb := checks[opsv1.PreflightCheckDisruptionBudgets]
	g.Expect(pdb.Result).To(Equal(opsv1.PreflightFail))
	g.Expect(strings.Join(pdb.Evidence, "\n")).To(ContainSubstring("PodDisruptionBudget " + podNS + "/vmstorage-vmcluster (maxUnavailable 0"))
	g.Expect(strings.Join(pdb.Evidence, "\n")).To(ContainSubstring(podNS + "/vmstorage-vmcluster-0 on node dev-cluster-vmstorage-node-0 of node group \"vmstorage\""))
	g.Expect(pdb.Hint).NotTo(BeEmpty())

	// Nothing was created, locked or changed in the cloud.
	g.Expect(a.count()).To(Equal(0))
	leases := &coordinationv1.LeaseList{}
	g.Expect(env.Client.List(ctx, leases, client.InNamespace(a.ns))).To(Succeed())
	g.Expect(leases.Items).To(BeEmpty())
	mutationsAfter := 0
	for _, op := range []string{mock.OpStartControlPlaneUpgrade, mock.OpStartNodeGroupUpgrade, mock.OpStartCreateNodeGroup, mock.OpStartDeleteNodeGroup, mock.OpStartAddonUpdate} {
		mutationsAfter += countCalls(op)
	}
	g.Expect(mutationsAfter).To(Equal(mutationsBefore))

	// Problems the cloud shows are a 200 with result fail; a request POST
	// refuses is the same 400.
	twoAhead := upgradestest.Mutate(func(m map[string]any) {
		m["k8sClusterName"], m["region"], m["cloudProvider"], m["targetVersion"] = "dev-cluster", "local", "mock", "1.31"
		upgradestest.NodeGroup(m, 0)["nodeGroupName"] = "gone"
	})
	code, body = a.do(http.MethodPost, upgrades.BasePath+"/preflight", twoAhead, nil)
	g.Expect(code).To(Equal(http.StatusOK), string(body))
	_, checks = report(g, body)
	g.Expect(checks[opsv1.PreflightCheckVersionSkew].Evidence).To(ContainElement(ContainSubstring("more than one minor version ahead")))
	g.Expect(checks[opsv1.PreflightCheckNodeGroups].Evidence).To(ConsistOf(`node group "gone" does not exist`))

	bad := upgradestest.Mutate(func(m map[string]any) {
		m["k8sClusterName"], m["region"], m["cloudProvider"] = "dev-cluster", "local", "mock"
		delete(upgradestest.NodeGroup(m, 0), "strategy")
	})
	code, body = a.do(http.MethodPost, upgrades.BasePath+"/preflight", bad, nil)
	g.Expect(code).To(Equal(http.StatusBadRequest), string(body))
	g.Expect(violations(body)).To(ConsistOf("nodeGroupUpgrades[0].strategy"))
	code, body = a.do(http.MethodPost, upgrades.BasePath+"/preflight", upgradestest.ValidBody, nil)
	g.Expect(code).To(Equal(http.StatusBadRequest), "eks is not configured on this server: %s", body)
	g.Expect(violations(body)).To(ConsistOf("cloudProvider"))
}

// TestPreflightReportsRemovedAPIsOfHelmReleases: a release stored as
// Helm's Secret driver stores it, in the vmcluster namespace, that renders
// an API version removed by the target is reported with its kind,
// apiVersion and release; the removed versions the API server no longer
// serves are skipped for live objects (a real discovery miss).
func TestPreflightReportsRemovedAPIsOfHelmReleases(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := &mock.Provider{Client: env.Client}
	g.Expect(p.Seed(ctx, cloud.ClusterRef{Provider: cloud.Mock, Name: "legacy", Region: "local"}, mock.ClusterState{
		Version: "1.24",
		NodeGroups: map[string]*mock.NodeGroupState{
			"observability-ng": {Size: 1, InstanceTypes: []string{"m5.xlarge"}},
			"vmstorage":        {Size: 1, InstanceTypes: []string{"r5.xlarge"}},
		},
		Addons: map[string]*mock.AddonState{"vpc-cni": {Version: "v1.18.3", AvailableVersions: []string{"v1.18.3", "v1.18.5-eksbuild.1"}}},
	})).To(Succeed())
	err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: opsv1.VMClusterNamespace}})
	g.Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "%v", err)
	// As Helm's Secret storage driver writes a release (helm.sh/helm/v4
	// pkg/storage/driver: data.release = base64(gzip(JSON)), labels owner,
	// name, status, version); the driver itself is not imported, as it
	// pulls in Helm's SQL driver.
	manifest := "---\n# Source: legacy/templates/cronjob.yaml\napiVersion: batch/v1beta1\nkind: CronJob\nmetadata:\n  name: compact\n" +
		"---\n# Source: legacy/templates/svc.yaml\napiVersion: v1\nkind: Service\nmetadata:\n  name: compact\n"
	raw, err := json.Marshal(map[string]any{"name": "legacy-cronjobs", "namespace": opsv1.VMClusterNamespace, "version": 1,
		"info": map[string]any{"status": "deployed"}, "manifest": manifest})
	g.Expect(err).NotTo(HaveOccurred())
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err = zw.Write(raw)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(zw.Close()).To(Succeed())
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: opsv1.VMClusterNamespace, Name: "sh.helm.release.v1.legacy-cronjobs.v1",
			Labels: map[string]string{"owner": "helm", "name": "legacy-cronjobs", "status": "deployed", "version": "1"}},
		Type: "helm.sh/release.v1",
		Data: map[string][]byte{"release": []byte(base64.StdEncoding.EncodeToString(gz.Bytes()))},
	}
	g.Expect(env.Client.Create(ctx, secret)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), secret) })

	a := serveAPI(t, env.NewNamespace(t), func(s *upgrades.Service) { s.Live = env.Client })
	body := upgradestest.Mutate(func(m map[string]any) {
		m["k8sClusterName"], m["region"], m["cloudProvider"], m["targetVersion"] = "legacy", "local", "mock", "1.25"
	})
	code, out := a.do(http.MethodPost, upgrades.BasePath+"/preflight", body, nil)
	g.Expect(code).To(Equal(http.StatusOK), string(out))
	rep, checks := report(g, out)
	g.Expect(rep.Result).To(Equal(opsv1.PreflightFail))
	removed := checks[opsv1.PreflightCheckRemovedAPIs]
	g.Expect(removed.Result).To(Equal(opsv1.PreflightFail))
	g.Expect(removed.Evidence).To(ConsistOf(
		`Helm release observability/legacy-cronjobs renders CronJob "compact" with apiVersion batch/v1beta1, removed in Kubernetes 1.25; use batch/v1`))
}
