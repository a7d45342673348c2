package backupdata

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
	storage "google.golang.org/api/storage/v1"
)

// removeGCS deletes every object under gs://bucket/prefix with Google's
// official Cloud Storage JSON API client (google.golang.org/api/storage/v1):
// objects.list by prefix, then objects.delete one by one (the JSON API has
// no batch delete outside its batch endpoint). The credentials are what
// vmbackup takes for gs://: a service account key file (Credentials.File),
// or the ambient identity (workload identity, GOOGLE_APPLICATION_CREDENTIALS).
func removeGCS(ctx context.Context, bucket, prefix string, creds Credentials, o Options) (int, error) {
	opts := []option.ClientOption{}
	switch {
	case len(creds.File) > 0:
		opts = append(opts, option.WithCredentialsJSON(creds.File))
	case o.GCSEndpoint != "":
		// An emulator (STORAGE_EMULATOR_HOST-style endpoint) needs no
		// credentials.
		opts = append(opts, option.WithoutAuthentication())
	}
	if o.GCSEndpoint != "" {
		opts = append(opts, option.WithEndpoint(o.GCSEndpoint+"/storage/v1/"))
	}
	svc, err := storage.NewService(ctx, opts...)
	if err != nil {
		return 0, fmt.Errorf("building the Cloud Storage client: %w", err)
	}
	deleted := 0
	err = svc.Objects.List(bucket).Prefix(prefix).Fields("items(name),nextPageToken").Pages(ctx, func(page *storage.Objects) error {
		for _, obj := range page.Items {
			if err := svc.Objects.Delete(bucket, obj.Name).Context(ctx).Do(); err != nil {
				var gerr *googleapi.Error
				if errors.As(err, &gerr) && gerr.Code == http.StatusNotFound {
					continue // already gone
				}
				return fmt.Errorf("deleting gs://%s/%s: %w", bucket, obj.Name, err)
			}
			deleted++
		}
		return nil
	})
	if err != nil {
		return deleted, fmt.Errorf("removing gs://%s/%s: %w", bucket, prefix, err)
	}
	return deleted, nil
}
