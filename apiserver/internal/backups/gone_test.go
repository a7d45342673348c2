package backups_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/backups"
	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
)

// TestBackupsOfADeletedVMCluster: once a vmcluster is gone its backups
// are still listed and read by its name (or former id); a new backup of
// it, or the backups of a name that never had any, are 404.
func TestBackupsOfADeletedVMCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	a := newAPI(t, apiOptions{defaults: config.BackupsConfig{Destination: "fs:///backups"}})
	id := a.vmcluster("gone")
	a.vmcluster("other")
	b1 := a.create("gone", "")
	b2 := a.create("gone", "")
	other := a.create("other", "")

	hr := &helmv2.HelmRelease{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: a.ns, Name: "gone"}, hr)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, hr)).To(Succeed())
	g.Eventually(func() bool {
		_, err := a.vm.Get(ctx, "gone")
		var e *apierror.Error
		return errors.As(err, &e) && e.Reason == vmclusters.ReasonNotFound
	}, 10*time.Second, 50*time.Millisecond).Should(BeTrue())

	names := func(l backups.ListResponse) []string {
		var out []string
		for _, b := range l.Backups {
			out = append(out, shortName(b))
		}
		return out
	}
	for _, by := range []string{"gone", id} {
		code, page, body := a.list(by, "")
		g.Expect(code).To(Equal(http.StatusOK), "%s: %s", by, body)
		g.Expect(names(page)).To(ConsistOf(shortName(b1), shortName(b2)), by)

		for _, b := range []backups.Backup{b1, b2} {
			for _, bid := range []string{shortName(b), b.ID} {
				code, body := a.do(http.MethodGet, a.path(by, "/", bid), "", nil)
				g.Expect(code).To(Equal(http.StatusOK), "%s/%s: %s", by, bid, body)
				g.Expect(a.backup(body).ID).To(Equal(b.ID))
			}
		}
		// Another vmcluster's backup is still not one of these.
		code, body = a.do(http.MethodGet, a.path(by, "/", shortName(other)), "", nil)
		g.Expect(code).To(Equal(http.StatusNotFound), string(body))
		reason, _ := parseError(t, body)
		g.Expect(reason).To(Equal(backups.ReasonNotFound))
	}

	// Pages work by name too.
	code, first, body := a.list("gone", "?page_size=1")
	g.Expect(code).To(Equal(http.StatusOK), string(body))
	g.Expect(first.Backups).To(HaveLen(1))
	g.Expect(first.NextPageToken).NotTo(BeEmpty())
	code, second, body := a.list("gone", "?page_size=1&page_token="+url.QueryEscape(first.NextPageToken))
	g.Expect(code).To(Equal(http.StatusOK), string(body))
	g.Expect(append(names(first), names(second)...)).To(ConsistOf(shortName(b1), shortName(b2)))
	code, _, body = a.list("other", "?page_token="+url.QueryEscape(first.NextPageToken))
	g.Expect(code).To(Equal(http.StatusBadRequest), "a token of another vmcluster: %s", body)

	// No new backup of a vmcluster that is gone; a name without backups
	// is still not found.
	n := a.count()
	code, body = a.do(http.MethodPost, a.path("gone"), "", nil)
	g.Expect(code).To(Equal(http.StatusNotFound), string(body))
	reason, _ := parseError(t, body)
	g.Expect(reason).To(Equal(vmclusters.ReasonNotFound))
	g.Expect(a.count()).To(Equal(n))
	code, _, body = a.list("never", "")
	g.Expect(code).To(Equal(http.StatusNotFound), string(body))
}
