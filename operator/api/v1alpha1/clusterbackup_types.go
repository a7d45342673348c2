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

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterBackupKind is the kind of ClusterBackup.
const ClusterBackupKind = "ClusterBackup"

// DefaultSnapshotAuthKeySecretKey is the key read from
// snapshotAuthKeySecretRef when its key is omitted.
const DefaultSnapshotAuthKeySecretKey = "authKey"

// DeletionPolicy says what happens to the backup data when a ClusterBackup is
// deleted.
// +kubebuilder:validation:Enum=Retain;Delete
type DeletionPolicy string

const (
	// DeletionPolicyRetain keeps the backup data at the destination.
	DeletionPolicyRetain DeletionPolicy = "Retain"
	// DeletionPolicyDelete deletes the data the backup wrote at the
	// destination before the object goes away.
	DeletionPolicyDelete DeletionPolicy = "Delete"
)

// ClusterBackupSpec says which VMCluster to back up and where to.
//
// Everything except deletionPolicy is immutable: a backup is a record of
// what was backed up where. To back up again, create a new ClusterBackup (a
// backup to the same destination URL is incremental).
//
// +kubebuilder:validation:XValidation:rule="self.vmCluster == oldSelf.vmCluster",message="vmCluster is immutable",fieldPath=".vmCluster"
// +kubebuilder:validation:XValidation:rule="self.destination == oldSelf.destination",message="destination is immutable",fieldPath=".destination"
// +kubebuilder:validation:XValidation:rule="has(self.concurrency) == has(oldSelf.concurrency) && (!has(self.concurrency) || self.concurrency == oldSelf.concurrency)",message="concurrency is immutable",fieldPath=".concurrency"
// +kubebuilder:validation:XValidation:rule="has(self.snapshotAuthKeySecretRef) == has(oldSelf.snapshotAuthKeySecretRef) && (!has(self.snapshotAuthKeySecretRef) || self.snapshotAuthKeySecretRef == oldSelf.snapshotAuthKeySecretRef)",message="snapshotAuthKeySecretRef is immutable",fieldPath=".snapshotAuthKeySecretRef"
type ClusterBackupSpec struct {
	// VMCluster is the VMCluster whose vmstorage replicas are backed up.
	// +required
	VMCluster VMClusterReference `json:"vmCluster"`

	// Destination is where the backup is written. Each vmstorage replica is
	// backed up under its own path below destination.url.
	// +required
	Destination BackupDestination `json:"destination"`

	// Concurrency is how many vmstorage replicas are backed up at the same
	// time, from 1 to 32. Omitted: all replicas at once.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=32
	Concurrency *int32 `json:"concurrency,omitempty"`

	// DeletionPolicy is what happens to the backup data when the ClusterBackup
	// is deleted: Retain (the default) keeps it, Delete removes what the
	// backup wrote under destination.url. It is the only field that may be
	// changed after creation.
	// +optional
	// +kubebuilder:default=Retain
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// SnapshotAuthKeySecretRef is the Secret holding vmstorage's
	// -snapshotAuthKey, when vmstorage runs with one; its key defaults to
	// authKey. Omitted: the snapshot API is called without authKey. The
	// Secret must be labelled
	// ops.observability.tidbcloud.com/backup-credentials: "true".
	// +optional
	SnapshotAuthKeySecretRef *SecretKeyReference `json:"snapshotAuthKeySecretRef,omitempty"`
}

// VMClusterReference names a VMCluster (operator.victoriametrics.com/v1beta1).
type VMClusterReference struct {
	// Namespace of the VMCluster. Omitted in a ClusterBackup: the
	// ClusterBackup's namespace, the only one allowed (the chart's
	// ValidatingAdmissionPolicy refuses another at admission; ops-operator
	// fails such a backup with reason InvalidSpec). Omitted in a node-group
	// upgrade: observability.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace,omitempty"`

	// Name of the VMCluster.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
}

// BackupDestination is an object store (or a file system path) and the
// credentials to write to it.
//
// +kubebuilder:validation:XValidation:rule="!self.url.startsWith('fs://') || !has(self.credentialsSecretRef)",message="credentialsSecretRef is not used with an fs:// url",fieldPath=".credentialsSecretRef",reason="FieldValueForbidden"
type BackupDestination struct {
	// URL is the backup location, as vmbackup's -dst takes it:
	// s3://<bucket>[/<path>], gs://<bucket>[/<path>],
	// azblob://<container>[/<path>] or fs:///<absolute path>. No query string
	// or fragment; credentials never go in the URL. An fs:// path, cleaned,
	// must be inside one of ops-operator's --backup-fs-roots (none by
	// default).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[^\s?#]+$`
	// +kubebuilder:validation:XValidation:rule="self.matches('^(s3|gs|azblob|fs)://')",message="url must start with s3://, gs://, azblob:// or fs://"
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('fs://') || self.matches('^fs:///.')",message="url with fs:// must be an absolute path, e.g. fs:///backups"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^(s3|gs|azblob)://') || self.matches('^[a-z0-9]+://[a-zA-Z0-9][-a-zA-Z0-9._]*(/.*)?$')",message="url must name a bucket or container, e.g. s3://<bucket>/<path>"
	URL string `json:"url"`

	// CredentialsSecretRef is a Secret in the ClusterBackup's namespace with
	// the credentials for the object store. With key set, that key's value is
	// passed to vmbackup as its -credsFilePath file (an AWS shared
	// credentials file for s3://, a service account key for gs://); without
	// key, every key of the Secret is passed to vmbackup as an environment
	// variable (e.g. AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or
	// AZURE_STORAGE_ACCOUNT_NAME and AZURE_STORAGE_ACCOUNT_KEY). Omitted: the
	// ambient identity (IRSA, workload identity). Not used with fs://. The
	// Secret must be labelled
	// ops.observability.tidbcloud.com/backup-credentials: "true".
	// +optional
	CredentialsSecretRef *SecretKeyReference `json:"credentialsSecretRef,omitempty"`
}

// SecretKeyReference names a Secret in the referring object's namespace and
// optionally one of its keys.
type SecretKeyReference struct {
	// Name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// Key in the Secret; what omitting it means depends on the referring
	// field.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// BackupPhase is the lifecycle phase of a ClusterBackup.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;PartiallyFailed;Failed
type BackupPhase string

const (
	// BackupPhasePending: accepted, no replica started yet.
	BackupPhasePending BackupPhase = "Pending"
	// BackupPhaseRunning: replicas are being backed up.
	BackupPhaseRunning BackupPhase = "Running"
	// BackupPhaseSucceeded: every replica was backed up (terminal).
	BackupPhaseSucceeded BackupPhase = "Succeeded"
	// BackupPhasePartiallyFailed: some replicas were backed up, some failed
	// (terminal).
	BackupPhasePartiallyFailed BackupPhase = "PartiallyFailed"
	// BackupPhaseFailed: no replica was backed up, or the backup could not
	// start (terminal).
	BackupPhaseFailed BackupPhase = "Failed"
)

// IsTerminal reports whether the phase is final: Succeeded, PartiallyFailed
// or Failed.
func (p BackupPhase) IsTerminal() bool {
	switch p {
	case BackupPhaseSucceeded, BackupPhasePartiallyFailed, BackupPhaseFailed:
		return true
	}
	return false
}

// ReplicaBackupState is the state of the backup of one vmstorage replica.
// +kubebuilder:validation:Enum=Pending;Snapshotting;Uploading;Succeeded;Failed
type ReplicaBackupState string

const (
	// ReplicaStatePending: not started.
	ReplicaStatePending ReplicaBackupState = "Pending"
	// ReplicaStateSnapshotting: an instant snapshot is being created.
	ReplicaStateSnapshotting ReplicaBackupState = "Snapshotting"
	// ReplicaStateUploading: the snapshot is being uploaded by vmbackup.
	ReplicaStateUploading ReplicaBackupState = "Uploading"
	// ReplicaStateSucceeded: the replica's backup is complete.
	ReplicaStateSucceeded ReplicaBackupState = "Succeeded"
	// ReplicaStateFailed: the replica's backup failed.
	ReplicaStateFailed ReplicaBackupState = "Failed"
)

// IsTerminal reports whether the replica's backup is finished: Succeeded or
// Failed.
func (s ReplicaBackupState) IsTerminal() bool {
	return s == ReplicaStateSucceeded || s == ReplicaStateFailed
}

// ReplicaBackup is the backup of one vmstorage replica.
type ReplicaBackup struct {
	// Pod is the vmstorage pod backed up.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Pod string `json:"pod"`

	// PodUID is the UID of that pod; a pod recreated under the same name is
	// a different replica instance.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	PodUID string `json:"podUID,omitempty"`

	// Node is the node the pod ran on.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node,omitempty"`

	// Endpoint is the vmstorage HTTP endpoint whose snapshot API was called,
	// e.g. http://10.0.0.12:8482.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Endpoint string `json:"endpoint,omitempty"`

	// Destination is the URL this replica was backed up to.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Destination string `json:"destination,omitempty"`

	// SnapshotName is the name of the instant snapshot taken on the replica.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	SnapshotName string `json:"snapshotName,omitempty"`

	// State is Pending, Snapshotting, Uploading, Succeeded or Failed.
	// +required
	State ReplicaBackupState `json:"state"`

	// JobName is the Job that runs vmbackup for this replica.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	JobName string `json:"jobName,omitempty"`

	// StartTime is when the replica's backup started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the replica's backup succeeded or failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Bytes is the size of the replica's backup.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Bytes int64 `json:"bytes,omitempty"`

	// Error is why the replica's backup failed.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Error string `json:"error,omitempty"`
}

// ClusterBackupStatus is the observed state of a ClusterBackup. It is written
// by the operator only.
type ClusterBackupStatus struct {
	// ObservedGeneration is the last generation the operator fully handled;
	// -1 until then.
	// +optional
	// +kubebuilder:default=-1
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase is Pending, Running, Succeeded, PartiallyFailed or Failed.
	// +optional
	Phase BackupPhase `json:"phase,omitempty"`

	// Progress is "<finished>/<total>" replicas, e.g. "2/3".
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[0-9]+/[0-9]+$`
	Progress string `json:"progress,omitempty"`

	// Conditions are Ready, Reconciling and Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// StartTime is when the first replica's backup started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the backup reached a terminal phase.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Replicas has one entry per vmstorage replica, by pod name.
	// +optional
	// +listType=map
	// +listMapKey=pod
	// +kubebuilder:validation:MaxItems=512
	Replicas []ReplicaBackup `json:"replicas,omitempty"`
}

// ClusterBackup backs up every vmstorage replica of a VMCluster: an instant
// snapshot per replica, uploaded with vmbackup to an object store.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cbackup,categories=ops
// +kubebuilder:printcolumn:name="VMCluster",type=string,JSONPath=`.spec.vmCluster.name`
// +kubebuilder:printcolumn:name="Destination",type=string,JSONPath=`.spec.destination.url`,priority=1
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Progress",type=string,JSONPath=`.status.progress`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterBackup struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the backup request.
	// +required
	Spec ClusterBackupSpec `json:"spec"`

	// Status is the progress of the backup, written by the operator.
	// +optional
	// +kubebuilder:default={"observedGeneration":-1}
	Status ClusterBackupStatus `json:"status,omitempty"`
}

// VMClusterKey returns the namespace and name of the VMCluster to back up;
// the namespace defaults to the ClusterBackup's own.
func (b *ClusterBackup) VMClusterKey() (namespace, name string) {
	namespace = b.Spec.VMCluster.Namespace
	if namespace == "" {
		namespace = b.Namespace
	}
	return namespace, b.Spec.VMCluster.Name
}

// ClusterBackupList is a list of ClusterBackups.
//
// +kubebuilder:object:root=true
type ClusterBackupList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the ClusterBackups.
	Items []ClusterBackup `json:"items"`
}
