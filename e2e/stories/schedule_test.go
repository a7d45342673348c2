package stories

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/e2e/suite"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// storyBackupSchedule: a backup schedule ticking every minute with
// keep_last 2, created through the REST API with no destination (the
// local stack's default, under its state directory). Once retention has
// deleted a backup, the schedule is suspended; when everything settled,
// exactly two backups are left, both Succeeded, and on disk exactly their
// data directories: the deleted backups' data is gone.
func storyBackupSchedule(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	base := runningVMCluster(t, "sched")
	schedules := base + "/backupSchedules"
	code, body := suite.Call(t, http.MethodPost, schedules, map[string]any{"name": "every-minute", "schedule": "* * * * *", "keep_last": 2})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	g.Expect(body["name"]).To(Equal("vmclusters/sched/backupSchedules/every-minute"))
	g.Expect(suite.Field(body, "destination.url")).To(Equal("fs://" + st.BackupRoot()))
	t.Cleanup(func() { suite.Call(t, http.MethodDelete, schedules+"/every-minute", nil) })

	// A bad cron expression is a 400 naming the field, and creates nothing.
	code, body = suite.Call(t, http.MethodPost, schedules, map[string]any{"name": "bad", "schedule": "every day", "keep_last": 2})
	g.Expect(code).To(Equal(http.StatusBadRequest), "%v", body)
	g.Expect(fmt.Sprint(body)).To(ContainSubstring("field:schedule"), "%v", body)
	g.Expect(fmt.Sprint(body)).To(ContainSubstring("is not a valid cron expression"), "%v", body)
	err := st.Env.Client.Get(ctx, client.ObjectKey{Namespace: obs, Name: "bad"}, &opsv1.ClusterBackupSchedule{})
	g.Expect(client.IgnoreNotFound(err)).To(Succeed())
	g.Expect(err).To(HaveOccurred())

	// Three ticks or more: retention deleted the oldest.
	g.Eventually(func(g Gomega) {
		code, body := suite.Call(t, http.MethodGet, schedules+"/every-minute", nil)
		g.Expect(code).To(Equal(http.StatusOK), "%v", body)
		g.Expect(body["deleted_backups"]).To(BeNumerically(">=", 1), "%v", body)
	}, 6*time.Minute, 2*time.Second).Should(Succeed())
	code, body = suite.Call(t, http.MethodPut, schedules+"/every-minute", map[string]any{"schedule": "* * * * *", "keep_last": 2, "suspend": true})
	g.Expect(code).To(Equal(http.StatusOK), "%v", body)

	var kept []string
	g.Eventually(func(g Gomega) {
		code, body := suite.Call(t, http.MethodGet, schedules+"/every-minute", nil)
		g.Expect(code).To(Equal(http.StatusOK), "%v", body)
		g.Expect(body["state"]).To(Equal("SUSPENDED"), "%v", body)
		list := &opsv1.ClusterBackupList{}
		g.Expect(st.Env.Client.List(ctx, list, client.InNamespace(obs), client.MatchingLabels{opsv1.ScheduleLabel: "every-minute"})).To(Succeed())
		kept = kept[:0]
		for _, b := range list.Items {
			g.Expect(b.DeletionTimestamp).To(BeNil(), "backup %s is still being deleted", b.Name)
			g.Expect(b.Status.Phase).To(Equal(opsv1.BackupPhaseSucceeded), "backup %s", b.Name)
			kept = append(kept, b.Name)
		}
		g.Expect(kept).To(HaveLen(2))
		retained := []string{}
		for _, n := range body["retained_backups"].([]any) {
			retained = append(retained, n.(string))
		}
		g.Expect(retained).To(ConsistOf(kept))
	}, 3*time.Minute, 2*time.Second).Should(Succeed())

	// On disk: exactly the kept backups' directories,
	// <root>/<VMCluster>/<backup>.
	s := &opsv1.ClusterBackupSchedule{}
	g.Expect(st.Env.Client.Get(ctx, client.ObjectKey{Namespace: obs, Name: "every-minute"}, s)).To(Succeed())
	g.Expect(s.Status.LastDeleted).NotTo(BeEmpty())
	g.Expect(s.Status.LastDeleted[0].Reason).To(ContainSubstring("keepLast=2"))
	_, vmc := s.VMClusterKey()
	entries, err := os.ReadDir(filepath.Join(st.BackupRoot(), vmc))
	g.Expect(err).NotTo(HaveOccurred())
	var dirs []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "every-minute-") {
			dirs = append(dirs, e.Name())
		}
	}
	sort.Strings(dirs)
	sort.Strings(kept)
	g.Expect(dirs).To(Equal(kept), "the deleted backups' data is gone, the kept ones' is there")
}
