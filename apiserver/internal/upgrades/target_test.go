package upgrades_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/kustomize"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/apiserver/internal/upgrades"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// rolloutRequest is a blue-green upgrade of node group vmstorage whose
// VMStorage rollout names target ("" omits vmCluster).
func rolloutRequest(target string) string {
	field := ""
	if target != "" {
		field = `, "vmCluster": "` + target + `"`
	}
	return `{"k8sClusterName": "dev-cluster", "region": "local", "cloudProvider": "mock", "targetVersion": "1.30",
  "nodeGroupUpgrades": [{"nodeGroupName": "vmstorage", "strategy": "blue-green", "requiresVMStorageRollout": true,
    "newNodeGroupName": "vmstorage-130", "vmClusterHelmValues": {}` + field + `}]}`
}

// TestRolloutTarget: a node-group upgrade names its rollout target by the
// vmclusters API's name or id; it is resolved at request time to the
// VMCluster the vmcluster chart deploys (named after the release, in its
// namespace), and one that does not exist is refused before anything is
// created. Omitted, the target is observability/vmcluster.
func TestRolloutTarget(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	vm := &vmclusters.Service{
		Store: &vmclusters.KubeStore{Cache: env.Client, Client: client.WithFieldOwner(env.Client, "ops-server"), Namespace: ns, CacheWait: time.Second},
		Translator: vmclusters.Translator{
			Namespace: ns, Chart: vmclusters.ChartSource{Name: "vmcluster", DefaultVersion: "0.1.0", URL: "http://127.0.0.1:1"},
			Flux: config.Default().Flux,
		},
	}
	hr := vm.Translator.Release(vmclusters.CreateRequest{Name: "metrics", Values: []byte(`{}`)}, time.Now())
	g.Expect(env.Client.Create(ctx, hr)).To(Succeed())
	a := serveAPI(t, ns, func(s *upgrades.Service) { s.VMClusters = vm })

	code, body := a.do(http.MethodPost, upgrades.BasePath+"/dry-run", rolloutRequest("metrics"), nil)
	g.Expect(code).To(Equal(http.StatusOK), string(body))
	// The dry run is the CR: the target resolved to its VMCluster.
	g.Expect(a.manifest(body).Spec.NodeGroupUpgrades[0].VMCluster).To(Equal(&opsv1.VMClusterReference{Namespace: ns, Name: "metrics"}))
	g.Expect(a.manifest(body).Spec.NodeGroupUpgrades[0].VMStorageSTSName).To(Equal("vmstorage-metrics"))

	code, body = a.do(http.MethodPost, upgrades.BasePath, rolloutRequest("metrics"), nil)
	g.Expect(code).To(Equal(http.StatusAccepted), string(body))
	op := a.op(body)
	g.Expect(op.Spec.NodeGroupUpgrades[0].VMCluster).To(Equal("metrics"))
	obj := &opsv1.ClusterUpgradeOperation{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: op.Name}, obj)).To(Succeed())
	ng := obj.Spec.NodeGroupUpgrades[0]
	g.Expect(ng.VMCluster).To(Equal(&opsv1.VMClusterReference{Namespace: ns, Name: "metrics"}))
	g.Expect(ng.VMStorageSTSNamespace).To(Equal(ns))
	g.Expect(ng.VMStorageSTSName).To(Equal("vmstorage-metrics"))
	g.Expect(env.Client.Delete(ctx, obj)).To(Succeed())

	// Omitted: the default target, recorded in the stored spec.
	a2 := newAPI(t)
	code, body = a2.do(http.MethodPost, upgrades.BasePath+"/dry-run", rolloutRequest(""), nil)
	g.Expect(code).To(Equal(http.StatusOK), string(body))
	g.Expect(a2.manifest(body).Spec.NodeGroupUpgrades[0].VMCluster).To(Equal(&opsv1.VMClusterReference{Namespace: opsv1.VMClusterNamespace, Name: opsv1.VMClusterName}))
	g.Expect(a2.manifest(body).Spec.NodeGroupUpgrades[0].VMStorageSTSNamespace).To(Equal(opsv1.VMClusterNamespace))

	// Refused: a vmcluster that does not exist, and one named without a
	// rollout. (By id the vmclusters service looks it up in the informer
	// cache's UID index, which this test's direct client does not have.)
	for name, tc := range map[string]struct {
		body, field, text string
		code              int
	}{
		"unknown name": {rolloutRequest("absent"), "nodeGroupUpgrades[0].vmCluster", `vmcluster \"absent\" does not exist`, http.StatusBadRequest},
		"without rollout": {`{"k8sClusterName": "dev-cluster", "region": "local", "cloudProvider": "mock", "targetVersion": "1.30",
  "nodeGroupUpgrades": [{"nodeGroupName": "vmstorage", "strategy": "blue-green", "newNodeGroupName": "vmstorage-130", "vmCluster": "metrics"}]}`, "nodeGroupUpgrades[0].vmCluster", "requiresVMStorageRollout", http.StatusBadRequest},
	} {
		for _, path := range []string{upgrades.BasePath, upgrades.BasePath + "/dry-run"} {
			code, body := a.do(http.MethodPost, path, tc.body, nil)
			g.Expect(code).To(Equal(tc.code), "%s %s: %s", name, path, body)
			g.Expect(violations(body)).To(Equal([]string{tc.field}), "%s: %s", name, body)
			g.Expect(string(body)).To(ContainSubstring(tc.text), name)
		}
	}
	g.Expect(a.count()).To(Equal(0), "nothing created for a refused target")

	// A PUT of the vmcluster's values keeps the post-renderer an upgrade
	// recorded on its HelmRelease (it replaces spec.values only).
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(hr), hr)).To(Succeed())
	recorded := []helmv2.PostRenderer{{Kustomize: &helmv2.Kustomize{Patches: []kustomize.Patch{{
		Target: &kustomize.Selector{Kind: "VMCluster", Name: "metrics"},
		Patch:  "# ops-server-vmstorage-rollout\n" + `{"apiVersion":"operator.victoriametrics.com/v1beta1","kind":"VMCluster","metadata":{"name":"metrics"},"spec":{"vmstorage":{"nodeSelector":{"ng":"new"}}}}`,
	}}}}}
	hr.Spec.PostRenderers = recorded
	g.Expect(env.Client.Update(ctx, hr)).To(Succeed())
	_, err := vm.Update(ctx, "metrics", vmclusters.UpdateRequest{Values: []byte(`{"vmselect":{"replicaCount":2}}`)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(hr), hr)).To(Succeed())
	g.Expect(string(hr.Spec.Values.Raw)).To(ContainSubstring(`"replicaCount":2`))
	g.Expect(hr.Spec.PostRenderers).To(Equal(recorded))

	// A vmcluster being deleted is refused too.
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(hr), hr)).To(Succeed())
	hr.Finalizers = []string{"test.ops/hold"}
	g.Expect(env.Client.Update(ctx, hr)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, hr)).To(Succeed())
	t.Cleanup(func() {
		cur := &helmv2.HelmRelease{}
		if env.Client.Get(context.Background(), client.ObjectKeyFromObject(hr), cur) == nil {
			cur.Finalizers = nil
			_ = env.Client.Update(context.Background(), cur)
		}
	})
	g.Eventually(func(g Gomega) {
		code, body := a.do(http.MethodPost, upgrades.BasePath, rolloutRequest("metrics"), nil)
		g.Expect(code).To(Equal(http.StatusBadRequest), string(body))
		g.Expect(string(body)).To(ContainSubstring("is being deleted"))
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(a.count()).To(Equal(0))
}
