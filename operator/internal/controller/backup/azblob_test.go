package backup_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/backupdata/azblobtest"
	"github.com/tidbcloud/ops-server/operator/internal/manager"
)

// TestAzureDeletion: a ClusterBackup to azblob:// with its credentials as
// vmbackup's environment variables (a Secret without a key) — the Jobs get
// the Secret as their environment; deleted with deletionPolicy Delete, the
// blobs each replica wrote are removed from the Blob service (a local one
// speaking the real wire format) with those credentials, and nothing else.
func TestAzureDeletion(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	nodes := startVMStorages(t, 2)
	f := newFixture(t, nodes)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "azure-credentials", Labels: map[string]string{opsv1.BackupCredentialsLabel: "true"}},
		StringData: map[string]string{"AZURE_STORAGE_ACCOUNT_NAME": "o11yacct", "AZURE_STORAGE_ACCOUNT_KEY": "a2V5"},
	}
	g.Expect(env.Client.Create(ctx, secret)).To(Succeed())
	blobs := &azblobtest.Server{Account: "o11yacct", Blobs: map[string]map[string]bool{"backups": {
		"prod/vmc/to-az/" + podName(f.name, 0) + "/backup_complete.ignore":   true,
		"prod/vmc/to-az/" + podName(f.name, 0) + "/data/part-1":              true,
		"prod/vmc/to-az/" + podName(f.name, 1) + "/data/part-1":              true,
		"prod/vmc/to-az-2/" + podName(f.name, 0) + "/backup_complete.ignore": true,
	}}}
	endpoint := azblobtest.Start(t, blobs)
	startOperator(t, f, nil, func(o *manager.Options) { o.Backup.Data.AzureEndpoint = endpoint })

	b := newBackup(f, "to-az", "azblob://backups/prod", func(b *opsv1.ClusterBackup) {
		b.Spec.Destination.CredentialsSecretRef = &opsv1.SecretKeyReference{Name: secret.Name}
		b.Spec.DeletionPolicy = opsv1.DeletionPolicyDelete
	})
	g.Expect(env.Client.Create(ctx, b)).To(Succeed())
	var jobs []*batchv1.Job
	g.Eventually(func(g Gomega) {
		cur := get(g, b)
		g.Expect(cur.Status.Replicas).To(HaveLen(2))
		jobs = nil
		for _, r := range cur.Status.Replicas {
			g.Expect(r.State).To(Equal(opsv1.ReplicaStateUploading), describe(cur))
			job := &batchv1.Job{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: r.JobName}, job)).To(Succeed())
			jobs = append(jobs, job)
		}
	}, time.Minute, 50*time.Millisecond).Should(Succeed())
	for _, job := range jobs {
		c := job.Spec.Template.Spec.Containers[0]
		g.Expect(c.EnvFrom).To(ContainElement(HaveField("SecretRef.Name", secret.Name)), "vmbackup reads the AZURE_* variables")
		g.Expect(c.Args).To(ContainElement(HavePrefix("-dst=azblob://backups/prod/vmc/to-az/")))
	}
	// Play the Job controller: both uploads complete.
	now := metav1.Now()
	for _, job := range jobs {
		job.Status = batchv1.JobStatus{StartTime: &now, CompletionTime: &now, Succeeded: 1, Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}}
		g.Expect(env.Client.Status().Update(ctx, job)).To(Succeed())
	}
	waitPhase(t, b, opsv1.BackupPhaseSucceeded, time.Minute)

	g.Expect(env.Client.Delete(ctx, b)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(b), &opsv1.ClusterBackup{}))
	}, 30*time.Second, 50*time.Millisecond).Should(BeTrue())
	g.Expect(blobs.Names("backups")).To(Equal(map[string]bool{"prod/vmc/to-az-2/" + podName(f.name, 0) + "/backup_complete.ignore": true}))
	g.Expect(eventMessages(g, f.ns, "DataDeleted")).To(ConsistOf(ContainSubstring("deleted 3 objects of the backup under azblob://backups/prod")))
	g.Expect(eventMessages(g, f.ns, "DataRetained")).To(BeEmpty())
	g.Expect(eventMessages(g, f.ns, "DataDeleteFailed")).To(BeEmpty())
}
