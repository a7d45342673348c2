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
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// typedUpgrade is the seed request with the seed's VMStorage node group, as
// Go types.
func typedUpgrade(namespace, name string) *v1alpha1.ClusterUpgradeOperation {
	schedule := metav1.NewTime(time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC))
	return &v1alpha1.ClusterUpgradeOperation{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.ClusterUpgradeOperationSpec{
			K8sClusterName: "my-eks-cluster",
			Region:         "us-west-2",
			CloudProvider:  v1alpha1.CloudProviderEKS,
			TargetVersion:  "1.30",
			Schedule:       &schedule,
			ClusterAddons: []v1alpha1.ClusterAddon{{
				Name: "vpc-cni", Version: "v1.18.5-eksbuild.1", ResolveConflicts: v1alpha1.ResolveConflictsPreserve,
			}},
			NodeGroupUpgrades: []v1alpha1.NodeGroupUpgrade{
				{NodeGroupName: "observability-ng", Strategy: v1alpha1.StrategyInPlace},
				{
					NodeGroupName:            "vmstorage",
					Strategy:                 v1alpha1.StrategyBlueGreen,
					RequiresVMStorageRollout: true,
					NewNodeGroupName:         "vmstorage-130",
					VMClusterHelmValues:      v1alpha1.VMClusterHelmValues{"vmstorage": {ReplicaCount: new(int32(3))}},
				},
			},
		},
	}
}

// TestClusterUpgradeOperationGoTypes checks that the Go types round-trip
// through the API server, that the defaults of Default are stored, and that
// status starts with observedGeneration -1.
func TestClusterUpgradeOperationGoTypes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)

	want := typedUpgrade(ns, "typed")
	want.Spec.Default()
	g.Expect(env.Client.Create(ctx, want.DeepCopy())).To(Succeed())

	got := &v1alpha1.ClusterUpgradeOperation{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(want), got)).To(Succeed())
	g.Expect(got.Status.ObservedGeneration).To(Equal(int64(-1)))
	g.Expect(got.Status.Phase).To(BeEmpty())

	g.Expect(got.Spec.Schedule.Equal(want.Spec.Schedule)).To(BeTrue())
	got.Spec.Schedule = want.Spec.Schedule
	g.Expect(got.Spec).To(Equal(want.Spec))
	vm := got.Spec.NodeGroupUpgrades[1]
	g.Expect(vm.VMStorageSTSName).To(Equal("vmstorage-vmcluster"))
	g.Expect(vm.VMStorageSTSNamespace).To(Equal("observability"))
	g.Expect(got.Spec.NodeGroupUpgrades[0].VMStorageSTSName).To(BeEmpty())

	// {} survives the round trip as a present, empty object.
	empty := typedUpgrade(ns, "empty-values")
	empty.Spec.NodeGroupUpgrades[1].VMClusterHelmValues = v1alpha1.VMClusterHelmValues{}
	g.Expect(env.Client.Create(ctx, empty)).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(empty), got)).To(Succeed())
	g.Expect(got.Spec.NodeGroupUpgrades[1].VMClusterHelmValues).NotTo(BeNil())
	g.Expect(got.Spec.NodeGroupUpgrades[1].VMClusterHelmValues).To(BeEmpty())

	// Without Default (kubectl apply), the fields stay empty and the accessor
	// supplies the same defaults.
	raw := typedUpgrade(ns, "not-defaulted")
	g.Expect(env.Client.Create(ctx, raw)).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(raw), got)).To(Succeed())
	g.Expect(got.Spec.NodeGroupUpgrades[1].VMStorageSTSName).To(BeEmpty())
	stsNamespace, stsName := got.Spec.NodeGroupUpgrades[1].VMStorageStatefulSet()
	g.Expect(stsNamespace).To(Equal(v1alpha1.DefaultVMStorageSTSNamespace))
	g.Expect(stsName).To(Equal(v1alpha1.DefaultVMStorageSTSName))
}

func TestClusterBackupGoTypes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)

	b := &v1alpha1.ClusterBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
		Spec: v1alpha1.ClusterBackupSpec{
			VMCluster:   v1alpha1.VMClusterReference{Name: "vmcluster"},
			Destination: v1alpha1.BackupDestination{URL: "fs:///backups/nightly"},
		},
	}
	g.Expect(env.Client.Create(ctx, b)).To(Succeed())
	got := &v1alpha1.ClusterBackup{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(b), got)).To(Succeed())
	g.Expect(got.Spec.DeletionPolicy).To(Equal(v1alpha1.DeletionPolicyRetain), "deletionPolicy defaults to Retain")
	g.Expect(got.Spec.Concurrency).To(BeNil())
	g.Expect(got.Status.ObservedGeneration).To(Equal(int64(-1)))
	vmNamespace, vmName := got.VMClusterKey()
	g.Expect(vmNamespace).To(Equal(ns))
	g.Expect(vmName).To(Equal("vmcluster"))
}

// condition returns a complete condition of the given type.
func condition(typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: message,
		LastTransitionTime: metav1.NewTime(time.Now().Truncate(time.Second)),
	}
}

func TestClusterUpgradeOperationStatus(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)

	cuo := typedUpgrade(ns, "status")
	// Status sent with a create is dropped: only the status subresource
	// writes it.
	cuo.Status.Phase = v1alpha1.UpgradePhaseSucceeded
	g.Expect(env.Client.Create(ctx, cuo)).To(Succeed())
	g.Expect(cuo.Status.Phase).To(BeEmpty())
	g.Expect(cuo.Status.ObservedGeneration).To(Equal(int64(-1)))

	now := metav1.NewTime(time.Now().Truncate(time.Second))
	cuo.Status = v1alpha1.ClusterUpgradeOperationStatus{
		ObservedGeneration: -1,
		Phase:              v1alpha1.UpgradePhaseRunning,
		Conditions: []metav1.Condition{
			condition(v1alpha1.ReadyCondition, metav1.ConditionFalse, v1alpha1.BlockedReason, "Draining node ip-10-0-0-1: eviction of observability/vmselect-0 refused"),
			condition(v1alpha1.ReconcilingCondition, metav1.ConditionTrue, v1alpha1.ProgressingReason, "Running step nodegroup/observability-ng/UpgradeNodeGroup"),
		},
		Steps: []v1alpha1.UpgradeStep{
			{ID: v1alpha1.ControlPlaneStepID, Type: v1alpha1.StepTypeControlPlane, Action: v1alpha1.ActionUpgradeControlPlane,
				Phase: v1alpha1.StepPhaseSucceeded, OperationID: "1c9f6e2a-1111-2222-3333-444455556666", Attempts: 1, StartTime: &now, CompletionTime: &now},
			{ID: v1alpha1.AddonStepID("vpc-cni"), Type: v1alpha1.StepTypeAddon, Action: v1alpha1.ActionUpdateAddon, Target: "vpc-cni",
				Phase: v1alpha1.StepPhaseRunning, StartTime: &now},
			{ID: v1alpha1.NodeGroupStepID("vmstorage", v1alpha1.ActionCreateNodeGroup), Type: v1alpha1.StepTypeNodeGroup,
				Action: v1alpha1.ActionCreateNodeGroup, Target: "vmstorage", Phase: v1alpha1.StepPhasePending},
		},
		CurrentStep: v1alpha1.AddonStepID("vpc-cni"),
		StartTime:   &now,
		BlockedBy: &v1alpha1.BlockedBy{
			StepID: v1alpha1.AddonStepID("vpc-cni"), Reason: v1alpha1.BlockedByPodDisruptionBudget,
			Message: "eviction refused", Since: &now, Node: "ip-10-0-0-1",
			Pod:                 &v1alpha1.NamespacedObjectReference{Namespace: "observability", Name: "vmselect-0"},
			PodDisruptionBudget: &v1alpha1.NamespacedObjectReference{Namespace: "observability", Name: "vmselect"},
		},
	}
	want := cuo.Status.DeepCopy()
	g.Expect(env.Client.Status().Update(ctx, cuo)).To(Succeed())
	got := &v1alpha1.ClusterUpgradeOperation{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cuo), got)).To(Succeed())
	g.Expect(normalizeTimes(got.Status)).To(Equal(normalizeTimes(*want)))
	g.Expect(got.Status.Step("addon/vpc-cni")).NotTo(BeNil())

	// A spec update does not touch status.
	g.Expect(env.Client.Patch(ctx, got, client.RawPatch("application/merge-patch+json",
		[]byte(`{"spec":{"paused":true},"status":{"phase":"Failed"}}`)))).To(Succeed())
	g.Expect(got.Status.Phase).To(Equal(v1alpha1.UpgradePhaseRunning))

	statusPatch := func(body string) error {
		return env.Client.Status().Patch(ctx, got, client.RawPatch("application/merge-patch+json", []byte(body)))
	}
	expectResult(g, statusPatch(`{"status":{"phase":"Done"}}`), rejected("status.phase", `Unsupported value: "Done"`))
	expectResult(g, statusPatch(`{"status":{"steps":[{"id":"a","type":"Addon","action":"UpdateAddon","phase":"Pending"},{"id":"a","type":"Addon","action":"UpdateAddon","phase":"Pending"}]}}`),
		rejected("status.steps[1]", "Duplicate value"))
	expectResult(g, statusPatch(`{"status":{"steps":[{"id":"a","type":"Addon","action":"UpdateAddon","phase":"Waiting"}]}}`),
		rejected("status.steps[0].phase", `Unsupported value: "Waiting"`))
	expectResult(g, statusPatch(`{"status":{"steps":[{"id":"a","type":"Workers","action":"UpdateAddon","phase":"Pending"}]}}`),
		rejected("status.steps[0].type", `Unsupported value: "Workers"`))
	expectResult(g, statusPatch(`{"status":{"blockedBy":{"reason":null,"message":"no reason"}}}`),
		rejected("status.blockedBy.reason", "Required value"))
	for _, phase := range []v1alpha1.UpgradePhase{
		v1alpha1.UpgradePhasePending, v1alpha1.UpgradePhaseScheduled, v1alpha1.UpgradePhaseRunning, v1alpha1.UpgradePhasePaused,
		v1alpha1.UpgradePhaseSucceeded, v1alpha1.UpgradePhaseFailed, v1alpha1.UpgradePhaseCancelling, v1alpha1.UpgradePhaseCancelled,
	} {
		g.Expect(statusPatch(`{"status":{"phase":"`+string(phase)+`"}}`)).To(Succeed(), string(phase))
	}
}

func TestClusterBackupStatus(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)

	b := &v1alpha1.ClusterBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "status"},
		Spec: v1alpha1.ClusterBackupSpec{
			VMCluster:   v1alpha1.VMClusterReference{Namespace: "observability", Name: "vmcluster"},
			Destination: v1alpha1.BackupDestination{URL: "s3://bucket/vm"},
		},
	}
	g.Expect(env.Client.Create(ctx, b)).To(Succeed())

	now := metav1.NewTime(time.Now().Truncate(time.Second))
	b.Status = v1alpha1.ClusterBackupStatus{
		ObservedGeneration: 1,
		Phase:              v1alpha1.BackupPhasePartiallyFailed,
		Progress:           "2/2",
		Conditions: []metav1.Condition{
			condition(v1alpha1.ReadyCondition, metav1.ConditionFalse, v1alpha1.PartiallyFailedReason, "1 of 2 replicas failed"),
			condition(v1alpha1.StalledCondition, metav1.ConditionTrue, v1alpha1.PartiallyFailedReason, "1 of 2 replicas failed"),
		},
		StartTime:      &now,
		CompletionTime: &now,
		Replicas: []v1alpha1.ReplicaBackup{
			{Pod: "vmstorage-vmcluster-0", PodUID: "5f0c2a7e-0000-4000-8000-000000000000", Node: "node-a", Endpoint: "http://10.0.0.12:8482",
				Destination: "s3://bucket/vm/vmstorage-vmcluster-0", SnapshotName: "20261201041006-18ED05CB8B1B6538",
				State: v1alpha1.ReplicaStateSucceeded, JobName: "status-vmstorage-vmcluster-0", StartTime: &now, CompletionTime: &now, Bytes: 1 << 30},
			{Pod: "vmstorage-vmcluster-1", State: v1alpha1.ReplicaStateFailed, Error: "snapshot create: 500 Internal Server Error", StartTime: &now, CompletionTime: &now},
		},
	}
	want := b.Status.DeepCopy()
	g.Expect(env.Client.Status().Update(ctx, b)).To(Succeed())
	got := &v1alpha1.ClusterBackup{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(b), got)).To(Succeed())
	g.Expect(got.Status.Replicas).To(Equal(want.Replicas))
	g.Expect(got.Status.Progress).To(Equal("2/2"))

	statusPatch := func(body string) error {
		return env.Client.Status().Patch(ctx, got, client.RawPatch("application/merge-patch+json", []byte(body)))
	}
	expectResult(g, statusPatch(`{"status":{"progress":"two of three"}}`), rejected("status.progress", "should match"))
	expectResult(g, statusPatch(`{"status":{"phase":"Partial"}}`), rejected("status.phase", `Unsupported value: "Partial"`))
	expectResult(g, statusPatch(`{"status":{"replicas":[{"pod":"p","state":"Copying"}]}}`),
		rejected("status.replicas[0].state", `Unsupported value: "Copying"`))
	expectResult(g, statusPatch(`{"status":{"replicas":[{"pod":"p","state":"Pending"},{"pod":"p","state":"Pending"}]}}`),
		rejected("status.replicas[1]", "Duplicate value"))
	expectResult(g, statusPatch(`{"status":{"replicas":[{"state":"Pending"}]}}`),
		rejected("status.replicas[0].pod", "Required value"))
}

// normalizeTimes drops the monotonic clock and location from the times of an
// upgrade status so that values read back compare equal.
func normalizeTimes(s v1alpha1.ClusterUpgradeOperationStatus) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}
