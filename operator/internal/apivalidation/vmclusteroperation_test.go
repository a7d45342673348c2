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

func scaleSpec() obj {
	return mustJSON(`{
  "vmCluster": {"name": "vmcluster"},
  "type": "HorizontalScaling",
  "horizontalScaling": {"vmstorage": 5}
}`)
}

// Every refusal of a VMClusterOperation names its field (docs/operations.md).
func TestVMClusterOperationCreate(t *testing.T) {
	cases := []specCase{
		{name: "horizontal scaling"},
		{name: "vertical scaling", mutate: func(s obj) {
			s["type"] = "VerticalScaling"
			delete(s, "horizontalScaling")
			s["verticalScaling"] = obj{"vmstorage": obj{"requests": obj{"cpu": "500m", "memory": "1Gi"}}}
		}},
		{name: "restart", mutate: func(s obj) {
			s["type"] = "Restart"
			delete(s, "horizontalScaling")
			s["restart"] = obj{"components": []any{"vmstorage", "vmselect"}}
		}},
		{name: "every optional field", mutate: func(s obj) {
			s["order"] = []any{"vmselect", "vmstorage"}
			s["acknowledgeReplicationRisk"] = true
			s["stepTimeout"] = "30m"
			s["paused"] = true
		}},

		{name: "vmCluster missing", mutate: func(s obj) { delete(s, "vmCluster") },
			reject: rejected("spec.vmCluster", "Required value")},
		{name: "type missing", mutate: func(s obj) { delete(s, "type") },
			reject: rejected("spec.type", "Required value")},
		{name: "type unknown", mutate: func(s obj) { s["type"] = "Upgrade" },
			reject: rejected("spec.type", `Unsupported value: "Upgrade"`)},
		{name: "sub-spec of the type missing", mutate: func(s obj) { delete(s, "horizontalScaling") },
			reject: rejected("spec.horizontalScaling", "horizontalScaling is required for type HorizontalScaling")},
		{name: "sub-spec of another type", mutate: func(s obj) { s["restart"] = obj{"components": []any{"vmstorage"}} },
			reject: rejected("spec.restart", "restart is only valid with type Restart")},
		{name: "verticalScaling missing", mutate: func(s obj) { s["type"] = "VerticalScaling"; delete(s, "horizontalScaling") },
			reject: rejected("spec.verticalScaling", "verticalScaling is required for type VerticalScaling")},
		{name: "horizontalScaling empty", mutate: func(s obj) { s["horizontalScaling"] = obj{} },
			reject: rejected("spec.horizontalScaling", "needs at least one of vmstorage, vminsert, vmselect")},
		{name: "replicas 0", mutate: func(s obj) { s["horizontalScaling"] = obj{"vmstorage": 0} },
			reject: rejected("spec.horizontalScaling.vmstorage", "greater than or equal to 1")},
		{name: "replicas 101", mutate: func(s obj) { s["horizontalScaling"] = obj{"vminsert": 101} },
			reject: rejected("spec.horizontalScaling.vminsert", "less than or equal to 100")},
		{name: "unknown component", mutate: func(s obj) { s["horizontalScaling"] = obj{"vmagent": 2} },
			reject: rejected("spec.horizontalScaling", "needs at least one of vmstorage, vminsert, vmselect")},
		{name: "resources of another kind", mutate: func(s obj) {
			s["type"] = "VerticalScaling"
			delete(s, "horizontalScaling")
			s["verticalScaling"] = obj{"vminsert": obj{"limits": obj{"nvidia.com/gpu": "1"}}}
		}, reject: rejected("spec.verticalScaling.vminsert.limits", "only cpu and memory may be set")},
		{name: "resources empty", mutate: func(s obj) {
			s["type"] = "VerticalScaling"
			delete(s, "horizontalScaling")
			s["verticalScaling"] = obj{"vminsert": obj{}}
		}, reject: rejected("spec.verticalScaling.vminsert", "resources need requests or limits")},
		{name: "restart without components", mutate: func(s obj) {
			s["type"] = "Restart"
			delete(s, "horizontalScaling")
			s["restart"] = obj{"components": []any{}}
		}, reject: rejected("spec.restart.components", "should have at least 1 items")},
		{name: "restart of an unknown component", mutate: func(s obj) {
			s["type"] = "Restart"
			delete(s, "horizontalScaling")
			s["restart"] = obj{"components": []any{"vmagent"}}
		}, reject: rejected("spec.restart.components[0]", `Unsupported value: "vmagent"`)},
		{name: "order with a duplicate", mutate: func(s obj) { s["order"] = []any{"vmstorage", "vmstorage"} },
			reject: rejected("spec.order[1]", "Duplicate value")},
		{name: "order with an unknown component", mutate: func(s obj) { s["order"] = []any{"vmauth"} },
			reject: rejected("spec.order[0]", `Unsupported value: "vmauth"`)},
		{name: "stepTimeout too short", mutate: func(s obj) { s["stepTimeout"] = "30s" },
			reject: rejected("spec.stepTimeout", "stepTimeout must be between 1m and 6h")},
		{name: "stepTimeout too long", mutate: func(s obj) { s["stepTimeout"] = "7h" },
			reject: rejected("spec.stepTimeout", "stepTimeout must be between 1m and 6h")},
	}
	runCreateCases(t, v1alpha1.VMClusterOperationKind, scaleSpec, cases)
}

func TestVMClusterOperationImmutability(t *testing.T) {
	cases := []updateCase{
		{name: "paused changed", mutate: func(s obj) { s["paused"] = true }},
		{name: "cancel set", mutate: func(s obj) { s["cancel"] = true }},
		{name: "target changed", mutate: func(s obj) { s["horizontalScaling"] = obj{"vmstorage": 4} },
			reject: rejected("spec.horizontalScaling", "horizontalScaling is immutable")},
		{name: "vmCluster changed", mutate: func(s obj) { s["vmCluster"] = obj{"name": "other"} },
			reject: rejected("spec.vmCluster", "vmCluster is immutable")},
		{name: "order added", mutate: func(s obj) { s["order"] = []any{"vmselect"} },
			reject: rejected("spec.order", "order is immutable")},
		{name: "acknowledgement added", mutate: func(s obj) { s["acknowledgeReplicationRisk"] = true },
			reject: rejected("spec.acknowledgeReplicationRisk", "acknowledgeReplicationRisk is immutable")},
		{name: "stepTimeout added", mutate: func(s obj) { s["stepTimeout"] = "20m" },
			reject: rejected("spec.stepTimeout", "stepTimeout is immutable")},
	}
	runUpdateCases(t, v1alpha1.VMClusterOperationKind, scaleSpec, cases)
	cancelled := func() obj { s := scaleSpec(); s["cancel"] = true; return s }
	runUpdateCases(t, v1alpha1.VMClusterOperationKind, cancelled, []updateCase{
		{name: "cancel set back to false", mutate: func(s obj) { s["cancel"] = false },
			reject: rejected("spec.cancel", "cancel cannot be set back to false once it is true")},
	})
}
