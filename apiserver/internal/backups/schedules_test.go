package backups_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/backups"
	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/apiserver/internal/idempotency"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

func (a *api) schedules(vmcluster string, rest ...string) string {
	p := "/api/v1/observability-ops/vmclusters/" + vmcluster + "/backupSchedules"
	for _, r := range rest {
		p += r
	}
	return p
}

func schedule(t *testing.T, b []byte) backups.BackupSchedule {
	t.Helper()
	var out backups.BackupSchedule
	NewWithT(t).Expect(json.Unmarshal(b, &out)).To(Succeed(), string(b))
	return out
}

func (a *api) scheduleCount() int {
	a.t.Helper()
	list := &opsv1.ClusterBackupScheduleList{}
	NewWithT(a.t).Expect(env.Client.List(context.Background(), list, client.InNamespace(a.backupNS))).To(Succeed())
	return len(list.Items)
}

// TestScheduleLifecycle: POST (202, the server's default destination,
// the vmcluster's labels for the operator to copy onto the backups), a
// retry with the same Idempotency-Key (200), GET by name and id, list,
// PUT, DELETE.
func TestScheduleLifecycle(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t, apiOptions{defaults: config.BackupsConfig{Destination: "fs:///backups/dev", FSRoots: []string{"/backups"}}})
	id := a.vmcluster("vmcluster")
	body := `{"name":"nightly","schedule":"0 3 * * *","keep_last":7,"keep_days":30}`
	hdr := map[string]string{idempotency.Header: "k1"}
	code, b := a.do(http.MethodPost, a.schedules("vmcluster"), body, hdr)
	g.Expect(code).To(Equal(http.StatusAccepted), string(b))
	s := schedule(t, b)
	g.Expect(s.Name).To(Equal("vmclusters/vmcluster/backupSchedules/nightly"))
	g.Expect(s.VMClusterID).To(Equal(id))
	g.Expect(s.Destination.URL).To(Equal("fs:///backups/dev"))
	g.Expect(s.State).To(Equal("PENDING"))
	g.Expect(s.RetainedBackups).To(BeEmpty())

	obj := &opsv1.ClusterBackupSchedule{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: a.backupNS, Name: "nightly"}, obj)).To(Succeed())
	g.Expect(obj.Spec).To(Equal(opsv1.ClusterBackupScheduleSpec{
		Schedule: "0 3 * * *", VMCluster: opsv1.VMClusterReference{Namespace: a.ns, Name: "vmcluster"},
		Destination: opsv1.BackupDestination{URL: "fs:///backups/dev"}, KeepLast: ptr.To[int32](7), KeepDays: ptr.To[int32](30),
	}))
	g.Expect(obj.Labels).To(HaveKeyWithValue(opsv1.LabelVMClusterID, id))
	g.Expect(obj.Labels).To(HaveKeyWithValue(vmclusters.LabelVMCluster, "vmcluster"))

	// The retry: the same schedule, 200; the same name without the key: 409.
	code, b = a.do(http.MethodPost, a.schedules("vmcluster"), body, hdr)
	g.Expect(code).To(Equal(http.StatusOK), string(b))
	g.Expect(schedule(t, b).ID).To(Equal(s.ID))
	code, b = a.do(http.MethodPost, a.schedules("vmcluster"), body, nil)
	g.Expect(code).To(Equal(http.StatusConflict), string(b))
	g.Expect(a.scheduleCount()).To(Equal(1))

	for _, p := range []string{a.schedules("vmcluster", "/nightly"), a.schedules(id, "/", s.ID)} {
		code, b = a.do(http.MethodGet, p, "", nil)
		g.Expect(code).To(Equal(http.StatusOK), "%s: %s", p, b)
		g.Expect(schedule(t, b).ID).To(Equal(s.ID))
	}
	code, b = a.do(http.MethodGet, a.schedules("vmcluster"), "", nil)
	g.Expect(code).To(Equal(http.StatusOK), string(b))
	var list backups.ScheduleListResponse
	g.Expect(json.Unmarshal(b, &list)).To(Succeed())
	g.Expect(list.BackupSchedules).To(HaveLen(1))

	code, b = a.do(http.MethodPut, a.schedules("vmcluster", "/nightly"), `{"schedule":"@hourly","keep_last":3,"suspend":true}`, nil)
	g.Expect(code).To(Equal(http.StatusOK), string(b))
	s = schedule(t, b)
	g.Expect(s.Schedule).To(Equal("@hourly"))
	g.Expect(s.KeepDays).To(BeNil())
	g.Expect(s.Suspend).To(BeTrue())
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: a.backupNS, Name: "nightly"}, obj)).To(Succeed())
	g.Expect(obj.Spec.KeepLast).To(Equal(ptr.To[int32](3)))
	g.Expect(obj.Spec.VMCluster.Name).To(Equal("vmcluster"))

	code, b = a.do(http.MethodDelete, a.schedules("vmcluster", "/nightly"), "", nil)
	g.Expect(code).To(Equal(http.StatusOK), string(b))
	code, b = a.do(http.MethodGet, a.schedules("vmcluster", "/nightly"), "", nil)
	g.Expect(code).To(Equal(http.StatusNotFound), string(b))
}

// TestInvalidSchedulesCreateNothing: every bad field is a 400 naming it.
func TestInvalidSchedulesCreateNothing(t *testing.T) {
	a := newAPI(t, apiOptions{defaults: config.BackupsConfig{Destination: "fs:///backups/dev", FSRoots: []string{"/backups"}}})
	a.vmcluster("vmcluster")
	for _, tc := range []struct {
		name, body, field, words string
	}{
		{"bad cron", `{"name":"a","schedule":"every day","keep_last":1}`, "schedule", "is not a valid cron expression"},
		{"seconds field", `{"name":"a","schedule":"0 0 3 * * *","keep_last":1}`, "schedule", "is not a valid cron expression"},
		{"time zone", `{"name":"a","schedule":"TZ=UTC 0 3 * * *","keep_last":1}`, "schedule", "UTC"},
		{"no retention", `{"name":"a","schedule":"@daily"}`, "keep_last", "set keep_last, keep_days or both"},
		{"keep_last 0", `{"name":"a","schedule":"@daily","keep_last":0}`, "keep_last", "between 1 and 1000"},
		{"keep_days too long", `{"name":"a","schedule":"@daily","keep_days":4000}`, "keep_days", "between 1 and 3650"},
		{"no name", `{"schedule":"@daily","keep_last":1}`, "name", "is required"},
		{"long name", `{"name":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","schedule":"@daily","keep_last":1}`, "name", "at most 50"},
		{"bad destination", `{"name":"a","schedule":"@daily","keep_last":1,"destination":{"url":"http://x"}}`, "destination.url", ""},
		{"fs outside the roots", `{"name":"a","schedule":"@daily","keep_last":1,"destination":{"url":"fs:///etc"}}`, "destination.url", "backup fs roots"},
		{"unknown field", `{"name":"a","schedule":"@daily","keep_last":1,"keep":2}`, "keep", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			code, b := a.do(http.MethodPost, a.schedules("vmcluster"), tc.body, nil)
			g.Expect(code).To(Equal(http.StatusBadRequest), string(b))
			_, violations := parseError(t, b)
			g.Expect(violations).To(HaveKey(tc.field), string(b))
			g.Expect(violations[tc.field]).To(ContainSubstring(tc.words))
		})
	}
	NewWithT(t).Expect(a.scheduleCount()).To(Equal(0))
}
