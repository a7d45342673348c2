package v1alpha1

import (
	"strings"
	"testing"
)

func TestBackupDestinationProblem(t *testing.T) {
	tests := []struct {
		url  string
		want string // substring of the problem; "" means allowed
	}{
		{"s3://bucket", ""},
		{"s3://o11y-backups/prod/eu", ""},
		{"gs://bucket.example/x", ""},
		{"azblob://container/path", ""},
		{"fs:///backups", ""},
		{"", "is required"},
		{"http://bucket/x", "scheme must be"},
		{"S3://bucket", "scheme must be"},
		{"bucket/x", "scheme must be"},
		{"s3://", "must name a bucket"},
		{"s3:///path", "must name a bucket"},
		{"s3://key:secret@bucket/x", "must name a bucket"},
		{"gs://-bucket", "must name a bucket"},
		{"fs://", "absolute path"},
		{"fs:///", "absolute path"},
		{"fs://relative/path", "absolute path"},
		{"s3://bucket/a b", "must not contain"},
		{"s3://bucket/p#frag", "must not contain"},
		{"s3://bucket/p\x00", "must not contain"},
		{"s3://bucket/" + strings.Repeat("p", 1020), "at most 1024"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			got := BackupDestinationProblem(tt.url)
			if tt.want == "" {
				if got != "" {
					t.Fatalf("BackupDestinationProblem(%q) = %q, want none", tt.url, got)
				}
				return
			}
			if !strings.Contains(got, tt.want) {
				t.Fatalf("BackupDestinationProblem(%q) = %q, want it to contain %q", tt.url, got, tt.want)
			}
			if strings.Contains(got, "secret") {
				t.Fatalf("BackupDestinationProblem(%q) = %q: the message never repeats the URL", tt.url, got)
			}
		})
	}
}

func TestIsFSBackupDestination(t *testing.T) {
	for u, want := range map[string]bool{"fs:///backups": true, "s3://bucket": false, "": false, "FS:///x": false} {
		if got := IsFSBackupDestination(u); got != want {
			t.Errorf("IsFSBackupDestination(%q) = %v, want %v", u, got, want)
		}
	}
}

func TestSecretKeyProblem(t *testing.T) {
	for k, wantProblem := range map[string]bool{
		"credentials":            false,
		"aws.credentials_file-1": false,
		"":                       true,
		"a/b":                    true,
		"a b":                    true,
		strings.Repeat("k", 253): false,
		strings.Repeat("k", 254): true,
	} {
		if got := SecretKeyProblem(k); (got != "") != wantProblem {
			t.Errorf("SecretKeyProblem(%.20q) = %q, want a problem: %v", k, got, wantProblem)
		}
	}
}
