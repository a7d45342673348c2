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
	"k8s.io/apimachinery/pkg/runtime"
)

// ObservabilityStackKind is the kind of ObservabilityStack.
const ObservabilityStackKind = "ObservabilityStack"

// DataBearingChart is the chart whose releases hold the stack's data (a
// VictoriaMetrics cluster): removing such a component from an
// ObservabilityStack is refused unless spec.allowDataRemoval is true.
const DataBearingChart = "vmcluster"

// Reasons of an ObservabilityStack's conditions and Events.
const (
	// RemovalRefusedReason: a component holding data (chart vmcluster) was
	// removed from the declaration without spec.allowDataRemoval; its
	// HelmRelease is kept.
	RemovalRefusedReason = "RemovalRefused"
	// ComponentsNotReadyReason: some components are not Ready yet.
	ComponentsNotReadyReason = "ComponentsNotReady"
)

// ObservabilityStackSpec declares the components of the observability
// stack: which chart, which version, which values, and in which order.
//
// The transition rule refuses removing a component of chart vmcluster (it
// holds the metrics) unless allowDataRemoval is true; ops-operator enforces
// the same rule (a removed vmcluster component whose HelmRelease still
// exists is kept, with reason RemovalRefused).
//
// +kubebuilder:validation:XValidation:rule="self.components.all(c, !has(c.dependsOn) || c.dependsOn.all(d, d != c.name && self.components.exists(o, o.name == d)))",message="dependsOn must name other components of this stack",fieldPath=".components"
// +kubebuilder:validation:XValidation:rule="(has(self.allowDataRemoval) && self.allowDataRemoval) || oldSelf.components.all(o, o.chart != 'vmcluster' || self.components.exists(c, c.name == o.name && c.chart == 'vmcluster'))",message="removing a vmcluster component deletes its data: set allowDataRemoval to true to remove it",fieldPath=".components"
type ObservabilityStackSpec struct {
	// Components are the charts to install, one Flux HelmRelease each,
	// named after the component. Names are unique.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Components []StackComponent `json:"components"`

	// AllowDataRemoval allows removing a component of chart vmcluster from
	// components, which uninstalls it and deletes its data. Default false:
	// such a removal is refused.
	// +optional
	AllowDataRemoval bool `json:"allowDataRemoval,omitempty"`
}

// StackComponent is one chart of the stack.
type StackComponent struct {
	// Name of the component: the name of its HelmRelease and Helm release.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Chart is the chart's name in ops-operator's chart repository (the
	// charts ops-apiserver serves: vm-operator, vmcluster, vmagent, ...).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Chart string `json:"chart"`

	// Version is the chart version (a semver version or range). Omitted:
	// the newest version in the repository.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[0-9A-Za-z.+^~<>=*, -]+$`
	Version string `json:"version,omitempty"`

	// Values are the chart's values; the chart's values.schema.json
	// validates them when Helm installs or upgrades the release.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Values *runtime.RawExtension `json:"values,omitempty"`

	// DependsOn names components of this stack that must be Ready before
	// this one is installed or upgraded (Flux HelmRelease spec.dependsOn).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=40
	DependsOn []string `json:"dependsOn,omitempty"`
}

// ComponentStatus is what runs of one component.
type ComponentStatus struct {
	// Name of the component.
	// +required
	// +kubebuilder:validation:MaxLength=40
	Name string `json:"name"`

	// Chart is the chart of the component.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Chart string `json:"chart,omitempty"`

	// Ready is True when the component's HelmRelease is Ready.
	// +required
	// +kubebuilder:validation:Enum=True;False;Unknown
	Ready metav1.ConditionStatus `json:"ready"`

	// Version is the chart version of the release running (the last
	// successful Helm action).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Version string `json:"version,omitempty"`

	// ReadyTime is when the HelmRelease last became Ready.
	// +optional
	ReadyTime *metav1.Time `json:"readyTime,omitempty"`

	// Message is the HelmRelease's Ready message: while the component is not
	// Ready, the last error (or what it waits for).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// Removed is true for a component no longer declared whose HelmRelease
	// is kept (a vmcluster removed without allowDataRemoval).
	// +optional
	Removed bool `json:"removed,omitempty"`
}

// ObservabilityStackStatus is the state of the stack.
type ObservabilityStackStatus struct {
	// ObservedGeneration is the generation whose components have all been
	// applied as HelmReleases.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Components is the state of each component, in declaration order,
	// then the removed ones that are kept.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Components []ComponentStatus `json:"components,omitempty"`

	// Conditions: Ready (every component Ready and nothing refused),
	// Reconciling, Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ObservabilityStack declares the observability stack ops-operator
// installs and keeps installed, one Flux HelmRelease per component, in
// dependsOn order (docs/bootstrap.md).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=obstack,categories=ops
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ObservabilityStack struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the declaration.
	// +required
	Spec ObservabilityStackSpec `json:"spec"`

	// Status is written by ops-operator.
	// +optional
	Status ObservabilityStackStatus `json:"status,omitempty"`
}

// ObservabilityStackList is a list of ObservabilityStacks.
//
// +kubebuilder:object:root=true
type ObservabilityStackList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the ObservabilityStacks.
	Items []ObservabilityStack `json:"items"`
}
