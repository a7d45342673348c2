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
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterBackupScheduleKind is the kind of ClusterBackupSchedule.
const ClusterBackupScheduleKind = "ClusterBackupSchedule"

// Labels and annotations of the ClusterBackups a schedule creates.
const (
	// ScheduleLabel names the ClusterBackupSchedule that created a
	// ClusterBackup; retention only ever looks at backups carrying it.
	ScheduleLabel = "ops.observability.tidbcloud.com/backup-schedule"
	// ScheduledTimeAnnotation is the schedule tick (RFC 3339, UTC) a
	// ClusterBackup was created for.
	ScheduledTimeAnnotation = "ops.observability.tidbcloud.com/scheduled-time"
)

// MaxScheduleNameLength bounds a ClusterBackupSchedule's name so that the
// names of its backups, <schedule>-<yyyymmddhhmm>, stay DNS labels.
const MaxScheduleNameLength = 63 - len("-200601021504")

// ScheduledBackupName is the name of the ClusterBackup a schedule creates
// for the tick at t: one name per tick, so an operator that crashed after
// creating it finds it again instead of creating a second one.
func ScheduledBackupName(schedule string, t metav1.Time) string {
	return fmt.Sprintf("%s-%s", schedule, t.UTC().Format("200601021504"))
}

// ClusterBackupScheduleSpec says when to back up which VMCluster where, and
// how many of the backups to keep.
//
// +kubebuilder:validation:XValidation:rule="has(self.keepLast) || has(self.keepDays)",message="set keepLast, keepDays or both: a schedule without retention would keep every backup for ever",fieldPath=".keepLast"
// +kubebuilder:validation:XValidation:rule="self.vmCluster == oldSelf.vmCluster",message="vmCluster is immutable",fieldPath=".vmCluster"
type ClusterBackupScheduleSpec struct {
	// Schedule is a cron expression in UTC with five fields (minute, hour,
	// day of month, month, day of week), e.g. "0 3 * * *", or a descriptor
	// (@hourly, @daily, @weekly, @monthly, @every <duration> of at least a
	// minute). ops-operator parses it with github.com/robfig/cron/v3 and
	// fails the schedule (reason InvalidSpec) when it cannot.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Schedule string `json:"schedule"`

	// VMCluster is the VMCluster backed up; its namespace must be the
	// schedule's own (omitted: the schedule's).
	// +required
	VMCluster VMClusterReference `json:"vmCluster"`

	// Destination is where every backup of the schedule is written (each
	// under its own path, <url>/<vmcluster>/<backup>/<pod>).
	// +required
	Destination BackupDestination `json:"destination"`

	// Concurrency of each backup (see ClusterBackup).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=32
	Concurrency *int32 `json:"concurrency,omitempty"`

	// SnapshotAuthKeySecretRef of each backup (see ClusterBackup).
	// +optional
	SnapshotAuthKeySecretRef *SecretKeyReference `json:"snapshotAuthKeySecretRef,omitempty"`

	// KeepLast keeps the newest keepLast Succeeded backups.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	KeepLast *int32 `json:"keepLast,omitempty"`

	// KeepDays keeps the Succeeded backups scheduled less than keepDays
	// days ago. With keepLast too, a backup is kept when either rule keeps
	// it.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3650
	KeepDays *int32 `json:"keepDays,omitempty"`

	// Suspend stops creating backups (retention still runs).
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// DeletedBackup is a backup retention deleted.
type DeletedBackup struct {
	// Name of the ClusterBackup.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Reason says why it was deleted.
	// +required
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason"`
	// Time it was deleted.
	// +required
	Time metav1.Time `json:"time"`
}

// ClusterBackupScheduleStatus is the observed state of a
// ClusterBackupSchedule, written by the operator only.
type ClusterBackupScheduleStatus struct {
	// ObservedGeneration is the last generation the operator handled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are Ready and Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// LastScheduleTime is the last tick a backup was created for.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`

	// NextScheduleTime is the next tick.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`

	// LastBackup is the ClusterBackup created for lastScheduleTime.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	LastBackup string `json:"lastBackup,omitempty"`

	// LastSuccessfulBackup is the newest ClusterBackup of the schedule that
	// Succeeded, and LastSuccessfulTime when it completed.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	LastSuccessfulBackup string `json:"lastSuccessfulBackup,omitempty"`
	// +optional
	LastSuccessfulTime *metav1.Time `json:"lastSuccessfulTime,omitempty"`

	// Retained are the ClusterBackups of the schedule kept, newest first.
	// +optional
	// +kubebuilder:validation:MaxItems=1100
	// +kubebuilder:validation:items:MaxLength=253
	Retained []string `json:"retained,omitempty"`

	// DeletedTotal counts the backups retention deleted.
	// +optional
	// +kubebuilder:validation:Minimum=0
	DeletedTotal int64 `json:"deletedTotal,omitempty"`

	// LastDeleted are the last backups retention deleted, newest first.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	LastDeleted []DeletedBackup `json:"lastDeleted,omitempty"`
}

// ClusterBackupSchedule creates a ClusterBackup of a VMCluster at every
// tick of a cron schedule and deletes the backups its retention no longer
// keeps, data included.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cbschedule,categories=ops
// +kubebuilder:printcolumn:name="VMCluster",type=string,JSONPath=`.spec.vmCluster.name`
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Suspend",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Last",type=date,JSONPath=`.status.lastScheduleTime`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 50",message="metadata.name must be at most 50 characters: the backups are named <schedule>-<yyyymmddhhmm>"
type ClusterBackupSchedule struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec ClusterBackupScheduleSpec `json:"spec"`

	// +optional
	Status ClusterBackupScheduleStatus `json:"status,omitempty"`
}

// VMClusterKey returns the namespace and name of the VMCluster; the
// namespace defaults to the schedule's own.
func (s *ClusterBackupSchedule) VMClusterKey() (namespace, name string) {
	namespace = s.Spec.VMCluster.Namespace
	if namespace == "" {
		namespace = s.Namespace
	}
	return namespace, s.Spec.VMCluster.Name
}

// ClusterBackupScheduleList is a list of ClusterBackupSchedules.
//
// +kubebuilder:object:root=true
type ClusterBackupScheduleList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterBackupSchedule `json:"items"`
}
