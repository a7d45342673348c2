package apivalidation

import (
	"testing"

	"github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

func stackSpec() obj {
	return mustJSON(`{
  "components": [
    {"name": "vm-operator", "chart": "vm-operator"},
    {"name": "vmcluster", "chart": "vmcluster", "dependsOn": ["vm-operator"], "values": {"vmstorage": {"replicaCount": 1}}},
    {"name": "vmagent", "chart": "vmagent", "version": "0.1.0", "dependsOn": ["vmcluster"]}
  ]
}`)
}

func TestObservabilityStackCreate(t *testing.T) {
	const components = "spec.components"
	cases := []specCase{
		{name: "the default stack"},
		{name: "dependsOn an undeclared component", mutate: func(s obj) { item(s, "components", 2)["dependsOn"] = []any{"nope"} },
			reject: rejected(components, "dependsOn must name other components of this stack")},
		{name: "dependsOn itself", mutate: func(s obj) { item(s, "components", 0)["dependsOn"] = []any{"vm-operator"} },
			reject: rejected(components, "dependsOn must name other components of this stack")},
		{name: "duplicate names", mutate: func(s obj) { item(s, "components", 2)["name"] = "vmcluster" },
			reject: rejected("spec.components[2]", "Duplicate value")},
		{name: "no components", mutate: func(s obj) { s["components"] = []any{} },
			reject: rejected(components, "should have at least 1 items")},
		{name: "name not a DNS label", mutate: func(s obj) { item(s, "components", 0)["name"] = "VM_Operator" },
			reject: rejected("spec.components[0].name", "should match")},
		{name: "values not an object", mutate: func(s obj) { item(s, "components", 0)["values"] = "x" },
			reject: rejected("spec.components[0].values", "must be of type object")},
	}
	runCreateCases(t, v1alpha1.ObservabilityStackKind, stackSpec, cases)
}

func TestObservabilityStackDataProtection(t *testing.T) {
	const msg = "removing a vmcluster component deletes its data: set allowDataRemoval to true to remove it"
	without := func(name string) func(obj) {
		return func(s obj) {
			var kept []any
			for _, c := range list(s, "components") {
				if c.(obj)["name"] != name {
					kept = append(kept, c)
				}
			}
			s["components"] = kept
		}
	}
	cases := []updateCase{
		{name: "vmagent removed", mutate: without("vmagent")},
		{name: "values of the vmcluster changed", mutate: func(s obj) { item(s, "components", 1)["values"] = obj{} }},
		{name: "vmcluster removed", mutate: func(s obj) { without("vmagent")(s); without("vmcluster")(s) },
			reject: rejected("spec.components", msg)},
		{name: "vmcluster's chart changed", mutate: func(s obj) { item(s, "components", 1)["chart"] = "other" },
			reject: rejected("spec.components", msg)},
		{name: "vmcluster removed with allowDataRemoval", mutate: func(s obj) {
			without("vmagent")(s)
			without("vmcluster")(s)
			s["allowDataRemoval"] = true
		}},
	}
	runUpdateCases(t, v1alpha1.ObservabilityStackKind, stackSpec, cases)
}
