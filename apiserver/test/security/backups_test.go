package security

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// Issue #18.3: backups stay inside their namespace, their allowed fs://
// roots and the Secrets opted in to backups. Each refusal is a 400 and
// creates no ClusterBackup. The same ClusterBackups applied directly are
// refused by the chart's ValidatingAdmissionPolicy (e2e/deploy,
// TestClusterBackupNamespacePolicy) and by ops-operator's preflight
// (operator/internal/controller/backup, TestPreflightRefusals).

const backupsPathFmt = "/api/v1/observability-ops/vmclusters/%s/backups"

// vmclusterForBackups creates a vmcluster through the API (no Flux runs:
// it stays CREATING, which is enough to back it up).
func (f *fixture) vmclusterForBackups(name string) string {
	f.t.Helper()
	code, body := f.do(http.MethodPost, "/api/v1/observability-ops/vmclusters", fmt.Sprintf(`{"name":%q}`, name))
	NewWithT(f.t).Expect(code).To(Equal(http.StatusAccepted), string(body))
	return fmt.Sprintf(backupsPathFmt, name)
}

// clusterBackups counts the ClusterBackups of the namespaces.
func clusterBackups(g Gomega, namespaces ...string) int {
	n := 0
	for _, ns := range namespaces {
		list := &opsv1.ClusterBackupList{}
		g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
		n += len(list.Items)
	}
	return n
}

// backupError is the part of an AIP-193 error body the tests look at.
type backupError struct {
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Details []struct {
			Reason          string `json:"reason"`
			FieldViolations []struct {
				Field       string `json:"field"`
				Description string `json:"description"`
			} `json:"fieldViolations"`
		} `json:"details"`
	} `json:"error"`
}

func parseBackupError(g Gomega, body []byte) (reason string, violations map[string]string) {
	var e backupError
	g.Expect(json.Unmarshal(body, &e)).To(Succeed(), string(body))
	violations = map[string]string{}
	for _, d := range e.Error.Details {
		if d.Reason != "" {
			reason = d.Reason
		}
		for _, v := range d.FieldViolations {
			violations[v.Field] = v.Description
		}
	}
	return reason, violations
}

// TestBackupOnlyInItsOwnNamespace: with ClusterBackups configured to live
// in a namespace other than the vmclusters', the REST API refuses every
// backup (it would target a VMCluster in another namespace) and creates
// nothing anywhere.
func TestBackupOnlyInItsOwnNamespace(t *testing.T) {
	g := NewWithT(t)
	otherNS := env.NewNamespace(t)
	f := start(t, func(c *config.Config) {
		c.Backups.Namespace = otherNS
		c.Backups.Destination = "s3://bucket/backups"
	})
	path := f.vmclusterForBackups("cross")
	for _, body := range []string{`{}`, `{"destination":{"url":"s3://other/x","credentials_secret":""}}`} {
		code, resp := f.do(http.MethodPost, path, body)
		g.Expect(code).To(Equal(http.StatusBadRequest), string(resp))
		reason, _ := parseBackupError(g, resp)
		g.Expect(reason).To(Equal("VMCLUSTER_IN_OTHER_NAMESPACE"))
		g.Expect(string(resp)).To(ContainSubstring("a backup may only target a vmcluster in its own namespace"))
	}
	g.Expect(clusterBackups(g, f.ns, otherNS)).To(BeZero())
}

// TestBackupFSRoots: fs:// destinations only inside the configured roots
// (cleaned first: ".." does not escape); none configured, none allowed.
func TestBackupFSRoots(t *testing.T) {
	t.Run("outside the roots", func(t *testing.T) {
		g := NewWithT(t)
		f := start(t, func(c *config.Config) { c.Backups.FSRoots = []string{"/var/backups/vm", "/srv/backups"} })
		path := f.vmclusterForBackups("fsroots")
		for _, url := range []string{"fs:///etc", "fs:///var/backups/vm/../../../etc", "fs:///var/backups/vmx", "fs:///var"} {
			code, resp := f.do(http.MethodPost, path, fmt.Sprintf(`{"destination":{"url":%q}}`, url))
			g.Expect(code).To(Equal(http.StatusBadRequest), "%s: %s", url, resp)
			_, v := parseBackupError(g, resp)
			g.Expect(v).To(Equal(map[string]string{
				"destination.url": "an fs:// destination must be inside one of the backup fs roots the administrator allowed: /var/backups/vm, /srv/backups",
			}), url)
		}
		g.Expect(clusterBackups(g, f.ns)).To(BeZero())

		// Inside a root it is accepted.
		code, resp := f.do(http.MethodPost, path, `{"destination":{"url":"fs:///srv/backups/nightly"}}`)
		g.Expect(code).To(Equal(http.StatusAccepted), string(resp))
		g.Expect(clusterBackups(g, f.ns)).To(Equal(1))
	})
	t.Run("no roots configured", func(t *testing.T) {
		g := NewWithT(t)
		f := start(t, nil)
		path := f.vmclusterForBackups("noroots")
		code, resp := f.do(http.MethodPost, path, `{"destination":{"url":"fs:///var/backups"}}`)
		g.Expect(code).To(Equal(http.StatusBadRequest), string(resp))
		_, v := parseBackupError(g, resp)
		g.Expect(v).To(HaveKeyWithValue("destination.url", ContainSubstring("the administrator configured no backup fs roots (--backup-fs-roots)")))
		g.Expect(clusterBackups(g, f.ns)).To(BeZero())
	})
}

var requestIDRE = regexp.MustCompile(`"requestId":"[^"]*"`)

// TestBackupSecretNeedsTheLabel: a credentials Secret (named in the request
// or the server's default) must carry the opt-in label; one without it
// gets exactly the answer of a Secret that does not exist, status and
// body, so the API reveals nothing about Secrets not opted in.
func TestBackupSecretNeedsTheLabel(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := start(t, func(c *config.Config) { c.Backups.Destination = "s3://bucket/backups" })
	path := f.vmclusterForBackups("secrets")
	secret := func(name string, labels map[string]string) {
		g.Expect(env.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name, Labels: labels},
			StringData: map[string]string{"credentials": "x"},
		})).To(Succeed())
	}
	secret("unlabelled", nil)
	secret("wrong-value", map[string]string{opsv1.BackupCredentialsLabel: "yes"})
	secret("opted-in", map[string]string{opsv1.BackupCredentialsLabel: "true"})

	post := func(name string) (int, string) {
		code, resp := f.do(http.MethodPost, path, fmt.Sprintf(`{"destination":{"credentials_secret":%q}}`, name))
		// Name the Secret alike in every answer, and drop the request id.
		return code, requestIDRE.ReplaceAllString(regexp.MustCompile(`\\"`+name+`\\"`).ReplaceAllString(string(resp), `\"NAME\"`), `"requestId":""`)
	}
	missingCode, missing := post("does-not-exist")
	g.Expect(missingCode).To(Equal(http.StatusBadRequest), missing)
	_, v := parseBackupError(g, []byte(missing))
	g.Expect(v).To(HaveKeyWithValue("destination.credentials_secret",
		`Secret "NAME" not found in namespace `+f.ns+`, or not labelled `+opsv1.BackupCredentialsLabel+`="true"`))
	for _, name := range []string{"unlabelled", "wrong-value"} {
		code, resp := post(name)
		g.Expect(code).To(Equal(missingCode), name)
		g.Expect(resp).To(Equal(missing), "%s answers like a missing Secret", name)
	}
	g.Expect(clusterBackups(g, f.ns)).To(BeZero())

	// Without a Secret (the ambient identity), and with an opted-in one,
	// the backup is created.
	code, resp := f.do(http.MethodPost, path, `{}`)
	g.Expect(code).To(Equal(http.StatusAccepted), string(resp))
	g.Expect(clusterBackups(g, f.ns)).To(Equal(1))

	code, resp = f.do(http.MethodPost, path, `{"destination":{"credentials_secret":"opted-in"}}`)
	g.Expect(code).To(Equal(http.StatusAccepted), string(resp))
	g.Expect(clusterBackups(g, f.ns)).To(Equal(2))
}

// TestBackupDefaultSecretNeedsTheLabel: the server's default credentials
// Secret (backups.credentialsSecret) is checked like a requested one.
func TestBackupDefaultSecretNeedsTheLabel(t *testing.T) {
	g := NewWithT(t)
	f := start(t, func(c *config.Config) {
		c.Backups.Destination = "s3://bucket/backups"
		c.Backups.CredentialsSecret = "default-creds"
	})
	path := f.vmclusterForBackups("default-secret")
	g.Expect(env.Client.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "default-creds"},
		StringData: map[string]string{"credentials": "x"},
	})).To(Succeed())
	code, resp := f.do(http.MethodPost, path, `{}`)
	g.Expect(code).To(Equal(http.StatusBadRequest), string(resp))
	_, v := parseBackupError(g, resp)
	g.Expect(v).To(HaveKeyWithValue("destination.credentials_secret", ContainSubstring(`Secret "default-creds" not found`)))
	g.Expect(clusterBackups(g, f.ns)).To(BeZero())
}
