/*
Copyright 2026 The ops-server Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package apivalidation

import (
	"testing"

	"github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

func backupSpec() obj {
	return mustJSON(`{
  "vmCluster": {"namespace": "observability", "name": "vmcluster"},
  "destination": {
    "url": "s3://o11y-backups/vmcluster/2026-05-06",
    "credentialsSecretRef": {"name": "backup-credentials", "key": "credentials"}
  }
}`)
}

// setURL sets the destination URL (and drops the credentials, which fs://
// forbids).
func setURL(url string) func(obj) {
	return func(s obj) {
		d := s["destination"].(obj)
		d["url"] = url
		delete(d, "credentialsSecretRef")
	}
}

func TestClusterBackupCreate(t *testing.T) {
	const url = "spec.destination.url"
	cases := []specCase{
		{name: "s3 with credentials", mutate: nil},
		{name: "s3 bucket only", mutate: setURL("s3://o11y-backups")},
		{name: "gs", mutate: setURL("gs://o11y_backups/vm")},
		{name: "azblob", mutate: setURL("azblob://container/path/to/backup")},
		{name: "fs absolute path", mutate: setURL("fs:///var/backups/vm")},
		{name: "minimal", mutate: func(s obj) {
			s["vmCluster"] = obj{"name": "vmcluster"}
			setURL("gs://b")(s)
		}},

		// Required fields.
		{name: "vmCluster missing", mutate: func(s obj) { delete(s, "vmCluster") },
			reject: rejected("spec.vmCluster", "Required value")},
		{name: "vmCluster name missing", mutate: func(s obj) { delete(s["vmCluster"].(obj), "name") },
			reject: rejected("spec.vmCluster.name", "Required value")},
		{name: "vmCluster name empty", mutate: func(s obj) { s["vmCluster"].(obj)["name"] = "" },
			reject: rejected("spec.vmCluster.name", "at least 1 chars long")},
		{name: "vmCluster name not a DNS label", mutate: func(s obj) { s["vmCluster"].(obj)["name"] = "VM_Cluster" },
			reject: rejected("spec.vmCluster.name", "should match")},
		{name: "vmCluster namespace not a DNS label", mutate: func(s obj) { s["vmCluster"].(obj)["namespace"] = "Observability" },
			reject: rejected("spec.vmCluster.namespace", "should match")},
		{name: "vmCluster name too long", mutate: func(s obj) { s["vmCluster"].(obj)["name"] = repeat('v', 64) },
			reject: rejected("spec.vmCluster.name", "Too long")},
		{name: "destination missing", mutate: func(s obj) { delete(s, "destination") },
			reject: rejected("spec.destination", "Required value")},
		{name: "url missing", mutate: func(s obj) { delete(s["destination"].(obj), "url") },
			reject: rejected(url, "Required value")},

		// The URL scheme and shape.
		{name: "url http", mutate: setURL("http://minio:9000/backups"),
			reject: rejected(url, "url must start with s3://, gs://, azblob:// or fs://")},
		{name: "url without scheme", mutate: setURL("o11y-backups/vm"),
			reject: rejected(url, "url must start with s3://, gs://, azblob:// or fs://")},
		{name: "url upper-case scheme", mutate: setURL("S3://o11y-backups"),
			reject: rejected(url, "url must start with s3://, gs://, azblob:// or fs://")},
		{name: "url fs relative", mutate: setURL("fs://backups"),
			reject: rejected(url, "url with fs:// must be an absolute path")},
		{name: "url fs root only", mutate: setURL("fs:///"),
			reject: rejected(url, "url with fs:// must be an absolute path")},
		{name: "url s3 without bucket", mutate: setURL("s3://"),
			reject: rejected(url, "url must name a bucket or container")},
		{name: "url s3 with empty bucket", mutate: setURL("s3:///path"),
			reject: rejected(url, "url must name a bucket or container")},
		{name: "url with query string", mutate: setURL("s3://bucket/path?region=us-west-2"),
			reject: rejected(url, "should match")},
		{name: "url with space", mutate: setURL("s3://bucket/my path"),
			reject: rejected(url, "should match")},
		{name: "url too long", mutate: setURL("s3://bucket/" + repeat('p', 1013)),
			reject: rejected(url, "Too long")},

		// Credentials.
		{name: "credentials without key", mutate: func(s obj) {
			delete(s["destination"].(obj)["credentialsSecretRef"].(obj), "key")
		}},
		{name: "credentials name missing", mutate: func(s obj) {
			delete(s["destination"].(obj)["credentialsSecretRef"].(obj), "name")
		}, reject: rejected("spec.destination.credentialsSecretRef.name", "Required value")},
		{name: "credentials name invalid", mutate: func(s obj) {
			s["destination"].(obj)["credentialsSecretRef"].(obj)["name"] = "Backup_Credentials"
		}, reject: rejected("spec.destination.credentialsSecretRef.name", "should match")},
		{name: "credentials key invalid", mutate: func(s obj) {
			s["destination"].(obj)["credentialsSecretRef"].(obj)["key"] = "a/b"
		}, reject: rejected("spec.destination.credentialsSecretRef.key", "should match")},
		{name: "credentials with fs", mutate: func(s obj) { s["destination"].(obj)["url"] = "fs:///backups" },
			reject: rejected("spec.destination.credentialsSecretRef", "credentialsSecretRef is not used with an fs:// url")},

		// Concurrency bounds.
		{name: "concurrency 1", mutate: func(s obj) { s["concurrency"] = 1 }},
		{name: "concurrency 32", mutate: func(s obj) { s["concurrency"] = 32 }},
		{name: "concurrency 0", mutate: func(s obj) { s["concurrency"] = 0 },
			reject: rejected("spec.concurrency", "greater than or equal to 1")},
		{name: "concurrency 33", mutate: func(s obj) { s["concurrency"] = 33 },
			reject: rejected("spec.concurrency", "less than or equal to 32")},

		// deletionPolicy enum.
		{name: "deletionPolicy Delete", mutate: func(s obj) { s["deletionPolicy"] = "Delete" }},
		{name: "deletionPolicy Retain", mutate: func(s obj) { s["deletionPolicy"] = "Retain" }},
		{name: "deletionPolicy unknown", mutate: func(s obj) { s["deletionPolicy"] = "Orphan" },
			reject: rejected("spec.deletionPolicy", `Unsupported value: "Orphan"`)},

		// snapshotAuthKeySecretRef.
		{name: "snapshot auth key", mutate: func(s obj) { s["snapshotAuthKeySecretRef"] = obj{"name": "vmstorage-auth"} }},
		{name: "snapshot auth key without name", mutate: func(s obj) { s["snapshotAuthKeySecretRef"] = obj{"key": "authKey"} },
			reject: rejected("spec.snapshotAuthKeySecretRef.name", "Required value")},
	}
	runCreateCases(t, v1alpha1.ClusterBackupKind, backupSpec, cases)
}

func TestClusterBackupImmutability(t *testing.T) {
	cases := []updateCase{
		{name: "deletionPolicy changed", mutate: func(s obj) { s["deletionPolicy"] = "Delete" }},
		{name: "vmCluster changed", mutate: func(s obj) { s["vmCluster"].(obj)["name"] = "other" },
			reject: rejected("spec.vmCluster", "vmCluster is immutable")},
		{name: "url changed", mutate: func(s obj) { s["destination"].(obj)["url"] = "s3://other" },
			reject: rejected("spec.destination", "destination is immutable")},
		{name: "credentials removed", mutate: func(s obj) { delete(s["destination"].(obj), "credentialsSecretRef") },
			reject: rejected("spec.destination", "destination is immutable")},
		{name: "concurrency added", mutate: func(s obj) { s["concurrency"] = 2 },
			reject: rejected("spec.concurrency", "concurrency is immutable")},
		{name: "snapshot auth key added", mutate: func(s obj) { s["snapshotAuthKeySecretRef"] = obj{"name": "auth"} },
			reject: rejected("spec.snapshotAuthKeySecretRef", "snapshotAuthKeySecretRef is immutable")},
	}
	runUpdateCases(t, v1alpha1.ClusterBackupKind, backupSpec, cases)
}

func TestClusterBackupImmutabilityOfSetFields(t *testing.T) {
	full := func() obj {
		s := backupSpec()
		s["concurrency"] = 2
		s["snapshotAuthKeySecretRef"] = obj{"name": "auth", "key": "k"}
		return s
	}
	cases := []updateCase{
		{name: "deletionPolicy changed", mutate: func(s obj) { s["deletionPolicy"] = "Delete" }},
		{name: "concurrency changed", mutate: func(s obj) { s["concurrency"] = 3 },
			reject: rejected("spec.concurrency", "concurrency is immutable")},
		{name: "concurrency removed", mutate: func(s obj) { delete(s, "concurrency") },
			reject: rejected("spec.concurrency", "concurrency is immutable")},
		{name: "snapshot auth key changed", mutate: func(s obj) { s["snapshotAuthKeySecretRef"].(obj)["key"] = "other" },
			reject: rejected("spec.snapshotAuthKeySecretRef", "snapshotAuthKeySecretRef is immutable")},
		{name: "snapshot auth key removed", mutate: func(s obj) { delete(s, "snapshotAuthKeySecretRef") },
			reject: rejected("spec.snapshotAuthKeySecretRef", "snapshotAuthKeySecretRef is immutable")},
	}
	runUpdateCases(t, v1alpha1.ClusterBackupKind, full, cases)
}
