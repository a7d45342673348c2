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
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

func TestUpgradePhaseIsTerminal(t *testing.T) {
	terminal := map[UpgradePhase]bool{
		UpgradePhasePending: false, UpgradePhaseScheduled: false, UpgradePhaseRunning: false, UpgradePhasePaused: false,
		UpgradePhaseAwaitingApproval: false, UpgradePhaseCancelling: false, UpgradePhaseSucceeded: true, UpgradePhaseFailed: true, UpgradePhaseCancelled: true,
		"": false,
	}
	for phase, want := range terminal {
		if got := phase.IsTerminal(); got != want {
			t.Errorf("UpgradePhase(%q).IsTerminal() = %v, want %v", phase, got, want)
		}
	}
}

func TestStepPhaseIsTerminal(t *testing.T) {
	terminal := map[StepPhase]bool{
		StepPhasePending: false, StepPhaseRunning: false,
		StepPhaseSucceeded: true, StepPhaseFailed: true, StepPhaseSkipped: true, "": false,
	}
	for phase, want := range terminal {
		if got := phase.IsTerminal(); got != want {
			t.Errorf("StepPhase(%q).IsTerminal() = %v, want %v", phase, got, want)
		}
	}
}

func TestBackupPhaseIsTerminal(t *testing.T) {
	terminal := map[BackupPhase]bool{
		BackupPhasePending: false, BackupPhaseRunning: false,
		BackupPhaseSucceeded: true, BackupPhasePartiallyFailed: true, BackupPhaseFailed: true, "": false,
	}
	for phase, want := range terminal {
		if got := phase.IsTerminal(); got != want {
			t.Errorf("BackupPhase(%q).IsTerminal() = %v, want %v", phase, got, want)
		}
	}
}

func TestReplicaBackupStateIsTerminal(t *testing.T) {
	terminal := map[ReplicaBackupState]bool{
		ReplicaStatePending: false, ReplicaStateSnapshotting: false, ReplicaStateUploading: false,
		ReplicaStateSucceeded: true, ReplicaStateFailed: true, "": false,
	}
	for state, want := range terminal {
		if got := state.IsTerminal(); got != want {
			t.Errorf("ReplicaBackupState(%q).IsTerminal() = %v, want %v", state, got, want)
		}
	}
}

func TestSupportsClusterAddons(t *testing.T) {
	want := map[CloudProvider]bool{
		CloudProviderEKS: true, CloudProviderACK: true, CloudProviderMock: true,
		CloudProviderGKE: false, CloudProviderAKS: false, "": false,
	}
	for p, w := range want {
		if got := p.SupportsClusterAddons(); got != w {
			t.Errorf("CloudProvider(%q).SupportsClusterAddons() = %v, want %v", p, got, w)
		}
	}
}

func TestStepIDs(t *testing.T) {
	for got, want := range map[string]string{
		ControlPlaneStepID:     "controlplane",
		AddonStepID("vpc-cni"): "addon/vpc-cni",
		NodeGroupStepID("vmstorage", ActionCreateNodeGroup): "nodegroup/vmstorage/CreateNodeGroup",
	} {
		if got != want {
			t.Errorf("step id %q, want %q", got, want)
		}
	}
}

func TestStatusStep(t *testing.T) {
	s := &ClusterUpgradeOperationStatus{Steps: []UpgradeStep{
		{ID: ControlPlaneStepID, Phase: StepPhaseSucceeded},
		{ID: AddonStepID("coredns"), Phase: StepPhasePending},
	}}
	step := s.Step("addon/coredns")
	if step == nil || step.ID != "addon/coredns" {
		t.Fatalf("Step(addon/coredns) = %+v", step)
	}
	step.Phase = StepPhaseRunning
	if s.Steps[1].Phase != StepPhaseRunning {
		t.Errorf("Step must return a pointer into status.steps")
	}
	if s.Step("addon/vpc-cni") != nil {
		t.Errorf("Step of a missing id must be nil")
	}
}

func TestVMClusterKey(t *testing.T) {
	b := &ClusterBackup{}
	b.Namespace = "team-a"
	b.Spec.VMCluster.Name = "vm"
	if ns, name := b.VMClusterKey(); ns != "team-a" || name != "vm" {
		t.Errorf("VMClusterKey() = %q, %q; want team-a, vm", ns, name)
	}
	b.Spec.VMCluster.Namespace = "observability"
	if ns, _ := b.VMClusterKey(); ns != "observability" {
		t.Errorf("VMClusterKey() namespace = %q, want observability", ns)
	}
}

func TestAddToScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{ClusterUpgradeOperationKind, ClusterUpgradeOperationKind + "List", ClusterBackupKind, ClusterBackupKind + "List"} {
		if !s.Recognizes(GroupVersion.WithKind(kind)) {
			t.Errorf("scheme does not recognise %s", kind)
		}
	}
}
