package backups_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"

	"github.com/tidbcloud/ops-server/apiserver/internal/backups"
	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// oneVMCluster resolves every id to the same vmcluster.
type oneVMCluster struct{ v vmclusters.VMCluster }

func (o oneVMCluster) Get(context.Context, string) (vmclusters.VMCluster, error) { return o.v, nil }

// FuzzDecode feeds arbitrary bodies to the request decoder and validator:
// it must never panic; every rejection is a 400 with at least one field
// violation; every acceptance becomes an object the API server accepts too
// (so the CRD's schema and CEL rules never refuse what the REST
// validation let through).
func FuzzDecode(f *testing.F) {
	f.Add(``)
	f.Add(`{}`)
	f.Add(`{"destination":{"url":"s3://o11y-backups/prod","credentials_secret":"backup-credentials","credentials_secret_key":"credentials"},"concurrency":2,"deletion_policy":"Retain"}`)
	f.Add(`{"destination":{"url":"gs://b.example/x/y"},"concurrency":32,"deletion_policy":"Delete"}`)
	f.Add(`{"destination":{"url":"azblob://container","credentials_secret":""}}`)
	f.Add(`{"destination":{"url":"fs:///var/backups"},"concurrency":1}`)
	f.Add(`{"destination":{"url":"fs:////"}}`)
	f.Add(`{"destination":{"url":"s3://b/\u00e9t\u00e9"}}`)
	f.Add(`{"destination":{"url":"s3://b/p?x"}}`)
	f.Add(`{"concurrency":0}`)
	f.Add(`[]`)
	ns, err := env.CreateNamespace(context.Background(), "fuzz")
	if err != nil {
		f.Fatal(err)
	}
	// The Secrets the seeds name, opted in to backups; every fs:// path is
	// inside the root "/".
	for _, name := range []string{"default-credentials", "backup-credentials"} {
		if err := env.Client.Create(context.Background(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{opsv1.BackupCredentialsLabel: "true"}},
		}); err != nil {
			f.Fatal(err)
		}
	}
	svc := &backups.Service{
		Reader: env.Client, Writer: env.Client, Namespace: ns,
		VMClusters: oneVMCluster{vmclusters.VMCluster{Name: "vmclusters/vmcluster", ID: "00000000-0000-0000-0000-000000000001",
			HelmReleaseInfo: vmclusters.HelmReleaseInfo{ReleaseName: "vmcluster", ReleaseNamespace: ns}}},
		Defaults: config.BackupsConfig{Destination: "s3://default-bucket", CredentialsSecret: "default-credentials", FSRoots: []string{"/"}},
	}
	f.Fuzz(func(t *testing.T, body string) {
		req, err := backups.Decode([]byte(body))
		if err != nil {
			if err.Code != 400 || len(err.Violations) == 0 {
				t.Fatalf("rejection without a field violation: %d %+v", err.Code, err)
			}
			return
		}
		if _, _, cerr := svc.Create(context.Background(), "vmcluster", req, ""); cerr != nil {
			// A Secret named by the request that does not exist (or is not
			// opted in) is the one refusal that depends on the cluster.
			if e, ok := apierror.As(cerr); ok && e.Code == 400 && len(e.Violations) == 1 &&
				e.Violations[0].Field == "destination.credentials_secret" && strings.Contains(e.Violations[0].Description, "not found in namespace") {
				return
			}
			t.Fatalf("accepted by the REST validation but refused on create: %v\nbody: %s", cerr, body)
		}
	})
}

// FuzzDecodeSchedule: the backup schedule request decoder never panics,
// every rejection is a 400 with a field violation, and every acceptance
// becomes a ClusterBackupSchedule the API server accepts (the CRD's schema
// and CEL rules never refuse what the REST validation let through).
func FuzzDecodeSchedule(f *testing.F) {
	f.Add(`{"name":"nightly","schedule":"0 3 * * *","keep_last":7}`)
	f.Add(`{"name":"n2","schedule":"@every 90m","keep_days":3650,"suspend":true,"concurrency":32}`)
	f.Add(`{"name":"n3","schedule":"*/5 * * * 1-5","keep_last":1000,"keep_days":1,"destination":{"url":"fs:///var/backups/x"}}`)
	f.Add(`{"name":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","schedule":"@hourly","keep_last":1}`)
	f.Add(`{"name":"x","schedule":"@every 59s","keep_last":1}`)
	f.Add(`{"name":"x","schedule":"0 3 * * *"}`)
	f.Add(`{}`)
	f.Add(``)
	ns, err := env.CreateNamespace(context.Background(), "fuzz-schedules")
	if err != nil {
		f.Fatal(err)
	}
	svc := &backups.Service{
		Reader: env.Client, Writer: env.Client, Namespace: ns, CacheWait: 1,
		VMClusters: oneVMCluster{vmclusters.VMCluster{Name: "vmclusters/vmcluster", ID: "00000000-0000-0000-0000-000000000001",
			HelmReleaseInfo: vmclusters.HelmReleaseInfo{ReleaseName: "vmcluster", ReleaseNamespace: ns}}},
		Defaults: config.BackupsConfig{Destination: "fs:///var/backups", FSRoots: []string{"/"}},
	}
	f.Fuzz(func(t *testing.T, body string) {
		req, err := backups.DecodeSchedule([]byte(body), true)
		if err != nil {
			if err.Code != 400 || len(err.Violations) == 0 {
				t.Fatalf("rejection without a field violation: %d %+v", err.Code, err)
			}
			return
		}
		if _, _, cerr := svc.CreateSchedule(context.Background(), "vmcluster", req, ""); cerr != nil {
			if e, ok := apierror.As(cerr); ok && e.Code == 409 {
				return // the name was taken by an earlier input
			}
			if e, ok := apierror.As(cerr); ok && e.Code == 400 && len(e.Violations) == 1 &&
				e.Violations[0].Field == "destination.credentials_secret" && strings.Contains(e.Violations[0].Description, "not found in namespace") {
				return
			}
			t.Fatalf("accepted by the REST validation but refused on create: %v\nbody: %s", cerr, body)
		}
	})
}
