package backups

import (
	"encoding/base64"
	"net/url"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/listing"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

func fields(e *apierror.Error) []string {
	var out []string
	for _, v := range e.Violations {
		out = append(out, v.Field)
	}
	return out
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name string
		body string
		want *Request
		// bad are the fields with violations when the body is rejected.
		bad []string
	}{
		{name: "empty body", body: "", want: &Request{}},
		{name: "empty object", body: " {} ", want: &Request{}},
		{name: "everything", body: `{"destination":{"url":"s3://b/p","credentials_secret":"creds","credentials_secret_key":"credentials"},"concurrency":4,"deletion_policy":"Delete"}`,
			want: &Request{Destination: &DestinationRequest{URL: "s3://b/p", CredentialsSecret: ptr.To("creds"), CredentialsSecretKey: "credentials"}, Concurrency: ptr.To[int64](4), DeletionPolicy: "Delete"}},
		{name: "no credentials", body: `{"destination":{"credentials_secret":""}}`, want: &Request{Destination: &DestinationRequest{CredentialsSecret: ptr.To("")}}},
		{name: "fs", body: `{"destination":{"url":"fs:///backups"}}`, want: &Request{Destination: &DestinationRequest{URL: "fs:///backups"}}},
		{name: "http scheme", body: `{"destination":{"url":"http://bucket/x"}}`, bad: []string{"destination.url"}},
		{name: "no bucket", body: `{"destination":{"url":"gs://"}}`, bad: []string{"destination.url"}},
		{name: "relative fs", body: `{"destination":{"url":"fs://backups"}}`, bad: []string{"destination.url"}},
		{name: "credentials in URL", body: `{"destination":{"url":"s3://AKIA:secret@bucket/x"}}`, bad: []string{"destination.url"}},
		{name: "credentials with fs", body: `{"destination":{"url":"fs:///b","credentials_secret":"creds"}}`, bad: []string{"destination.credentials_secret"}},
		{name: "bad secret name", body: `{"destination":{"credentials_secret":"Creds_1"}}`, bad: []string{"destination.credentials_secret"}},
		{name: "key without secret", body: `{"destination":{"credentials_secret_key":"k"}}`, bad: []string{"destination.credentials_secret_key"}},
		{name: "bad key", body: `{"destination":{"credentials_secret":"c","credentials_secret_key":"a/b"}}`, bad: []string{"destination.credentials_secret_key"}},
		{name: "concurrency 0", body: `{"concurrency":0}`, bad: []string{"concurrency"}},
		{name: "concurrency 33", body: `{"concurrency":33}`, bad: []string{"concurrency"}},
		{name: "concurrency fraction", body: `{"concurrency":1.5}`, bad: []string{"concurrency"}},
		{name: "concurrency huge", body: `{"concurrency":1e30}`, bad: []string{"concurrency"}},
		{name: "bad policy", body: `{"deletion_policy":"Keep"}`, bad: []string{"deletion_policy"}},
		{name: "several", body: `{"destination":{"url":"ftp://x"},"concurrency":-1,"deletion_policy":"delete"}`, bad: []string{"destination.url", "concurrency", "deletion_policy"}},
		{name: "unknown field", body: `{"destination_url":"s3://b"}`, bad: []string{"destination_url"}},
		{name: "wrong type", body: `{"destination":"s3://b"}`, bad: []string{"destination"}},
		{name: "nested wrong type", body: `{"destination":{"url":3}}`, bad: []string{"destination.url"}},
		{name: "not an object", body: `[]`, bad: []string{"body"}},
		{name: "malformed", body: `{"concurrency":`, bad: []string{"body"}},
		{name: "trailing data", body: `{} {}`, bad: []string{"body"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			req, err := Decode([]byte(tt.body))
			if tt.bad == nil {
				g.Expect(err).To(BeNil())
				g.Expect(req).To(Equal(tt.want))
				return
			}
			g.Expect(err).NotTo(BeNil())
			g.Expect(err.Code).To(Equal(400))
			g.Expect(err.Status).To(Equal(apierror.StatusInvalidArgument))
			g.Expect(fields(err)).To(ConsistOf(tt.bad))
			for _, v := range err.Violations {
				g.Expect(v.Description).NotTo(ContainSubstring("secret@"), "a message never repeats the URL")
			}
		})
	}
}

func TestParseList(t *testing.T) {
	tok := listing.Cursor{Created: 100, Name: "backup-a", VMCluster: "uid-1"}.Token()
	tests := []struct {
		name  string
		query string
		want  ListRequest
		bad   []string
	}{
		{name: "defaults", query: "", want: ListRequest{PageSize: 50}},
		{name: "zero is the default", query: "page_size=0", want: ListRequest{PageSize: 50}},
		{name: "size", query: "page_size=1000", want: ListRequest{PageSize: 1000}},
		{name: "token", query: "page_size=2&page_token=" + tok, want: ListRequest{PageSize: 2, After: &listing.Cursor{Version: 1, Created: 100, Name: "backup-a", VMCluster: "uid-1"}}},
		{name: "other parameters are ignored", query: "status=x", want: ListRequest{PageSize: 50}},
		{name: "too large", query: "page_size=1001", bad: []string{"page_size"}},
		{name: "negative", query: "page_size=-1", bad: []string{"page_size"}},
		{name: "not a number", query: "page_size=ten", bad: []string{"page_size"}},
		{name: "garbage token", query: "page_token=abc", bad: []string{"page_token"}},
		{name: "long token", query: "page_token=" + strings.Repeat("A", 600), bad: []string{"page_token"}},
		{name: "token of another version", query: "page_token=" + rawToken(`{"v":2,"c":1,"n":"a","m":"u"}`), bad: []string{"page_token"}},
		{name: "token with unknown fields", query: "page_token=" + rawToken(`{"v":1,"c":1,"n":"a","m":"u","x":1}`), bad: []string{"page_token"}},
		{name: "token without vmcluster", query: "page_token=" + rawToken(`{"v":1,"c":1,"n":"a"}`), bad: []string{"page_token"}},
		{name: "both bad", query: "page_size=x&page_token=y", bad: []string{"page_size", "page_token"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			q, err := url.ParseQuery(tt.query)
			g.Expect(err).NotTo(HaveOccurred())
			got, verr := ParseList(q)
			if tt.bad == nil {
				g.Expect(verr).To(BeNil())
				g.Expect(got).To(Equal(tt.want))
				return
			}
			g.Expect(verr).NotTo(BeNil())
			g.Expect(fields(verr)).To(ConsistOf(tt.bad))
		})
	}
}

func rawToken(js string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(js))
}

func TestToSpecAndView(t *testing.T) {
	g := NewWithT(t)
	tg := target{ID: "uid-1", Name: "prod", Namespace: "observability", Release: "prod"}
	spec := toSpec(tg, Destination{URL: "s3://b/p", CredentialsSecret: "creds", CredentialsSecretKey: "credentials"},
		&Request{Concurrency: ptr.To[int64](3), DeletionPolicy: "Delete"})
	g.Expect(spec).To(Equal(opsv1.ClusterBackupSpec{
		VMCluster: opsv1.VMClusterReference{Namespace: "observability", Name: "prod"},
		Destination: opsv1.BackupDestination{URL: "s3://b/p",
			CredentialsSecretRef: &opsv1.SecretKeyReference{Name: "creds", Key: "credentials"}},
		Concurrency:    ptr.To[int32](3),
		DeletionPolicy: opsv1.DeletionPolicyDelete,
	}))
	g.Expect(toSpec(tg, Destination{URL: "fs:///b"}, &Request{}).DeletionPolicy).To(Equal(opsv1.DeletionPolicyRetain))
	g.Expect(toSpec(tg, Destination{URL: "fs:///b"}, &Request{}).Destination.CredentialsSecretRef).To(BeNil())

	start := metav1.NewTime(time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC))
	done := metav1.NewTime(start.Add(time.Minute))
	obj := &opsv1.ClusterBackup{
		ObjectMeta: metav1.ObjectMeta{
			Name: "backup-prod-abcde", Namespace: "observability", UID: "b-uid",
			Labels:            objectLabels(tg),
			Annotations:       map[string]string{opsv1.AnnotationInitiatedBy: "alice"},
			CreationTimestamp: start,
		},
		Spec: spec,
		Status: opsv1.ClusterBackupStatus{
			Phase: opsv1.BackupPhasePartiallyFailed, Progress: "2/2", StartTime: &start, CompletionTime: &done,
			Conditions: []metav1.Condition{{Type: opsv1.ReadyCondition, Status: metav1.ConditionFalse, Reason: "PartiallyFailed", Message: "vmstorage-prod-1: disk full"}},
			Replicas: []opsv1.ReplicaBackup{
				{Pod: "vmstorage-prod-0", Node: "n0", SnapshotName: "s0", Destination: "s3://b/p/prod/backup-prod-abcde/vmstorage-prod-0",
					State: opsv1.ReplicaStateSucceeded, Bytes: 42, StartTime: &start, CompletionTime: &done},
				{Pod: "vmstorage-prod-1", State: opsv1.ReplicaStateFailed, Error: "disk full"},
			},
		},
	}
	b := toBackup(obj)
	g.Expect(b.Name).To(Equal("vmclusters/prod/backups/backup-prod-abcde"))
	g.Expect(b.VMCluster).To(Equal("vmclusters/prod"))
	g.Expect(b.VMClusterID).To(Equal("uid-1"))
	g.Expect(b.Target).To(Equal(ObjectRef{Namespace: "observability", Name: "prod"}))
	g.Expect(b.Phase).To(Equal("PartiallyFailed"))
	g.Expect(b.Message).To(Equal("vmstorage-prod-1: disk full"))
	g.Expect(b.Destination).To(Equal(Destination{URL: "s3://b/p", CredentialsSecret: "creds", CredentialsSecretKey: "credentials"}))
	g.Expect(b.InitiatedBy).To(Equal("alice"))
	g.Expect(b.CreateTime).To(Equal("2026-05-06T12:00:00Z"))
	g.Expect(b.CompletionTime).To(Equal("2026-05-06T12:01:00Z"))
	g.Expect(b.Replicas).To(Equal([]Replica{
		{Pod: "vmstorage-prod-0", Node: "n0", Snapshot: "s0", Destination: "s3://b/p/prod/backup-prod-abcde/vmstorage-prod-0",
			Phase: "Succeeded", Bytes: 42, StartTime: "2026-05-06T12:00:00Z", CompletionTime: "2026-05-06T12:01:00Z"},
		{Pod: "vmstorage-prod-1", Phase: "Failed", Error: "disk full"},
	}))

	fresh := toBackup(&opsv1.ClusterBackup{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: objectLabels(tg)}})
	g.Expect(fresh.Phase).To(Equal("Pending"), "no status yet")
	g.Expect(fresh.Replicas).To(BeEmpty())
	g.Expect(fresh.Replicas).NotTo(BeNil(), "an empty list, not null")
	g.Expect(fresh.DeletionPolicy).To(Equal("Retain"))
	g.Expect(fresh.Deleting).To(BeFalse())
}
