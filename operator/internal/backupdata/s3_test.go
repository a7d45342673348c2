package backupdata

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/operator/internal/backupdata/s3test"
)

func TestRemoveS3(t *testing.T) {
	for _, tc := range []struct {
		name  string
		creds Credentials
	}{
		{"credentials as environment variables", Credentials{Env: map[string]string{"AWS_ACCESS_KEY_ID": "AKIDENV", "AWS_SECRET_ACCESS_KEY": "s"}}},
		{"credentials file", Credentials{File: []byte("[other]\naws_access_key_id = NOPE\n[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = s\n")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			keyID := tc.creds.Env["AWS_ACCESS_KEY_ID"]
			if keyID == "" {
				keyID = "AKIDFILE"
			}
			f := &s3test.Server{KeyID: keyID, Objects: map[string]map[string]bool{"o11y": {
				"prod/vmc/backup-1/vmstorage-0/data/small/part1":        true,
				"prod/vmc/backup-1/vmstorage-0/data/small/part2":        true,
				"prod/vmc/backup-1/vmstorage-0/backup_complete.ignore":  true,
				"prod/vmc/backup-1/vmstorage-1/backup_complete.ignore":  true,
				"prod/vmc/backup-10/vmstorage-0/backup_complete.ignore": true,
				"prod/vmc/backup-2/vmstorage-0/backup_complete.ignore":  true,
			}}}
			endpoint := s3test.Start(t, f)
			dirs := []string{"s3://o11y/prod/vmc/backup-1/vmstorage-0", "s3://o11y/prod/vmc/backup-1/vmstorage-1"}
			n, err := Remove(context.Background(), dirs, tc.creds, Options{S3Endpoint: endpoint})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(n).To(Equal(4))
			g.Expect(f.Keys("o11y")).To(Equal(map[string]bool{
				"prod/vmc/backup-10/vmstorage-0/backup_complete.ignore": true,
				"prod/vmc/backup-2/vmstorage-0/backup_complete.ignore":  true,
			}), "only the backup's own objects, never a sibling sharing the prefix")
			g.Expect(f.Calls()).To(ContainElement("delete"))
			// Again (a crash after the deletion): nothing left, no error.
			n, err = Remove(context.Background(), dirs, tc.creds, Options{S3Endpoint: endpoint})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(n).To(BeZero())
		})
	}
}

func TestRemoveS3Errors(t *testing.T) {
	g := NewWithT(t)
	f := &s3test.Server{KeyID: "AKID", Objects: map[string]map[string]bool{"o11y": {"p/b/x": true}}}
	endpoint := s3test.Start(t, f)
	_, err := Remove(context.Background(), []string{"s3://o11y/p/b"}, Credentials{Env: map[string]string{"AWS_ACCESS_KEY_ID": "WRONG", "AWS_SECRET_ACCESS_KEY": "s"}}, Options{S3Endpoint: endpoint})
	g.Expect(err).To(MatchError(ContainSubstring("InvalidAccessKeyId")))
	g.Expect(f.Keys("o11y")).To(HaveKey("p/b/x"))

	_, err = Remove(context.Background(), []string{"s3://o11y"}, Credentials{}, Options{S3Endpoint: endpoint})
	g.Expect(err).To(MatchError(ContainSubstring("not a path below a bucket")))
	_, err = Remove(context.Background(), []string{"oss://c/p"}, Credentials{}, Options{})
	g.Expect(err).To(MatchError(ErrUnsupported))
}
