package security

import (
	"context"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// Backup schedules create backups: they are held to the backups' rules
// (namespace, fs:// roots, opted-in Secrets) when they are created, each
// refusal a 400 creating no ClusterBackupSchedule. The same schedule
// applied directly is stalled by ops-operator (InvalidSpec: namespace,
// fs:// roots; operator/internal/controller/schedule, TestInvalidSchedule),
// and every backup it creates passes the ClusterBackup preflight (Secrets).

func schedules(g Gomega, namespaces ...string) int {
	n := 0
	for _, ns := range namespaces {
		list := &opsv1.ClusterBackupScheduleList{}
		g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
		n += len(list.Items)
	}
	return n
}

func TestBackupScheduleKeepsTheBackupRules(t *testing.T) {
	t.Run("other namespace", func(t *testing.T) {
		g := NewWithT(t)
		otherNS := env.NewNamespace(t)
		f := start(t, func(c *config.Config) { c.Backups.Namespace = otherNS; c.Backups.Destination = "s3://bucket/backups" })
		path := strings.TrimSuffix(f.vmclusterForBackups("cross-sched"), "/backups") + "/backupSchedules"
		code, resp := f.do(http.MethodPost, path, `{"name":"nightly","schedule":"@daily","keep_last":1}`)
		g.Expect(code).To(Equal(http.StatusBadRequest), string(resp))
		reason, _ := parseBackupError(g, resp)
		g.Expect(reason).To(Equal("VMCLUSTER_IN_OTHER_NAMESPACE"))
		g.Expect(schedules(g, f.ns, otherNS)).To(BeZero())
	})
	t.Run("fs roots and Secrets", func(t *testing.T) {
		g := NewWithT(t)
		f := start(t, func(c *config.Config) {
			c.Backups.FSRoots = []string{"/var/backups/vm"}
			c.Backups.Destination = "s3://bucket/backups"
		})
		path := strings.TrimSuffix(f.vmclusterForBackups("sched"), "/backups") + "/backupSchedules"
		g.Expect(env.Client.Create(context.Background(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "unlabelled"}, StringData: map[string]string{"credentials": "x"},
		})).To(Succeed())
		for body, field := range map[string]string{
			`{"name":"a","schedule":"@daily","keep_last":1,"destination":{"url":"fs:///var/backups/vm/../../../etc"}}`: "destination.url",
			`{"name":"b","schedule":"@daily","keep_last":1,"destination":{"credentials_secret":"unlabelled"}}`:         "destination.credentials_secret",
			`{"name":"c","schedule":"@daily","keep_last":1,"destination":{"credentials_secret":"missing"}}`:            "destination.credentials_secret",
		} {
			code, resp := f.do(http.MethodPost, path, body)
			g.Expect(code).To(Equal(http.StatusBadRequest), "%s: %s", body, resp)
			_, v := parseBackupError(g, resp)
			g.Expect(v).To(HaveKey(field), string(resp))
		}
		g.Expect(schedules(g, f.ns)).To(BeZero())
		code, resp := f.do(http.MethodPost, path, `{"name":"ok","schedule":"@daily","keep_last":1,"destination":{"url":"fs:///var/backups/vm/nightly"}}`)
		g.Expect(code).To(Equal(http.StatusAccepted), string(resp))
		g.Expect(schedules(g, f.ns)).To(Equal(1))
	})
}
