package backupdata

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"

	"github.com/tidbcloud/ops-server/operator/internal/outcome"
)

// The environment variables vmbackup reads for azblob:// (its
// lib/backup/azremote), in the order it tries them. The destination's
// credentials Secret (without a key) holds the same names.
const (
	azureConnectionString = "AZURE_STORAGE_ACCOUNT_CONNECTION_STRING"
	azureAccountName      = "AZURE_STORAGE_ACCOUNT_NAME"
	azureAccountKey       = "AZURE_STORAGE_ACCOUNT_KEY"
	azureUseDefault       = "AZURE_USE_DEFAULT_CREDENTIAL"
	azureDomain           = "AZURE_STORAGE_DOMAIN"
)

// errAzureCredentials: nothing vmbackup could have authenticated with
// either. Retrying does not help.
var errAzureCredentials = errors.New("no Azure credentials: the destination's credentials Secret (without a key) must hold " +
	azureConnectionString + ", or " + azureAccountName + " and " + azureAccountKey + ", or " + azureAccountName + " and " +
	azureUseDefault + "=true, as for vmbackup")

// removeAzure deletes every blob under azblob://<container>/<prefix> with
// the official Azure SDK (azblob): List Blobs by prefix, then Delete Blob
// one by one (including its snapshots). Credentials are vmbackup's
// environment variables: a connection string (shared key or SAS), an
// account name and key (shared key), or an account name with the ambient
// identity (AZURE_USE_DEFAULT_CREDENTIAL=true: workload identity, managed
// identity). AZURE_STORAGE_DOMAIN replaces blob.core.windows.net;
// Options.AzureEndpoint replaces the whole service URL (an emulator).
func removeAzure(ctx context.Context, containerName, prefix string, creds Credentials, o Options) (int, error) {
	c, err := azureContainer(containerName, creds, o)
	if err != nil {
		return 0, err
	}
	deleted := 0
	pager := c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			if bloberror.HasCode(err, bloberror.ContainerNotFound) {
				return deleted, nil // nothing left to delete
			}
			return deleted, fmt.Errorf("listing azblob://%s/%s: %w", containerName, prefix, azureError(err))
		}
		if page.Segment == nil {
			continue
		}
		for _, item := range page.Segment.BlobItems {
			if item.Name == nil {
				continue
			}
			include := blob.DeleteSnapshotsOptionTypeInclude
			_, err := c.NewBlobClient(*item.Name).Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: &include})
			if err != nil {
				if bloberror.HasCode(err, bloberror.BlobNotFound) {
					continue // already gone
				}
				return deleted, fmt.Errorf("deleting azblob://%s/%s: %w", containerName, *item.Name, azureError(err))
			}
			deleted++
		}
	}
	return deleted, nil
}

// azureContainer builds the container client from vmbackup's variables.
func azureContainer(name string, creds Credentials, o Options) (*container.Client, error) {
	if len(creds.File) > 0 {
		return nil, outcome.Terminal(fmt.Errorf("azblob:// credentials are environment variables, as for vmbackup: reference the credentials Secret without a key"))
	}
	env := creds.Env
	opts := &service.ClientOptions{ClientOptions: policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: 2}}}
	serviceURL := func(account string) string {
		if o.AzureEndpoint != "" {
			return strings.TrimSuffix(o.AzureEndpoint, "/") + "/"
		}
		domain := "blob.core.windows.net"
		if d := env[azureDomain]; d != "" {
			domain = d
		}
		return fmt.Sprintf("https://%s.%s/", account, domain)
	}
	var (
		sc  *service.Client
		err error
	)
	switch {
	case env[azureConnectionString] != "":
		sc, err = service.NewClientFromConnectionString(env[azureConnectionString], opts)
	case env[azureAccountKey] != "":
		if env[azureAccountName] == "" {
			return nil, outcome.Terminal(fmt.Errorf("%s is set without %s", azureAccountKey, azureAccountName))
		}
		cred, cerr := service.NewSharedKeyCredential(env[azureAccountName], env[azureAccountKey])
		if cerr != nil {
			return nil, outcome.Terminal(fmt.Errorf("the Azure shared key: %w", cerr))
		}
		sc, err = service.NewClientWithSharedKeyCredential(serviceURL(env[azureAccountName]), cred, opts)
	case env[azureUseDefault] == "true":
		if env[azureAccountName] == "" {
			return nil, outcome.Terminal(fmt.Errorf("%s=true is set without %s", azureUseDefault, azureAccountName))
		}
		cred, cerr := azidentity.NewDefaultAzureCredential(nil)
		if cerr != nil {
			return nil, fmt.Errorf("the default Azure credential: %w", cerr)
		}
		sc, err = service.NewClient(serviceURL(env[azureAccountName]), cred, opts)
	default:
		return nil, outcome.Terminal(errAzureCredentials)
	}
	if err != nil {
		return nil, outcome.Terminal(fmt.Errorf("building the Azure Blob client: %w", err))
	}
	return sc.NewContainerClient(name), nil
}

// azureError shortens the SDK's multi-line response dump to its status and
// error code (the dump repeats the request URL, which can hold a SAS).
func azureError(err error) error {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return fmt.Errorf("%d %s", re.StatusCode, re.ErrorCode)
	}
	return err
}
