package backupdata

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/operator/internal/backupdata/azblobtest"
	"github.com/tidbcloud/ops-server/operator/internal/outcome"
)

func azureBlobs() map[string]map[string]bool {
	return map[string]map[string]bool{"o11y": {
		"prod/vmc/backup-1/vmstorage-0/data/small/part1":        true,
		"prod/vmc/backup-1/vmstorage-0/data/small/part2":        true,
		"prod/vmc/backup-1/vmstorage-0/backup_complete.ignore":  true,
		"prod/vmc/backup-1/vmstorage-1/backup_complete.ignore":  true,
		"prod/vmc/backup-10/vmstorage-0/backup_complete.ignore": true,
		"prod/vmc/backup-2/vmstorage-0/backup_complete.ignore":  true,
	}}
}

func TestRemoveAzure(t *testing.T) {
	for _, tc := range []struct {
		name string
		// creds builds the Secret's variables from the server's URL;
		// endpoint says whether Options.AzureEndpoint is set (a connection
		// string names its own endpoint).
		creds    func(url string) map[string]string
		endpoint bool
	}{
		{"account name and key (shared key)", func(string) map[string]string {
			return map[string]string{"AZURE_STORAGE_ACCOUNT_NAME": "acct", "AZURE_STORAGE_ACCOUNT_KEY": "a2V5"}
		}, true},
		{"connection string with a SAS", func(url string) map[string]string {
			return map[string]string{"AZURE_STORAGE_ACCOUNT_CONNECTION_STRING": "BlobEndpoint=" + url + ";SharedAccessSignature=sv=2024-08-04&ss=b&srt=co&sp=rdl&sig=c2lnbg%3D%3D"}
		}, false},
		{"connection string with an account key", func(url string) map[string]string {
			return map[string]string{"AZURE_STORAGE_ACCOUNT_CONNECTION_STRING": "DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=a2V5;BlobEndpoint=" + url}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			f := &azblobtest.Server{Account: "acct", SAS: "c2lnbg==", Blobs: azureBlobs()}
			url := azblobtest.Start(t, f)
			o := Options{}
			if tc.endpoint {
				o.AzureEndpoint = url
			}
			creds := Credentials{Env: tc.creds(url)}
			dirs := []string{"azblob://o11y/prod/vmc/backup-1/vmstorage-0", "azblob://o11y/prod/vmc/backup-1/vmstorage-1"}
			n, err := Remove(context.Background(), dirs, creds, o)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(n).To(Equal(4))
			g.Expect(f.Names("o11y")).To(Equal(map[string]bool{
				"prod/vmc/backup-10/vmstorage-0/backup_complete.ignore": true,
				"prod/vmc/backup-2/vmstorage-0/backup_complete.ignore":  true,
			}), "only the backup's own blobs, never a sibling sharing the prefix")
			g.Expect(f.Calls()).To(ContainElement("delete"))
			// Again (a crash after the deletion): nothing left, no error.
			n, err = Remove(context.Background(), dirs, creds, o)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(n).To(BeZero())
		})
	}
}

func TestRemoveAzureErrors(t *testing.T) {
	g := NewWithT(t)
	f := &azblobtest.Server{Account: "acct", Blobs: map[string]map[string]bool{"o11y": {"p/b/x": true}}}
	url := azblobtest.Start(t, f)
	o := Options{AzureEndpoint: url}
	dirs := []string{"azblob://o11y/p/b"}

	// Signed for another account: the service refuses, nothing is deleted,
	// and the error (retried by the caller) names the service's code.
	_, err := Remove(context.Background(), dirs, Credentials{Env: map[string]string{"AZURE_STORAGE_ACCOUNT_NAME": "other", "AZURE_STORAGE_ACCOUNT_KEY": "a2V5"}}, o)
	g.Expect(err).To(MatchError(ContainSubstring("403 AuthenticationFailed")))
	g.Expect(outcome.IsTerminal(err)).To(BeFalse())
	g.Expect(f.Names("o11y")).To(HaveKey("p/b/x"))

	// Credentials vmbackup could not have used either: permanent errors.
	for _, creds := range []Credentials{
		{},
		{Env: map[string]string{"AZURE_STORAGE_ACCOUNT_KEY": "a2V5"}},
		{Env: map[string]string{"AZURE_USE_DEFAULT_CREDENTIAL": "true"}},
		{File: []byte("AZURE_STORAGE_ACCOUNT_NAME=acct")},
	} {
		_, err = Remove(context.Background(), dirs, creds, o)
		g.Expect(err).To(HaveOccurred())
		g.Expect(outcome.IsTerminal(err)).To(BeTrue(), "%v", err)
	}
	g.Expect(f.Calls()).To(BeEmpty(), "no call was served")
	g.Expect(f.Names("o11y")).To(HaveKey("p/b/x"))

	// A container that is gone: nothing to delete.
	n, err := Remove(context.Background(), []string{"azblob://gone/p/b"}, Credentials{Env: map[string]string{"AZURE_STORAGE_ACCOUNT_NAME": "acct", "AZURE_STORAGE_ACCOUNT_KEY": "a2V5"}}, o)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(BeZero())

	_, err = Remove(context.Background(), []string{"azblob://o11y"}, Credentials{}, o)
	g.Expect(err).To(MatchError(ContainSubstring("not a path below a bucket")))
}
