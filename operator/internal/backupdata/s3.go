// Package backupdata deletes the data a ClusterBackup wrote to an object
// store, for deletionPolicy Delete (a backup deleted by hand, or by a
// ClusterBackupSchedule's retention: the same path). fs:// destinations
// are removed by the backup reconciler itself (package backup); s3:// is
// removed here with the official AWS SDK (aws-sdk-go-v2): every object
// under each replica's path is listed (ListObjectsV2) and deleted
// (DeleteObjects, 1,000 at a time); gs:// with Google's Cloud Storage JSON
// API client (gcs.go); azblob:// with the Azure SDK's azblob (azblob.go).
package backupdata

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// ErrUnsupported: the destination's scheme has no deleter.
var ErrUnsupported = errors.New("removing backups from this kind of destination is not supported by ops-operator yet")

// Credentials are what the backup's vmbackup runs got from the
// destination's credentials Secret: with a key, that key's value as a
// credentials file (File); without, every key as an environment variable
// (Env). Both empty: the ambient identity (IRSA, instance profile).
type Credentials struct {
	File []byte
	Env  map[string]string
}

// Options tune the deleters.
type Options struct {
	// S3Endpoint overrides the S3 endpoint (path-style addressing), e.g.
	// an S3-compatible store; empty: AWS.
	S3Endpoint string
	// S3Region is the region when the credentials name none; empty:
	// us-east-1.
	S3Region string
	// GCSEndpoint overrides the Cloud Storage endpoint (an emulator;
	// without credentials, no authentication); empty: Google's.
	GCSEndpoint string
	// AzureEndpoint overrides the Blob service URL, account included
	// (an emulator: http://127.0.0.1:10000/<account>); empty:
	// https://<account>.<AZURE_STORAGE_DOMAIN or blob.core.windows.net>/.
	AzureEndpoint string
}

// Supported reports whether Remove can delete data at destination url.
func Supported(u string) bool {
	return strings.HasPrefix(u, "s3://") || strings.HasPrefix(u, "gs://") || strings.HasPrefix(u, "azblob://")
}

// Remove deletes every object below each of dirs (replica destinations,
// <scheme>://<bucket>/<path>) and returns how many it deleted. Objects
// already gone are fine: it can be repeated after a crash.
func Remove(ctx context.Context, dirs []string, creds Credentials, o Options) (int, error) {
	total := 0
	for _, d := range dirs {
		if !Supported(d) {
			return total, fmt.Errorf("%s: %w", d, ErrUnsupported)
		}
		bucket, prefix, err := splitURL(d)
		if err != nil {
			return total, err
		}
		if strings.HasPrefix(d, "gs://") {
			n, err := removeGCS(ctx, bucket, prefix, creds, o)
			total += n
			if err != nil {
				return total, err
			}
			continue
		}
		if strings.HasPrefix(d, "azblob://") {
			n, err := removeAzure(ctx, bucket, prefix, creds, o)
			total += n
			if err != nil {
				return total, err
			}
			continue
		}
		c, err := s3Client(ctx, creds, o)
		if err != nil {
			return total, err
		}
		n, err := removePrefix(ctx, c, bucket, prefix)
		total += n
		if err != nil {
			return total, fmt.Errorf("removing %s: %w", d, err)
		}
	}
	return total, nil
}

// splitURL returns the bucket and the key prefix (ending in "/", so that
// .../backup-1 never matches .../backup-10) of an object store URL. A URL
// naming a whole bucket is refused: a replica's destination always has a
// path below it.
func splitURL(d string) (bucket, prefix string, err error) {
	u, err := url.Parse(d)
	if err != nil {
		return "", "", fmt.Errorf("parsing %s: %w", d, err)
	}
	p := strings.Trim(u.Path, "/")
	if u.Host == "" || p == "" {
		return "", "", fmt.Errorf("refusing to remove %s: not a path below a bucket", d)
	}
	return u.Host, p + "/", nil
}

func s3Client(ctx context.Context, creds Credentials, o Options) (*s3.Client, error) {
	region := o.S3Region
	var static *credentials.StaticCredentialsProvider
	id, secret, token, r := creds.Env["AWS_ACCESS_KEY_ID"], creds.Env["AWS_SECRET_ACCESS_KEY"], creds.Env["AWS_SESSION_TOKEN"], creds.Env["AWS_REGION"]
	if len(creds.File) > 0 {
		f := parseSharedCredentials(creds.File)
		id, secret, token = f["aws_access_key_id"], f["aws_secret_access_key"], f["aws_session_token"]
		if f["region"] != "" {
			r = f["region"]
		}
	}
	if r != "" {
		region = r
	}
	if region == "" {
		region = "us-east-1"
	}
	opts := []func(*config.LoadOptions) error{config.WithRegion(region)}
	if id != "" || secret != "" {
		p := credentials.NewStaticCredentialsProvider(id, secret, token)
		static = &p
		opts = append(opts, config.WithCredentialsProvider(static))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	return s3.NewFromConfig(cfg, func(so *s3.Options) {
		if o.S3Endpoint != "" {
			so.BaseEndpoint = aws.String(o.S3Endpoint)
			so.UsePathStyle = true
		}
	}), nil
}

// parseSharedCredentials reads the [default] profile of an AWS shared
// credentials file (what vmbackup's -credsFilePath takes for s3://).
func parseSharedCredentials(b []byte) map[string]string {
	out := map[string]string{}
	section := "default"
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.TrimSpace(strings.TrimPrefix(strings.Trim(line, "[]"), "profile "))
		case section == "default":
			if k, v, ok := strings.Cut(line, "="); ok {
				out[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
			}
		}
	}
	return out
}

// removePrefix deletes every object whose key starts with prefix.
func removePrefix(ctx context.Context, c *s3.Client, bucket, prefix string) (int, error) {
	deleted := 0
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return deleted, fmt.Errorf("listing s3://%s/%s: %w", bucket, prefix, err)
		}
		var ids []s3types.ObjectIdentifier
		for _, obj := range page.Contents {
			ids = append(ids, s3types.ObjectIdentifier{Key: obj.Key})
		}
		for len(ids) > 0 {
			n := min(len(ids), 1000)
			out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{
				Bucket: aws.String(bucket), Delete: &s3types.Delete{Objects: ids[:n], Quiet: aws.Bool(true)},
			})
			if err != nil {
				return deleted, fmt.Errorf("deleting objects of s3://%s/%s: %w", bucket, prefix, err)
			}
			if len(out.Errors) > 0 {
				e := out.Errors[0]
				return deleted, fmt.Errorf("deleting s3://%s/%s: %s: %s (%d objects not deleted)", bucket, aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message), len(out.Errors))
			}
			deleted += n
			ids = ids[n:]
		}
	}
	return deleted, nil
}
