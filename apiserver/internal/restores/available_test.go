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

// TestRestoresCanBeTurnedOff: restores are on by default; with
// backups.restoresEnabled turned off a restore and a vmcluster seeded from
// a backup are refused before anything is read or written, naming the
// setting.
func TestRestoresCanBeTurnedOff(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(config.Default().Backups.RestoresEnabled).To(BeTrue())
	off := config.Default().Backups
	off.RestoresEnabled = false
	svc := &Service{Backups: &backups.Service{Defaults: off}}

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
