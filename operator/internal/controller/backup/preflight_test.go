package backup_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/manager"
)

// countingVMStorage stands for every vmstorage replica of a fixture: it
// counts the calls it gets and answers none usefully. A refused backup
// must never call it.
func countingVMStorage(t *testing.T) (*vmStorage, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		http.Error(w, "counting only", http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	return &vmStorage{httpAddr: strings.TrimPrefix(srv.URL, "http://")}, &hits
}

// TestPreflightRefusals: a ClusterBackup that targets a VMCluster in
// another namespace, writes to an fs:// path outside the allowed roots
// (".." included), or names a Secret without the opt-in label fails at
// once with reason InvalidSpec, and nothing is touched: no snapshot call,
// no Job, no replica entry. The ValidatingAdmissionPolicy of the chart is
// not installed here: this is the operator's own check.
func TestPreflightRefusals(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	node, hits := countingVMStorage(t)
	f := newFixture(t, []*vmStorage{node})
	other := newFixture(t, []*vmStorage{node})
	root := filepath.Join(t.TempDir(), "backups")

	secret := func(name string, labelled bool) *corev1.Secret {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name},
			StringData: map[string]string{"credentials": "x", "authKey": "k"},
		}
		if labelled {
			s.Labels = map[string]string{opsv1.BackupCredentialsLabel: "true"}
		}
		g.Expect(env.Client.Create(ctx, s)).To(Succeed())
		return s
	}
	unlabelled := secret("unlabelled", false)
	// The operator resolves the other namespace's pods too: without the
	// namespace check, the cross-namespace backup would reach them.
	resolve := func(ctx context.Context, pod *corev1.Pod) (string, error) {
		if pod.Namespace == other.ns {
			return other.resolve(ctx, pod)
		}
		return f.resolve(ctx, pod)
	}
	startOperator(t, f, nil, func(o *manager.Options) {
		o.Backup.FSRoots = []string{root}
		o.Backup.Resolver = resolve
	})

	creds := func(name string) func(*opsv1.ClusterBackup) {
		return func(b *opsv1.ClusterBackup) {
			b.Spec.Destination.CredentialsSecretRef = &opsv1.SecretKeyReference{Name: name}
		}
	}
	authKey := func(name string) func(*opsv1.ClusterBackup) {
		return func(b *opsv1.ClusterBackup) {
			b.Spec.SnapshotAuthKeySecretRef = &opsv1.SecretKeyReference{Name: name}
		}
	}
	cases := []struct {
		name string
		url  string
		mut  func(*opsv1.ClusterBackup)
		want string
	}{
		{"cross-namespace", "fs://" + root, func(b *opsv1.ClusterBackup) { b.Spec.VMCluster.Namespace = other.ns },
			"spec.vmCluster.namespace " + other.ns + ": a ClusterBackup may only back up a VMCluster in its own namespace " + f.ns},
		{"fs outside the roots", "fs:///etc/backups", nil,
			"spec.destination.url: an fs:// destination must be inside one of the backup fs roots the administrator allowed: " + root},
		{"fs escaping with dot-dot", "fs://" + root + "/../../etc", nil,
			"spec.destination.url: an fs:// destination must be inside one of the backup fs roots the administrator allowed: " + root},
		{"unlabelled credentials", "s3://bucket/x", creds(unlabelled.Name),
			"spec.destination.credentialsSecretRef: Secret " + f.ns + "/unlabelled not found, or not labelled " + opsv1.BackupCredentialsLabel + `="true"`},
		{"missing credentials", "s3://bucket/x", creds("missing"),
			"spec.destination.credentialsSecretRef: Secret " + f.ns + "/missing not found, or not labelled " + opsv1.BackupCredentialsLabel + `="true"`},
		{"unlabelled auth key", "fs://" + root, authKey(unlabelled.Name),
			"spec.snapshotAuthKeySecretRef: Secret " + f.ns + "/unlabelled not found, or not labelled " + opsv1.BackupCredentialsLabel + `="true"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			b := newBackup(f, strings.ReplaceAll(tc.name, " ", "-"), tc.url, tc.mut)
			g.Expect(env.Client.Create(ctx, b)).To(Succeed())
			done := waitPhase(t, b, opsv1.BackupPhaseFailed, 30*time.Second)
			c := readyCondition(done)
			g.Expect(c.Reason).To(Equal(opsv1.InvalidSpecReason))
			g.Expect(c.Message).To(Equal(tc.want))
			g.Expect(done.Status.Replicas).To(BeEmpty())
			g.Expect(done.Status.ObservedGeneration).To(Equal(done.Generation))
		})
	}

	// The message for an unlabelled Secret is the one for a missing Secret.
	msg := func(name string) string {
		return readyCondition(get(g, newBackup(f, name, "", nil))).Message
	}
	g.Expect(strings.ReplaceAll(msg("unlabelled-credentials"), "/unlabelled ", "/X ")).
		To(Equal(strings.ReplaceAll(msg("missing-credentials"), "/missing ", "/X ")))

	// Nothing was touched, in either namespace.
	g.Consistently(hits.Load, 2*time.Second, 100*time.Millisecond).Should(BeZero())
	for _, ns := range []string{f.ns, other.ns} {
		jobs := &batchv1.JobList{}
		g.Expect(env.Client.List(ctx, jobs, client.InNamespace(ns))).To(Succeed())
		g.Expect(jobs.Items).To(BeEmpty())
	}
	_, err := os.Stat(root)
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "nothing written under the root")
}

// TestPreflightNoFSRoots: with no --backup-fs-roots (the chart's default),
// every fs:// destination is refused, and the message says none is
// configured.
func TestPreflightNoFSRoots(t *testing.T) {
	g := NewWithT(t)
	node, hits := countingVMStorage(t)
	f := newFixture(t, []*vmStorage{node})
	startOperator(t, f, nil, func(o *manager.Options) { o.Backup.FSRoots = nil })

	b := newBackup(f, "fs", "fs://"+t.TempDir(), nil)
	g.Expect(env.Client.Create(context.Background(), b)).To(Succeed())
	done := waitPhase(t, b, opsv1.BackupPhaseFailed, 30*time.Second)
	c := readyCondition(done)
	g.Expect(c.Reason).To(Equal(opsv1.InvalidSpecReason))
	g.Expect(c.Message).To(ContainSubstring("the administrator configured no backup fs roots (--backup-fs-roots)"))
	g.Expect(hits.Load()).To(BeZero())
}

// TestManagerRefusesBadFSRoots: --backup-fs-roots is validated at start.
func TestManagerRefusesBadFSRoots(t *testing.T) {
	o := manager.DefaultOptions()
	o.MetricsAddr, o.HealthAddr, o.LeaderElection = "0", "0", false
	o.Backup.FSRoots = []string{"relative/dir"}
	_, err := manager.New(env.Config, o, nil)
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring("--backup-fs-roots")))
}
