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

// Condition types. Every ops-server object reports the same three, following
// the Kubernetes API conventions (and Flux's kstatus-compatible use of them):
//
//   - Ready is the summary: True once the work finished successfully, False
//     while it is not (yet) done or after it failed; its message is the one a
//     human reads first.
//   - Reconciling is True while the operator makes progress on the object and
//     absent otherwise.
//   - Stalled is True when progress stopped and only a change by a human (or
//     nothing) can resume it: a terminal failure, an invalid spec, or a
//     blocker that did not clear in time. It is absent otherwise.
const (
	// ReadyCondition summarises the state of the object.
	ReadyCondition = "Ready"
	// ReconcilingCondition is True while the operator is making progress.
	ReconcilingCondition = "Reconciling"
	// StalledCondition is True when the operator cannot make progress.
	StalledCondition = "Stalled"
)

// Condition reasons. A condition always carries one of these reasons; the
// message adds the details (which step, which pod, which cloud error).
const (
	// ProgressingReason: the operator is working on the object (a step or a
	// replica is running).
	ProgressingReason = "Progressing"
	// WaitingForScheduleReason: a ClusterUpgradeOperation waits for
	// spec.schedule.
	WaitingForScheduleReason = "WaitingForSchedule"
	// PausedReason: spec.paused is true; no new step is started.
	PausedReason = "Paused"
	// BlockedReason: progress waits on something outside the operator's
	// control, described in status.blockedBy (for example a pod whose eviction
	// a PodDisruptionBudget refuses).
	BlockedReason = "Blocked"
	// SucceededReason: all the work finished successfully.
	SucceededReason = "Succeeded"
	// FailedReason: the work ended with a failure that retrying will not fix.
	FailedReason = "Failed"
	// PartiallyFailedReason: a ClusterBackup finished with some replicas
	// backed up and some failed.
	PartiallyFailedReason = "PartiallyFailed"
	// CancellingReason: cancellation was requested (spec.cancel) and the
	// operator is winding down the step in flight.
	CancellingReason = "Cancelling"
	// CancelledReason: the operation stopped because it was cancelled.
	CancelledReason = "Cancelled"
	// WaitingForOperationReason: a ClusterUpgradeOperation waits for
	// another one of the same cluster to finish (one active upgrade per
	// cluster), or a ClusterBackup waits for the vmstorage rollout of an
	// upgrade of its VMCluster; the message names the operation.
	WaitingForOperationReason = "WaitingForOperation"
	// WaitingForBackupReason: a vmstorage rollout waits for a running
	// ClusterBackup of the same VMCluster; status.blockedBy names it.
	WaitingForBackupReason = "WaitingForBackup"
	// InvalidSpecReason: the spec passed the CRD's validation but cannot be
	// carried out (for example a node group that does not exist in the cloud).
	InvalidSpecReason = "InvalidSpec"
	// CloudOperationFailedReason: a call to the cloud provider, or a
	// long-running cloud operation, failed.
	CloudOperationFailedReason = "CloudOperationFailed"
	// VMClusterNotFoundReason: the VMCluster a ClusterBackup or a VMStorage
	// rollout refers to does not exist.
	VMClusterNotFoundReason = "VMClusterNotFound"
	// OutsideMaintenanceWindowReason: a ClusterUpgradeOperation waits for
	// its maintenance window to open; status.nextWindowStart says when.
	OutsideMaintenanceWindowReason = "OutsideMaintenanceWindow"
	// AwaitingApprovalReason: a ClusterUpgradeOperation stops at an
	// approval gate; status.awaitingApproval names it.
	AwaitingApprovalReason = "AwaitingApproval"
)
