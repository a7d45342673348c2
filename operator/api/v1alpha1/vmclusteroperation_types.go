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
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VMClusterOperationKind is the kind of VMClusterOperation.
const VMClusterOperationKind = "VMClusterOperation"

// VMClusterOperationType is what a VMClusterOperation does.
// +kubebuilder:validation:Enum=HorizontalScaling;VerticalScaling;Restart
type VMClusterOperationType string

const (
	// OperationHorizontalScaling changes the replica counts of components.
	OperationHorizontalScaling VMClusterOperationType = "HorizontalScaling"
	// OperationVerticalScaling changes the resources of components.
	OperationVerticalScaling VMClusterOperationType = "VerticalScaling"
	// OperationRestart restarts the Pods of components, one at a time.
	OperationRestart VMClusterOperationType = "Restart"
)

// VMClusterComponent is one component of a VictoriaMetrics cluster.
// +kubebuilder:validation:Enum=vmstorage;vminsert;vmselect
type VMClusterComponent string

const (
	// ComponentVMStorage stores the data (a StatefulSet).
	ComponentVMStorage VMClusterComponent = "vmstorage"
	// ComponentVMInsert accepts writes (a Deployment).
	ComponentVMInsert VMClusterComponent = "vminsert"
	// ComponentVMSelect serves queries (a StatefulSet).
	ComponentVMSelect VMClusterComponent = "vmselect"
)

// Components are every component, in the order the vmcluster chart lists
// them.
var Components = []VMClusterComponent{ComponentVMStorage, ComponentVMInsert, ComponentVMSelect}

// DefaultOperationStepTimeout is how long one step may run when
// spec.stepTimeout is omitted.
const DefaultOperationStepTimeout = 15 * time.Minute

// VMClusterOperationSpec is an operation on one vmcluster.
//
// Everything except paused and cancel is immutable: an operation is a
// record of what was asked. Exactly the sub-spec named by type is set.
//
// +kubebuilder:validation:XValidation:rule="self.type != 'HorizontalScaling' || has(self.horizontalScaling)",message="horizontalScaling is required for type HorizontalScaling",fieldPath=".horizontalScaling",reason="FieldValueRequired"
// +kubebuilder:validation:XValidation:rule="self.type == 'HorizontalScaling' || !has(self.horizontalScaling)",message="horizontalScaling is only valid with type HorizontalScaling",fieldPath=".horizontalScaling",reason="FieldValueForbidden"
// +kubebuilder:validation:XValidation:rule="self.type != 'VerticalScaling' || has(self.verticalScaling)",message="verticalScaling is required for type VerticalScaling",fieldPath=".verticalScaling",reason="FieldValueRequired"
// +kubebuilder:validation:XValidation:rule="self.type == 'VerticalScaling' || !has(self.verticalScaling)",message="verticalScaling is only valid with type VerticalScaling",fieldPath=".verticalScaling",reason="FieldValueForbidden"
// +kubebuilder:validation:XValidation:rule="self.type != 'Restart' || has(self.restart)",message="restart is required for type Restart",fieldPath=".restart",reason="FieldValueRequired"
// +kubebuilder:validation:XValidation:rule="self.type == 'Restart' || !has(self.restart)",message="restart is only valid with type Restart",fieldPath=".restart",reason="FieldValueForbidden"
// +kubebuilder:validation:XValidation:rule="self.type == oldSelf.type",message="type is immutable",fieldPath=".type"
// +kubebuilder:validation:XValidation:rule="self.vmCluster == oldSelf.vmCluster",message="vmCluster is immutable",fieldPath=".vmCluster"
// +kubebuilder:validation:XValidation:rule="has(self.horizontalScaling) == has(oldSelf.horizontalScaling) && (!has(self.horizontalScaling) || self.horizontalScaling == oldSelf.horizontalScaling)",message="horizontalScaling is immutable",fieldPath=".horizontalScaling"
// +kubebuilder:validation:XValidation:rule="has(self.verticalScaling) == has(oldSelf.verticalScaling) && (!has(self.verticalScaling) || self.verticalScaling == oldSelf.verticalScaling)",message="verticalScaling is immutable",fieldPath=".verticalScaling"
// +kubebuilder:validation:XValidation:rule="has(self.restart) == has(oldSelf.restart) && (!has(self.restart) || self.restart == oldSelf.restart)",message="restart is immutable",fieldPath=".restart"
// +kubebuilder:validation:XValidation:rule="(has(self.order) ? self.order : []) == (has(oldSelf.order) ? oldSelf.order : [])",message="order is immutable",fieldPath=".order"
// +kubebuilder:validation:XValidation:rule="(has(self.acknowledgeReplicationRisk) && self.acknowledgeReplicationRisk) == (has(oldSelf.acknowledgeReplicationRisk) && oldSelf.acknowledgeReplicationRisk)",message="acknowledgeReplicationRisk is immutable",fieldPath=".acknowledgeReplicationRisk"
// +kubebuilder:validation:XValidation:rule="has(self.stepTimeout) == has(oldSelf.stepTimeout) && (!has(self.stepTimeout) || self.stepTimeout == oldSelf.stepTimeout)",message="stepTimeout is immutable",fieldPath=".stepTimeout"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.cancel) || !oldSelf.cancel || (has(self.cancel) && self.cancel)",message="cancel cannot be set back to false once it is true",fieldPath=".cancel"
type VMClusterOperationSpec struct {
	// VMCluster is the VMCluster (operator.victoriametrics.com/v1beta1)
	// operated on; it must be installed by a Flux HelmRelease (every
	// vmcluster of the REST API is). Its namespace, omitted, is the
	// operation's; another namespace is refused by the chart's
	// ValidatingAdmissionPolicy and by ops-operator (reason InvalidSpec).
	// +required
	VMCluster VMClusterReference `json:"vmCluster"`

	// Type is HorizontalScaling, VerticalScaling or Restart; the sub-spec
	// of the same name (horizontalScaling, verticalScaling, restart) must
	// be set, and no other.
	// +required
	Type VMClusterOperationType `json:"type"`

	// HorizontalScaling is the target replica count of each component to
	// scale.
	// +optional
	HorizontalScaling *HorizontalScaling `json:"horizontalScaling,omitempty"`

	// VerticalScaling is the target resources of each component to resize.
	// +optional
	VerticalScaling *VerticalScaling `json:"verticalScaling,omitempty"`

	// Restart names the components whose Pods are restarted, one Pod at a
	// time.
	// +optional
	Restart *Restart `json:"restart,omitempty"`

	// Order is the order in which the components are changed. Omitted: the
	// safe default order of the type (docs/operations.md): scaling up
	// vmstorage first, then vminsert and vmselect; scaling down vminsert
	// and vmselect first, then vmstorage; resizing and restarting
	// vmselect, vminsert, then vmstorage. Components not listed follow in
	// the default order.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=3
	Order []VMClusterComponent `json:"order,omitempty"`

	// AcknowledgeReplicationRisk allows scaling vmstorage below the
	// VMCluster's replicationFactor, or removing replicationFactor or more
	// vmstorage replicas in one operation: VictoriaMetrics does not
	// rebalance, so the samples whose every copy was on a removed node are
	// no longer readable. Without it such an operation is refused (reason
	// InvalidSpec).
	// +optional
	AcknowledgeReplicationRisk bool `json:"acknowledgeReplicationRisk,omitempty"`

	// StepTimeout is how long one step may take (the HelmRelease to be
	// Ready and the component to converge, or a restarted Pod to be Ready)
	// before the operation fails naming what did not converge; from 1m to
	// 6h. Omitted: 15m.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('6h')",message="stepTimeout must be between 1m and 6h"
	StepTimeout *metav1.Duration `json:"stepTimeout,omitempty"`

	// Paused stops the operation from starting its next step while true;
	// a step in flight finishes. Set it back to false to resume.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// Cancel stops the operation at the next safe point: the step in flight
	// finishes, the remaining steps are Skipped, and the phase becomes
	// Cancelled. Completed steps are not undone; status.message says what
	// was done. Once true, cancel cannot be set back to false.
	// +optional
	Cancel bool `json:"cancel,omitempty"`
}

// HorizontalScaling is the target replica count per component; at least
// one is set.
// +kubebuilder:validation:XValidation:rule="has(self.vmstorage) || has(self.vminsert) || has(self.vmselect)",message="horizontalScaling needs at least one of vmstorage, vminsert, vmselect",reason="FieldValueRequired"
type HorizontalScaling struct {
	// VMStorage is the target number of vmstorage Pods, 1 to 100.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	VMStorage *int32 `json:"vmstorage,omitempty"`
	// VMInsert is the target number of vminsert Pods, 1 to 100.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	VMInsert *int32 `json:"vminsert,omitempty"`
	// VMSelect is the target number of vmselect Pods, 1 to 100.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	VMSelect *int32 `json:"vmselect,omitempty"`
}

// Replicas returns the target of a component, nil when not scaled.
func (h *HorizontalScaling) Replicas(c VMClusterComponent) *int32 {
	if h == nil {
		return nil
	}
	switch c {
	case ComponentVMStorage:
		return h.VMStorage
	case ComponentVMInsert:
		return h.VMInsert
	case ComponentVMSelect:
		return h.VMSelect
	}
	return nil
}

// VerticalScaling is the target resources per component; at least one is
// set.
// +kubebuilder:validation:XValidation:rule="has(self.vmstorage) || has(self.vminsert) || has(self.vmselect)",message="verticalScaling needs at least one of vmstorage, vminsert, vmselect",reason="FieldValueRequired"
type VerticalScaling struct {
	// VMStorage is the new resources of each vmstorage Pod.
	// +optional
	VMStorage *ComponentResources `json:"vmstorage,omitempty"`
	// VMInsert is the new resources of each vminsert Pod.
	// +optional
	VMInsert *ComponentResources `json:"vminsert,omitempty"`
	// VMSelect is the new resources of each vmselect Pod.
	// +optional
	VMSelect *ComponentResources `json:"vmselect,omitempty"`
}

// Resources returns the target of a component, nil when not resized.
func (v *VerticalScaling) Resources(c VMClusterComponent) *ComponentResources {
	if v == nil {
		return nil
	}
	switch c {
	case ComponentVMStorage:
		return v.VMStorage
	case ComponentVMInsert:
		return v.VMInsert
	case ComponentVMSelect:
		return v.VMSelect
	}
	return nil
}

// ComponentResources are the requests and limits of a component's Pods
// (the vmcluster chart's <component>.resources); they replace the current
// ones as a whole.
// +kubebuilder:validation:XValidation:rule="has(self.requests) || has(self.limits)",message="resources need requests or limits",reason="FieldValueRequired"
type ComponentResources struct {
	// Requests are cpu and memory requests.
	// +optional
	// +kubebuilder:validation:MaxProperties=2
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['cpu', 'memory'])",message="only cpu and memory may be set"
	Requests map[string]resource.Quantity `json:"requests,omitempty"`
	// Limits are cpu and memory limits.
	// +optional
	// +kubebuilder:validation:MaxProperties=2
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['cpu', 'memory'])",message="only cpu and memory may be set"
	Limits map[string]resource.Quantity `json:"limits,omitempty"`
}

// Restart names the components to restart.
type Restart struct {
	// Components are restarted one Pod at a time, each Pod waited for to be
	// Ready (vmstorage and vmselect answer /health) before the next.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=3
	Components []VMClusterComponent `json:"components"`
}

// OperationPhase is the lifecycle phase of a VMClusterOperation.
// +kubebuilder:validation:Enum=Pending;Running;Paused;Succeeded;Failed;Cancelling;Cancelled
type OperationPhase string

const (
	// OperationPhasePending: accepted, not planned, or waiting its turn.
	OperationPhasePending OperationPhase = "Pending"
	// OperationPhaseRunning: steps are being carried out.
	OperationPhaseRunning OperationPhase = "Running"
	// OperationPhasePaused: spec.paused is true and no step is in flight.
	OperationPhasePaused OperationPhase = "Paused"
	// OperationPhaseSucceeded: every step succeeded (terminal).
	OperationPhaseSucceeded OperationPhase = "Succeeded"
	// OperationPhaseFailed: a step failed or the spec cannot be carried out
	// (terminal).
	OperationPhaseFailed OperationPhase = "Failed"
	// OperationPhaseCancelling: spec.cancel is true and a step is still in
	// flight.
	OperationPhaseCancelling OperationPhase = "Cancelling"
	// OperationPhaseCancelled: stopped on request (terminal).
	OperationPhaseCancelled OperationPhase = "Cancelled"
)

// IsTerminal reports whether the phase is final.
func (p OperationPhase) IsTerminal() bool {
	return p == OperationPhaseSucceeded || p == OperationPhaseFailed || p == OperationPhaseCancelled
}

// OperationAction is what one step does.
// +kubebuilder:validation:Enum=Scale;Resize;RestartPod
type OperationAction string

const (
	// ActionScale sets a component's replica count in the HelmRelease
	// values and waits for the component to converge.
	ActionScale OperationAction = "Scale"
	// ActionResize sets a component's resources in the HelmRelease values
	// and waits for the component to converge.
	ActionResize OperationAction = "Resize"
	// ActionRestartPod deletes one Pod and waits for its replacement to be
	// Ready.
	ActionRestartPod OperationAction = "RestartPod"
)

// OperationStep is one step of the plan in status.steps.
type OperationStep struct {
	// ID identifies the step: "<index>-<component>-<action>", the index
	// 1-based and zero-padded (e.g. "02-vmstorage-Scale").
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	ID string `json:"id"`

	// Component is vmstorage, vminsert or vmselect.
	// +required
	Component VMClusterComponent `json:"component"`

	// Action is Scale, Resize or RestartPod.
	// +required
	Action OperationAction `json:"action"`

	// From is the value before the step: a replica count, resources as
	// JSON, or the Pod's UID.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	From string `json:"from,omitempty"`

	// To is the value after the step: a replica count, or resources as
	// JSON; empty for RestartPod.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	To string `json:"to,omitempty"`

	// Pod is the Pod a RestartPod step restarts.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Pod string `json:"pod,omitempty"`

	// PodUID is the UID of the Pod a RestartPod step deletes, recorded
	// before the deletion: a Pod of that name with another UID is the
	// replacement, so a restarted operator never deletes twice.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	PodUID string `json:"podUID,omitempty"`

	// HelmReleaseGeneration is the HelmRelease generation the step's
	// values change produced; the step waits for the HelmRelease to be
	// Ready at it.
	// +optional
	HelmReleaseGeneration int64 `json:"helmReleaseGeneration,omitempty"`

	// Phase is Pending, Running, Succeeded, Failed or Skipped.
	// +required
	Phase StepPhase `json:"phase"`

	// StartTime is when the step started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the step reached Succeeded, Failed or Skipped.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Message is what the step waits for, or why it failed.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`
}

// VMClusterOperationStatus is the observed state of a VMClusterOperation,
// written by the operator only.
type VMClusterOperationStatus struct {
	// ObservedGeneration is the last generation the operator fully handled;
	// -1 until then.
	// +optional
	// +kubebuilder:default=-1
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase is Pending, Running, Paused, Succeeded, Failed, Cancelling or
	// Cancelled.
	// +optional
	Phase OperationPhase `json:"phase,omitempty"`

	// Progress is "<finished steps>/<steps>", e.g. "2/5".
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Progress string `json:"progress,omitempty"`

	// Conditions are Ready, Reconciling and Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Steps is the ordered plan, written before anything changes, then
	// updated as each step progresses.
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MaxItems=512
	Steps []OperationStep `json:"steps,omitempty"`

	// CurrentStep is the id of the step in flight (or the one that failed).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	CurrentStep string `json:"currentStep,omitempty"`

	// WaitingFor names what the operation waits for before it starts: an
	// older operation of the same VMCluster, a vmstorage rollout of an
	// upgrade, or a running backup.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	WaitingFor string `json:"waitingFor,omitempty"`

	// StartTime is when the first step started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the operation reached a terminal phase.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// VMClusterOperation is an ordered Day-2 operation on one VMCluster:
// horizontal scaling, vertical scaling or a rolling restart, planned into
// steps carried out one at a time through the VMCluster's HelmRelease.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vmcop,categories=ops
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="VMCluster",type=string,JSONPath=`.spec.vmCluster.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Progress",type=string,JSONPath=`.status.progress`
// +kubebuilder:printcolumn:name="Step",type=string,JSONPath=`.status.currentStep`,priority=1
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type VMClusterOperation struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the operation request.
	// +required
	Spec VMClusterOperationSpec `json:"spec"`

	// Status is the progress, written by the operator.
	// +optional
	// +kubebuilder:default={"observedGeneration":-1}
	Status VMClusterOperationStatus `json:"status,omitempty"`
}

// VMClusterKey returns the namespace and name of the VMCluster; the
// namespace defaults to the operation's own.
func (o *VMClusterOperation) VMClusterKey() (namespace, name string) {
	namespace = o.Spec.VMCluster.Namespace
	if namespace == "" {
		namespace = o.Namespace
	}
	return namespace, o.Spec.VMCluster.Name
}

// VMClusterOperationList is a list of VMClusterOperations.
//
// +kubebuilder:object:root=true
type VMClusterOperationList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the VMClusterOperations.
	Items []VMClusterOperation `json:"items"`
}

// ReplicationRiskProblem is the one refusal of a risky vmstorage
// scale-down, shared by the REST API (a 400 on field) and ops-operator's
// preflight (reason InvalidSpec), so both say the same. A scale-down from
// current to target replicas is risky when target is below
// replicationFactor, or when it removes replicationFactor or more replicas
// in one operation: VictoriaMetrics does not rebalance, so the samples
// whose every copy sits on the removed replicas are no longer readable.
// current 0 means unknown (only the first rule applies). It returns ""
// when the scale-down is fine or acknowledged.
func ReplicationRiskProblem(current, target, replicationFactor int32, acknowledged bool) string {
	const ack = "set acknowledgeReplicationRisk (REST: acknowledge_replication_risk) to do it anyway"
	switch {
	case acknowledged:
		return ""
	case target < replicationFactor:
		return fmt.Sprintf("%d vmstorage replicas is below the vmcluster's replicationFactor %d: samples lose copies and the ones whose every copy is on a removed node are no longer readable; %s", target, replicationFactor, ack)
	case current > 0 && current-target >= replicationFactor:
		return fmt.Sprintf("scaling vmstorage from %d to %d replicas removes %d replicas in one operation, as many as or more than the vmcluster's replicationFactor %d: VictoriaMetrics does not rebalance, so the samples whose every copy is on a removed node are no longer readable; remove fewer than %d replicas per operation, or %s", current, target, current-target, replicationFactor, replicationFactor, ack)
	}
	return ""
}
