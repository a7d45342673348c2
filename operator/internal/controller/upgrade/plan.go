package upgrade

import (
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// buildPlan returns the ordered steps of an operation: the control plane,
// each addon, then each node group's steps. It is written to status before
// the first cloud call; the reconciler only ever moves through it.
func buildPlan(spec *opsv1.ClusterUpgradeOperationSpec) []opsv1.UpgradeStep {
	steps := []opsv1.UpgradeStep{{
		ID: opsv1.ControlPlaneStepID, Type: opsv1.StepTypeControlPlane,
		Action: opsv1.ActionUpgradeControlPlane, Phase: opsv1.StepPhasePending,
	}}
	for _, a := range spec.ClusterAddons {
		steps = append(steps, opsv1.UpgradeStep{
			ID: opsv1.AddonStepID(a.Name), Type: opsv1.StepTypeAddon,
			Action: opsv1.ActionUpdateAddon, Target: a.Name, Phase: opsv1.StepPhasePending,
		})
	}
	for _, ng := range spec.NodeGroupUpgrades {
		for _, action := range nodeGroupActions(ng) {
			target := ng.NodeGroupName
			if action == opsv1.ActionCreateNodeGroup || action == opsv1.ActionWaitNodesReady {
				target = ng.NewNodeGroupName
			}
			steps = append(steps, opsv1.UpgradeStep{
				ID: opsv1.NodeGroupStepID(ng.NodeGroupName, action), Type: opsv1.StepTypeNodeGroup,
				Action: action, Target: target, Phase: opsv1.StepPhasePending,
			})
		}
	}
	return steps
}

// nodeGroupActions is the sequence of actions of one node group upgrade.
func nodeGroupActions(ng opsv1.NodeGroupUpgrade) []opsv1.StepAction {
	if ng.Strategy != opsv1.StrategyBlueGreen {
		return []opsv1.StepAction{opsv1.ActionUpgradeNodeGroup}
	}
	var actions []opsv1.StepAction
	if ng.RequiresVMStorageRollout && ng.BackupBeforeRollout != nil {
		// The backup gate: before anything of the node group moves.
		actions = append(actions, opsv1.ActionBackupVMStorage)
	}
	actions = append(actions, opsv1.ActionCreateNodeGroup, opsv1.ActionWaitNodesReady)
	if ng.RequiresVMStorageRollout {
		actions = append(actions, opsv1.ActionRolloutVMStorage)
	}
	return append(actions, opsv1.ActionCordonNodes, opsv1.ActionDrainNodes, opsv1.ActionDeleteNodeGroup)
}

// isCloudAction reports whether a step's action is a long-running cloud
// operation (started once, then polled by its id).
func isCloudAction(a opsv1.StepAction) bool {
	switch a {
	case opsv1.ActionUpgradeControlPlane, opsv1.ActionUpdateAddon, opsv1.ActionUpgradeNodeGroup,
		opsv1.ActionCreateNodeGroup, opsv1.ActionDeleteNodeGroup:
		return true
	}
	return false
}

// nodeGroupOf returns the node group upgrade a node group step belongs to.
func nodeGroupOf(spec *opsv1.ClusterUpgradeOperationSpec, step *opsv1.UpgradeStep) *opsv1.NodeGroupUpgrade {
	return spec.NodeGroupUpgradeOf(step)
}

// addonOf returns the addon an addon step updates.
func addonOf(spec *opsv1.ClusterUpgradeOperationSpec, step *opsv1.UpgradeStep) *opsv1.ClusterAddon {
	for i := range spec.ClusterAddons {
		if spec.ClusterAddons[i].Name == step.Target {
			return &spec.ClusterAddons[i]
		}
	}
	return nil
}
