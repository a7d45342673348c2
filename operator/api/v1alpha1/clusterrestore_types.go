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
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterRestoreKind is the kind of ClusterRestore.
const ClusterRestoreKind = "ClusterRestore"

// RestoreStrategy says how many vmstorage replicas are restored at a time.
// +kubebuilder:validation:Enum=OneAtATime;AllAtOnce
type RestoreStrategy string

const (
	// RestoreOneAtATime stops, restores and starts one replica after the
	// other: the others keep serving what they hold meanwhile.
	RestoreOneAtATime RestoreStrategy = "OneAtATime"
	// RestoreAllAtOnce stops every replica, restores them all in parallel
	// and starts them again: faster, the vmcluster serves nothing
	// meanwhile.
	RestoreAllAtOnce RestoreStrategy = "AllAtOnce"
)

// ClusterRestoreSpec says which ClusterBackup is restored into which
// VMCluster. The whole spec is immutable: to restore again, create a new
// ClusterRestore.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable; create a new ClusterRestore"
type ClusterRestoreSpec struct {
	// Backup is the name of the ClusterBackup, in the ClusterRestore's
	// namespace, to restore from. It must have Succeeded.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Backup string `json:"backup"`

	// VMCluster is the VMCluster restored into. Omitted: the VMCluster the
	// backup was taken of. Its namespace must be the ClusterRestore's own
	// (omit it).
	// +optional
	VMCluster *VMClusterReference `json:"vmCluster,omitempty"`

	// Strategy is OneAtATime (the default: one replica stopped at a time)
	// or AllAtOnce (every replica stopped, restored in parallel, started).
	// +optional
	// +kubebuilder:default=OneAtATime
	Strategy RestoreStrategy `json:"strategy,omitempty"`

	// ReplicaMapping says which replica of the backup each vmstorage
	// replica of the VMCluster is restored from, by ordinal (the number at
	// the end of the pod name, vmstorage-<name>-<ordinal>). Omitted:
	// replica i is restored from the backup's replica i, and the backup
	// must have exactly as many replicas as the VMCluster. Given: it must
	// name every replica of the VMCluster exactly once, and a backup
	// replica that no entry names is not restored (its series are not in
	// the restored cluster).
	// +optional
	// +listType=map
	// +listMapKey=replica
	// +kubebuilder:validation:MaxItems=512
	ReplicaMapping []ReplicaMapping `json:"replicaMapping,omitempty"`
}

// ReplicaMapping restores one vmstorage replica from one backup replica.
type ReplicaMapping struct {
	// Replica is the ordinal of the VMCluster's vmstorage replica.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=511
	Replica int32 `json:"replica"`
	// FromReplica is the ordinal of the backup's replica it is restored
	// from.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=511
	FromReplica int32 `json:"fromReplica"`
}

// RestorePhase is the lifecycle phase of a ClusterRestore.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed
type RestorePhase string

const (
	// RestorePhasePending: accepted, no replica stopped yet.
	RestorePhasePending RestorePhase = "Pending"
	// RestorePhaseRunning: replicas are being restored.
	RestorePhaseRunning RestorePhase = "Running"
	// RestorePhaseSucceeded: every replica was restored and runs again
	// (terminal).
	RestorePhaseSucceeded RestorePhase = "Succeeded"
	// RestorePhaseFailed: the restore could not start, or a replica
	// failed (terminal).
	RestorePhaseFailed RestorePhase = "Failed"
)

// IsTerminal reports whether the phase is final.
func (p RestorePhase) IsTerminal() bool {
	return p == RestorePhaseSucceeded || p == RestorePhaseFailed
}

// ReplicaRestoreState is the state of the restore of one vmstorage
// replica. Each state is recorded before the action it names.
// +kubebuilder:validation:Enum=Pending;Stopping;Restoring;Starting;Succeeded;Failed
type ReplicaRestoreState string

const (
	// ReplicaRestorePending: not started.
	ReplicaRestorePending ReplicaRestoreState = "Pending"
	// ReplicaRestoreStopping: vmstorage is being stopped.
	ReplicaRestoreStopping ReplicaRestoreState = "Stopping"
	// ReplicaRestoreRestoring: vmrestore runs (runID) into the stopped
	// replica's volume.
	ReplicaRestoreRestoring ReplicaRestoreState = "Restoring"
	// ReplicaRestoreStarting: vmrestore succeeded; vmstorage is being
	// started again and must become Ready.
	ReplicaRestoreStarting ReplicaRestoreState = "Starting"
	// ReplicaRestoreSucceeded: restored and running.
	ReplicaRestoreSucceeded ReplicaRestoreState = "Succeeded"
	// ReplicaRestoreFailed: failed; a replica whose vmrestore started and
	// failed stays stopped (its data is incomplete).
	ReplicaRestoreFailed ReplicaRestoreState = "Failed"
)

// IsTerminal reports whether the replica's restore is finished.
func (s ReplicaRestoreState) IsTerminal() bool {
	return s == ReplicaRestoreSucceeded || s == ReplicaRestoreFailed
}

// ReplicaRestore is the restore of one vmstorage replica.
type ReplicaRestore struct {
	// Pod is the vmstorage pod restored into.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Pod string `json:"pod"`

	// PodUID is the UID of that pod when the restore planned it.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	PodUID string `json:"podUID,omitempty"`

	// FromPod is the backup's replica it is restored from.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	FromPod string `json:"fromPod,omitempty"`

	// Source is vmrestore's -src: that replica's backup URL.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Source string `json:"source,omitempty"`

	// State is Pending, Stopping, Restoring, Starting, Succeeded or Failed.
	// +required
	State ReplicaRestoreState `json:"state"`

	// RunID names the vmrestore run; recorded before it starts, so a
	// restarted operator observes that run instead of starting another.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	RunID string `json:"runID,omitempty"`

	// StartTime is when the replica was first stopped.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the replica succeeded or failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Error is why the replica's restore failed.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Error string `json:"error,omitempty"`
}

// ClusterRestoreStatus is the observed state of a ClusterRestore, written
// by the operator only.
type ClusterRestoreStatus struct {
	// ObservedGeneration is the last generation the operator fully
	// handled; -1 until then.
	// +optional
	// +kubebuilder:default=-1
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase is Pending, Running, Succeeded or Failed.
	// +optional
	Phase RestorePhase `json:"phase,omitempty"`

	// Progress is "<finished>/<total>" replicas.
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

	// StartTime is when the restore claimed its VMCluster (recorded
	// before the first replica is stopped).
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the restore reached a terminal phase.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Replicas has one entry per vmstorage replica restored into, by pod.
	// +optional
	// +listType=map
	// +listMapKey=pod
	// +kubebuilder:validation:MaxItems=512
	Replicas []ReplicaRestore `json:"replicas,omitempty"`
}

// ClusterRestore restores a ClusterBackup into a VMCluster: per vmstorage
// replica, vmstorage is stopped, vmrestore writes that replica's backup
// into its volume, and vmstorage is started again.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=crestore,categories=ops
// +kubebuilder:printcolumn:name="Backup",type=string,JSONPath=`.spec.backup`
// +kubebuilder:printcolumn:name="VMCluster",type=string,JSONPath=`.spec.vmCluster.name`
// +kubebuilder:printcolumn:name="Strategy",type=string,JSONPath=`.spec.strategy`,priority=1
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Progress",type=string,JSONPath=`.status.progress`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterRestore struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the restore request.
	// +required
	Spec ClusterRestoreSpec `json:"spec"`

	// Status is the progress of the restore, written by the operator.
	// +optional
	// +kubebuilder:default={"observedGeneration":-1}
	Status ClusterRestoreStatus `json:"status,omitempty"`
}

// ClusterRestoreList is a list of ClusterRestores.
//
// +kubebuilder:object:root=true
type ClusterRestoreList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the ClusterRestores.
	Items []ClusterRestore `json:"items"`
}

// VMClusterKey returns the namespace and name of the VMCluster restored
// into: spec.vmCluster (its namespace defaulting to the ClusterRestore's),
// or, when omitted, the VMCluster of backup (nil: name "").
func (r *ClusterRestore) VMClusterKey(backup *ClusterBackup) (namespace, name string) {
	if v := r.Spec.VMCluster; v != nil {
		namespace = v.Namespace
		if namespace == "" {
			namespace = r.Namespace
		}
		return namespace, v.Name
	}
	if backup == nil {
		return r.Namespace, ""
	}
	return backup.VMClusterKey()
}

// EffectiveStrategy is spec.strategy, OneAtATime when empty.
func (r *ClusterRestore) EffectiveStrategy() RestoreStrategy {
	if r.Spec.Strategy == "" {
		return RestoreOneAtATime
	}
	return r.Spec.Strategy
}

// PodOrdinal returns the ordinal at the end of a StatefulSet pod name
// (vmstorage-vmcluster-2 → 2), or -1.
func PodOrdinal(pod string) int {
	i := strings.LastIndexByte(pod, '-')
	if i < 0 {
		return -1
	}
	n, err := strconv.Atoi(pod[i+1:])
	if err != nil || n < 0 || strconv.Itoa(n) != pod[i+1:] {
		return -1
	}
	return n
}

// PlanReplicaSources maps each target pod to the backup replica (a pod
// name of the backup) it is restored from — by ordinal, through mapping
// when given — or says why it cannot (the one rule, shared by ops-apiserver
// and ops-operator). targets and sources are pod names.
func PlanReplicaSources(targets, sources []string, mapping []ReplicaMapping) (map[string]string, error) {
	byOrdinal := func(pods []string, what string) (map[int]string, error) {
		out := map[int]string{}
		for _, p := range pods {
			o := PodOrdinal(p)
			if o < 0 {
				return nil, fmt.Errorf("%s pod %s has no ordinal", what, p)
			}
			out[o] = p
		}
		return out, nil
	}
	tgt, err := byOrdinal(targets, "vmstorage")
	if err != nil {
		return nil, err
	}
	src, err := byOrdinal(sources, "backup")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	if len(mapping) == 0 {
		if len(targets) != len(sources) {
			return nil, fmt.Errorf("the backup has %d vmstorage replicas and the VMCluster has %d: give replicaMapping to say which backup replica each vmstorage replica is restored from", len(sources), len(targets))
		}
		for o, p := range tgt {
			s, ok := src[o]
			if !ok {
				return nil, fmt.Errorf("the backup has no replica with ordinal %d for %s: give replicaMapping", o, p)
			}
			out[p] = s
		}
		return out, nil
	}
	seen := map[int32]bool{}
	for _, m := range mapping {
		if seen[m.Replica] {
			return nil, fmt.Errorf("replicaMapping names replica %d twice", m.Replica)
		}
		seen[m.Replica] = true
		p, ok := tgt[int(m.Replica)]
		if !ok {
			return nil, fmt.Errorf("replicaMapping names replica %d, which the VMCluster does not have (it has %s)", m.Replica, ordinals(tgt))
		}
		s, ok := src[int(m.FromReplica)]
		if !ok {
			return nil, fmt.Errorf("replicaMapping names fromReplica %d, which the backup does not have (it has %s)", m.FromReplica, ordinals(src))
		}
		out[p] = s
	}
	if len(out) != len(tgt) {
		return nil, fmt.Errorf("replicaMapping must name every vmstorage replica of the VMCluster (%s)", ordinals(tgt))
	}
	return out, nil
}

func ordinals(m map[int]string) string {
	var ks []int
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = strconv.Itoa(k)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// CrossNamespaceProblem returns what is wrong with the VMCluster reference
// of r, "" if nothing: a ClusterRestore may only restore into a VMCluster
// in its own namespace (as a ClusterBackup may only back up one there).
func (r *ClusterRestore) CrossNamespaceProblem() string {
	if v := r.Spec.VMCluster; v != nil && v.Namespace != "" && v.Namespace != r.Namespace {
		return fmt.Sprintf("spec.vmCluster.namespace %s: a ClusterRestore may only restore into a VMCluster in its own namespace %s", v.Namespace, r.Namespace)
	}
	return ""
}
