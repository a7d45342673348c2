package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/backups"
	"github.com/tidbcloud/ops-server/apiserver/internal/idempotency"
	"github.com/tidbcloud/ops-server/apiserver/internal/upgrades"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// TestReplicasShareNoState runs two ops-apiservers (the chart's two
// ops-server Pods) on one namespace and sends each step of a client's
// conversation to the other replica than the step before: a page token
// from A pages on B; an etag from A is honoured by B (and B's from A,
// whose cache may not have seen B's write yet); a vmcluster created on A is
// changed on B at once; a POST retried with its Idempotency-Key on B
// returns what A created, for upgrade operations and backups; and B's
// one-active-upgrade check sees A's operation. Nothing of this may live in
// one replica's memory (docs/install.md, "High availability").
func TestReplicasShareNoState(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	configure := withMockCloud(t, ns, "ha-cluster")
	a := startServer(t, ns, configure)
	b := startServer(t, ns, configure)
	t.Cleanup(func() {
		_ = env.Client.DeleteAllOf(ctx, &helmv2.HelmRelease{}, client.InNamespace(ns))
		_ = env.Client.DeleteAllOf(ctx, &sourcev1.HelmRepository{}, client.InNamespace(ns))
		for _, kind := range []string{"ClusterUpgradeOperation", "ClusterBackup"} {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(opsv1.GroupVersion.WithKind(kind))
			_ = env.Client.DeleteAllOf(ctx, u, client.InNamespace(ns))
		}
	})

	// ---- a vmcluster created on A is changed on B at once, by etag ----
	created := a.create(map[string]any{"name": "ha-0", "values": map[string]any{"retentionPeriod": "3"}})
	g.Expect(created.ETag).NotTo(BeEmpty())
	code, etagB, body := b.doIfMatch(http.MethodPut, itemPath("ha-0"), `{"values":{"retentionPeriod":"4"}}`, `"`+created.ETag+`"`)
	g.Expect(code).To(Equal(http.StatusAccepted), "B honours A's etag: %s", body)
	g.Expect(etagB).NotTo(Equal(`"` + created.ETag + `"`))
	// A's etag is stale now, on either replica; B's works on A.
	for name, s := range map[string]*apiServer{"A": a, "B": b} {
		code, _, body = s.doIfMatch(http.MethodPut, itemPath("ha-0"), `{"values":{"retentionPeriod":"9"}}`, `"`+created.ETag+`"`)
		g.Expect(code).To(Equal(http.StatusPreconditionFailed), "%s: %s", name, body)
	}
	code, etagA, body := a.doIfMatch(http.MethodPut, itemPath("ha-0"), `{"values":{"retentionPeriod":"5"}}`, etagB)
	g.Expect(code).To(Equal(http.StatusAccepted), "A honours B's etag: %s", body)
	g.Eventually(func(g Gomega) {
		for _, s := range []*apiServer{a, b} {
			code, etag, body := s.doIfMatch(http.MethodGet, itemPath("ha-0"), "", "")
			g.Expect(code).To(Equal(http.StatusOK), string(body))
			g.Expect(etag).To(Equal(etagA), "both replicas answer with the same etag")
			g.Expect(decode[vmclusters.VMCluster](t, body).ValuesOverrides).To(MatchJSON(`{"retentionPeriod":"5"}`))
		}
	}, fluxTimeout, poll).Should(Succeed())

	// ---- a page token from A pages on B ----
	var want []string
	for i := 1; i <= 6; i++ {
		name := fmt.Sprintf("ha-%d", i)
		a.create(map[string]any{"name": name})
	}
	for i := 0; i <= 6; i++ {
		want = append(want, fmt.Sprintf("vmclusters/ha-%d", i))
	}
	// Both caches hold all seven (lists read from each replica's cache).
	for _, s := range []*apiServer{a, b} {
		g.Eventually(func(g Gomega) {
			code, body := s.do(http.MethodGet, vmclusters.BasePath+"?page_size=100", nil)
			g.Expect(code).To(Equal(http.StatusOK))
			g.Expect(decode[vmclusters.ListResponse](t, body).VMClusters).To(HaveLen(len(want)))
		}, fluxTimeout, poll).Should(Succeed())
	}
	var got []string
	replicas := []*apiServer{a, b}
	query := url.Values{"page_size": {"2"}}
	for page := 0; ; page++ {
		code, body := replicas[page%2].do(http.MethodGet, vmclusters.BasePath+"?"+query.Encode(), nil)
		g.Expect(code).To(Equal(http.StatusOK), "page %d: %s", page, body)
		resp := decode[vmclusters.ListResponse](t, body)
		for _, v := range resp.VMClusters {
			got = append(got, v.Name)
		}
		if resp.NextPageToken == "" {
			break
		}
		g.Expect(page).To(BeNumerically("<", len(want)), "the pages end")
		query.Set("page_token", resp.NextPageToken)
	}
	g.Expect(got).To(ConsistOf(want), "every vmcluster exactly once, across replicas")

	// ---- an upgrade POST retried with its Idempotency-Key on B ----
	const upgrade = `{"k8sClusterName":"ha-cluster","region":"local","cloudProvider":"mock","targetVersion":"1.30"}`
	key := map[string]string{idempotency.Header: "ha-upgrade-1"}
	code, body, _ = a.doWith(http.MethodPost, upgrades.BasePath, upgrade, key)
	g.Expect(code).To(Equal(http.StatusAccepted), string(body))
	op := decode[upgrades.Operation](t, body)
	g.Expect(op.ID).NotTo(BeEmpty())
	code, body, _ = b.doWith(http.MethodPost, upgrades.BasePath, upgrade, key)
	g.Expect(code).To(Equal(http.StatusOK), "a replay answers 200: %s", body)
	g.Expect(decode[upgrades.Operation](t, body).ID).To(Equal(op.ID), "B returns the operation A created")
	// The same key for another request is a conflict on B too.
	code, body, _ = b.doWith(http.MethodPost, upgrades.BasePath, strings.Replace(upgrade, "1.30", "1.31", 1), key)
	g.Expect(code).To(Equal(http.StatusConflict), string(body))
	// B's one-active-upgrade-per-cluster check sees A's operation.
	code, body = b.do(http.MethodPost, upgrades.BasePath, upgrade)
	g.Expect(code).To(Equal(http.StatusConflict), string(body))
	g.Expect(string(body)).To(ContainSubstring(path.Base(op.Name)))
	g.Expect(countOf(g, ns, "ClusterUpgradeOperationList")).To(Equal(1), "one operation for all these requests")

	// ---- a backup POST retried with its Idempotency-Key on B ----
	backupsPath := vmclusters.BasePath + "/ha-0/backups"
	const backup = `{"destination":{"url":"fs:///srv/backups/ha"}}`
	key = map[string]string{idempotency.Header: "ha-backup-1"}
	code, body, _ = a.doWith(http.MethodPost, backupsPath, backup, key)
	g.Expect(code).To(Equal(http.StatusAccepted), string(body))
	bk := decode[backups.Backup](t, body)
	g.Expect(bk.ID).NotTo(BeEmpty())
	code, body, _ = b.doWith(http.MethodPost, backupsPath, backup, key)
	g.Expect(code).To(Equal(http.StatusOK), "a replay answers 200: %s", body)
	g.Expect(decode[backups.Backup](t, body).ID).To(Equal(bk.ID), "B returns the backup A created")
	code, body, _ = b.doWith(http.MethodPost, backupsPath, `{"destination":{"url":"fs:///srv/backups/other"}}`, key)
	g.Expect(code).To(Equal(http.StatusConflict), string(body))
	g.Expect(countOf(g, ns, "ClusterBackupList")).To(Equal(1), "one backup for all these requests")
	// And B reads it (from its own cache, once that has it).
	g.Eventually(func(g Gomega) {
		code, body := b.do(http.MethodGet, backupsPath+"/"+strings.TrimPrefix(bk.Name, "vmclusters/ha-0/backups/"), nil)
		g.Expect(code).To(Equal(http.StatusOK), string(body))
		g.Expect(decode[backups.Backup](t, body).ID).To(Equal(bk.ID))
	}, fluxTimeout, poll).Should(Succeed())
}

// countOf counts the objects of one of our list kinds in ns (read as
// unstructured: the environment's scheme has the Flux kinds only).
func countOf(g Gomega, ns, listKind string) int {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(opsv1.GroupVersion.WithKind(listKind))
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	return len(list.Items)
}
