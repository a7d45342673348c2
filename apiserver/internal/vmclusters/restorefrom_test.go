package vmclusters

import (
	"context"
	"fmt"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
)

// seedLog records, in order, every write of a create with restore_from.
type seedLog struct {
	calls    []string
	checkErr error
	pending  bool
}

func (l *seedLog) CheckSeed(_ context.Context, name string, replicas int, backup string) error {
	l.calls = append(l.calls, fmt.Sprintf("check %s %d %s", name, replicas, backup))
	return l.checkErr
}

func (l *seedLog) EnsureSeed(_ context.Context, hr *helmv2.HelmRelease, backup string) error {
	l.calls = append(l.calls, fmt.Sprintf("seed %s %s", hr.Name, backup))
	return nil
}

func (l *seedLog) EnsureHold(_ context.Context, name string, replicas int) error {
	l.calls = append(l.calls, fmt.Sprintf("hold %s %d", name, replicas))
	return nil
}

func (l *seedLog) SeedPending(_ context.Context, name string) (bool, error) {
	l.calls = append(l.calls, "pending? "+name)
	return l.pending, nil
}

// createStore is fakeStore whose CreateRelease records the release (an
// existing one: AlreadyExists).
type createStore struct {
	*fakeStore
	log *seedLog
}

func (s createStore) CreateRelease(_ context.Context, hr *helmv2.HelmRelease) error {
	if s.live != nil && s.live.Name == hr.Name {
		return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "helmreleases"}, hr.Name)
	}
	s.log.calls = append(s.log.calls, "release "+hr.Name)
	hr.UID = types.UID("u-" + hr.Name)
	s.live, s.cached = hr.DeepCopy(), hr.DeepCopy()
	return nil
}

func newSeedService(t *testing.T) (*Service, *seedLog, createStore) {
	tr := testTranslator(t, ChartSource{Name: "vmcluster", DefaultVersion: "0.1.0"})
	log := &seedLog{}
	st := createStore{fakeStore: &fakeStore{}, log: log}
	return &Service{Store: st, Translator: tr, Seeder: log, Now: func() time.Time { return now }}, log, st
}

// The hold ConfigMap is written after every check and before the
// HelmRelease, then the seeding restore; a refused request writes
// nothing; an identical repeat never writes the hold again and ensures
// the restore only while a replica is still held for it.
func TestCreateRestoreFromHoldsBeforeTheRelease(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	req := CreateRequest{Name: "copy", Values: []byte(`{"vmstorage":{"replicaCount":3}}`), RestoreFrom: &RestoreFrom{Backup: "b1"}}

	svc, log, _ := newSeedService(t)
	_, err := svc.Create(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(log.calls).To(Equal([]string{"check copy 3 b1", "hold copy 3", "release copy", "seed copy b1"}))

	log.calls = nil
	_, err = svc.Create(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(log.calls).To(Equal([]string{"check copy 3 b1", "pending? copy"}), "restored already: no hold, no restore")
	log.calls, log.pending = nil, true
	_, err = svc.Create(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(log.calls).To(Equal([]string{"check copy 3 b1", "pending? copy", "seed copy b1"}))

	svc, log, _ = newSeedService(t)
	log.checkErr = apierror.InvalidArgument("the request is invalid", apierror.Violation("restore_from.backup", "backup %q not found", "nope"))
	_, err = svc.Create(ctx, req)
	g.Expect(apiErr(t, err).Code).To(Equal(400))
	g.Expect(log.calls).To(Equal([]string{"check copy 3 b1"}), "nothing written on a 4xx")
}
