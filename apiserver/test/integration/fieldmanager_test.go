package integration

import (
	"context"
	"net/http"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/apiserver/internal/upgrades"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// TestEveryWriteCarriesTheFieldManager sets --field-manager and checks that
// the objects every resource writes (a vmcluster's HelmRelease and
// HelmRepository, an upgrade operation, a backup) name that manager, and
// no other name of ops-apiserver's, in their managedFields: the manager is
// set once, on the client every service is handed (app.New), not by each
// service.
func TestEveryWriteCarriesTheFieldManager(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	const manager = "portal-under-test"
	configure := withMockCloud(t, ns, "fm-cluster")
	s := startServer(t, ns, func(c *config.Config) {
		configure(c)
		c.FieldManager = manager
	})

	s.create(map[string]any{"name": "fm", "values": map[string]any{"retentionPeriod": "3"}})
	// An update is a second write of the HelmRelease (a JSON patch).
	code, body := s.do(http.MethodPut, itemPath("fm"), `{"values":{"retentionPeriod":"4"}}`)
	g.Expect(code).To(Equal(http.StatusAccepted), string(body))
	code, body = s.do(http.MethodPost, upgrades.BasePath, `{"k8sClusterName":"fm-cluster","region":"local","cloudProvider":"mock","targetVersion":"1.30"}`)
	g.Expect(code).To(Equal(http.StatusAccepted), string(body))
	code, body = s.do(http.MethodPost, vmclusters.BasePath+"/fm/backups", `{"destination":{"url":"fs:///srv/backups/fm"}}`)
	g.Expect(code).To(Equal(http.StatusAccepted), string(body))

	managers := func(obj client.Object) []string {
		var out []string
		for _, e := range obj.GetManagedFields() {
			out = append(out, e.Manager)
		}
		return out
	}
	hr := &helmv2.HelmRelease{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fm"}, hr)).To(Succeed())
	repo := &sourcev1.HelmRepository{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fm"}, repo)).To(Succeed())
	objects := map[string]client.Object{"HelmRelease": hr, "HelmRepository": repo}
	for _, kind := range []string{"ClusterUpgradeOperationList", "ClusterBackupList"} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(opsv1.GroupVersion.WithKind(kind))
		g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1), kind)
		objects[kind] = &list.Items[0]
	}
	for kind, obj := range objects {
		got := managers(obj)
		g.Expect(got).To(ContainElement(manager), "%s is written with the configured manager", kind)
		// Nothing ops-apiserver wrote is under the default name, nor under
		// the client's default (the binary's name) as a write without a
		// manager would be.
		g.Expect(got).NotTo(ContainElement("ops-server"), kind)
		g.Expect(got).NotTo(ContainElement("integration.test"), kind)
	}
}
