package restores

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/backups"
	"github.com/tidbcloud/ops-server/apiserver/internal/config"
)

// TestRestoresOffByDefault: without backups.restoresEnabled (the default:
// ops-operator restores only with its local runner in this version) a
// restore and a vmcluster seeded from a backup are refused before anything
// is read or written, naming the setting.
func TestRestoresOffByDefault(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(config.Default().Backups.RestoresEnabled).To(BeFalse())
	svc := &Service{Backups: &backups.Service{Defaults: config.Default().Backups}}

	_, _, err := svc.Create(ctx, "any-vmcluster", &Request{Backup: "b"}, "")
	var apiErr *apierror.Error
	g.Expect(errors.As(err, &apiErr)).To(BeTrue(), "%v", err)
	g.Expect(apiErr.Reason).To(Equal(ReasonRestoresUnavailable))
	g.Expect(apiErr.Error()).To(ContainSubstring("backups.restoresEnabled"))

	err = Seeder{Svc: svc, Namespace: "observability"}.CheckSeed(ctx, "copy", 2, "b")
	g.Expect(errors.As(err, &apiErr)).To(BeTrue(), "%v", err)
	g.Expect(apiErr.Violations).To(HaveLen(1))
	g.Expect(apiErr.Violations[0].Field).To(Equal("restore_from.backup"))
	g.Expect(apiErr.Violations[0].Description).To(ContainSubstring("backups.restoresEnabled"))
}
