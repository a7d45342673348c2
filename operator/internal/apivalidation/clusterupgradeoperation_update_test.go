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
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// updateCase creates a valid object, then updates its spec.
type updateCase struct {
	name   string
	mutate func(spec obj)
	reject *rejection
}

// runUpdateCases creates one object per case from base and updates it with
// the case's change to its spec.
func runUpdateCases(t *testing.T, kind string, base func() obj, cases []updateCase) {
	t.Helper()
	ns := env.NewNamespace(t)
	ctx := context.Background()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			o := newObject(kind, ns, fmt.Sprintf("case-%03d", i), base())
			g.Expect(env.Client.Create(ctx, o)).To(Succeed())
			spec := o.Object["spec"].(obj)
			tc.mutate(spec)
			err := env.Client.Update(ctx, o)
			expectResult(g, err, tc.reject)
		})
	}
}

// upgradeSpecBothNodeGroups is the seed request with the seed's VMStorage
// node group added, so that every field has a value.
func upgradeSpecBothNodeGroups() obj {
	s := upgradeSpec()
	s["nodeGroupUpgrades"] = append(list(s, "nodeGroupUpgrades"), vmstorageNG())
	return s
}

// ng1 is the path of the VMStorage node group of upgradeSpecBothNodeGroups.
const ng1 = "spec.nodeGroupUpgrades[1]"

func TestClusterUpgradeOperationImmutability(t *testing.T) {
	cases := []updateCase{
		{name: "paused set", mutate: func(s obj) { s["paused"] = true }},
		{name: "cancel set", mutate: func(s obj) { s["cancel"] = true }},
		{name: "paused and cancel set together", mutate: func(s obj) { s["paused"] = true; s["cancel"] = true }},
		{name: "no change", mutate: func(obj) {}},

		{name: "k8sClusterName changed", mutate: func(s obj) { s["k8sClusterName"] = "other" },
			reject: rejected("spec.k8sClusterName", "k8sClusterName is immutable")},
		{name: "region changed", mutate: func(s obj) { s["region"] = "us-east-1" },
			reject: rejected("spec.region", "region is immutable")},
		{name: "cloudProvider changed", mutate: func(s obj) { s["cloudProvider"] = "mock" },
			reject: rejected("spec.cloudProvider", "cloudProvider is immutable")},
		{name: "targetVersion changed", mutate: func(s obj) { s["targetVersion"] = "1.31" },
			reject: rejected("spec.targetVersion", "targetVersion is immutable")},
		{name: "schedule changed", mutate: func(s obj) { s["schedule"] = "2026-05-07T12:00:00Z" },
			reject: rejected("spec.schedule", "schedule is immutable")},
		{name: "schedule removed", mutate: func(s obj) { delete(s, "schedule") },
			reject: rejected("spec.schedule", "schedule is immutable")},
		{name: "addon version changed", mutate: func(s obj) { item(s, "clusterAddons", 0)["version"] = "v1.19.0-eksbuild.1" },
			reject: rejected("spec.clusterAddons", "clusterAddons is immutable")},
		{name: "addon added", mutate: func(s obj) {
			s["clusterAddons"] = append(list(s, "clusterAddons"), obj{"name": "coredns", "version": "v1.11.1-eksbuild.4"})
		}, reject: rejected("spec.clusterAddons", "clusterAddons is immutable")},
		{name: "addons removed", mutate: func(s obj) { delete(s, "clusterAddons") },
			reject: rejected("spec.clusterAddons", "clusterAddons is immutable")},
		{name: "node group strategy changed", mutate: func(s obj) {
			item(s, "nodeGroupUpgrades", 0)["strategy"] = "blue-green"
			item(s, "nodeGroupUpgrades", 0)["newNodeGroupName"] = "o2"
		},
			reject: rejected("spec.nodeGroupUpgrades", "nodeGroupUpgrades is immutable")},
		{name: "node group removed", mutate: func(s obj) { s["nodeGroupUpgrades"] = list(s, "nodeGroupUpgrades")[:1] },
			reject: rejected("spec.nodeGroupUpgrades", "nodeGroupUpgrades is immutable")},
		{name: "vmClusterHelmValues changed", mutate: func(s obj) {
			item(s, "nodeGroupUpgrades", 1)["vmClusterHelmValues"] = mustJSON(`{"vmstorage": {"replicaCount": 4}}`)
		},
			reject: rejected("spec.nodeGroupUpgrades", "nodeGroupUpgrades is immutable")},
		{name: "vmstorageSTSName added", mutate: func(s obj) { item(s, "nodeGroupUpgrades", 1)["vmstorageSTSName"] = "vmstorage-other" },
			reject: rejected("spec.nodeGroupUpgrades", "nodeGroupUpgrades is immutable")},
		{name: "an invalid change is still validated", mutate: func(s obj) { item(s, "nodeGroupUpgrades", 1)["strategy"] = "in-place" },
			reject: rejected(ng1+".requiresVMStorageRollout", "only valid with strategy blue-green")},
	}
	runUpdateCases(t, v1alpha1.ClusterUpgradeOperationKind, upgradeSpecBothNodeGroups, cases)
}

func TestClusterUpgradeOperationImmutabilityOfAbsentFields(t *testing.T) {
	minimal := func() obj {
		return obj{"k8sClusterName": "c", "region": "local", "cloudProvider": "mock", "targetVersion": "1.30"}
	}
	cases := []updateCase{
		{name: "paused set", mutate: func(s obj) { s["paused"] = true }},
		{name: "schedule added", mutate: func(s obj) { s["schedule"] = "2026-05-06T12:00:00Z" },
			reject: rejected("spec.schedule", "schedule is immutable")},
		{name: "addons added", mutate: func(s obj) { s["clusterAddons"] = []any{obj{"name": "vpc-cni", "version": "v1.0.0"}} },
			reject: rejected("spec.clusterAddons", "clusterAddons is immutable")},
		{name: "empty addons added", mutate: func(s obj) { s["clusterAddons"] = []any{} }},
		{name: "node groups added", mutate: func(s obj) { s["nodeGroupUpgrades"] = []any{obj{"nodeGroupName": "a", "strategy": "in-place"}} },
			reject: rejected("spec.nodeGroupUpgrades", "nodeGroupUpgrades is immutable")},
	}
	runUpdateCases(t, v1alpha1.ClusterUpgradeOperationKind, minimal, cases)
}

// TestClusterUpgradeOperationPauseResumeCancel walks one object through the
// kubectl-only lifecycle of the docs: pause, resume, cancel, with JSON merge
// patches like `kubectl patch --type merge` sends.
func TestClusterUpgradeOperationPauseResumeCancel(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	o := newObject(v1alpha1.ClusterUpgradeOperationKind, ns, "upgrade", upgradeSpecBothNodeGroups())
	g.Expect(env.Client.Create(ctx, o)).To(Succeed())
	generation := o.GetGeneration()

	patch := func(body string) error {
		return env.Client.Patch(ctx, o, client.RawPatch("application/merge-patch+json", []byte(body)))
	}
	read := func() *v1alpha1.ClusterUpgradeOperation {
		cuo := &v1alpha1.ClusterUpgradeOperation{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(o), cuo)).To(Succeed())
		return cuo
	}

	g.Expect(patch(`{"spec":{"paused":true}}`)).To(Succeed())
	g.Expect(read().Spec.Paused).To(BeTrue())
	g.Expect(read().Generation).To(BeNumerically(">", generation), "a spec change bumps the generation")

	g.Expect(patch(`{"spec":{"paused":false}}`)).To(Succeed())
	g.Expect(read().Spec.Paused).To(BeFalse())
	g.Expect(patch(`{"spec":{"paused":true}}`)).To(Succeed())
	g.Expect(patch(`{"spec":{"paused":null}}`)).To(Succeed(), "removing paused resumes too")
	g.Expect(read().Spec.Paused).To(BeFalse())

	g.Expect(patch(`{"spec":{"cancel":true}}`)).To(Succeed())
	g.Expect(read().Spec.Cancel).To(BeTrue())

	err := patch(`{"spec":{"cancel":false}}`)
	expectResult(g, err, rejected("spec.cancel", "cancel cannot be set back to false once it is true"))
	err = patch(`{"spec":{"cancel":null}}`)
	expectResult(g, err, rejected("spec.cancel", "cancel cannot be set back to false once it is true"))
	g.Expect(read().Spec.Cancel).To(BeTrue())

	// Pausing a cancelled operation is allowed (and has no effect).
	g.Expect(patch(`{"spec":{"paused":true}}`)).To(Succeed())

	// Labels and annotations are not spec: always changeable.
	g.Expect(patch(`{"metadata":{"labels":{"team":"o11y"}}}`)).To(Succeed())
}

func TestClusterUpgradeOperationSpecRequired(t *testing.T) {
	g := NewWithT(t)
	ns := env.NewNamespace(t)
	o := &unstructured.Unstructured{Object: obj{}}
	o.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(v1alpha1.ClusterUpgradeOperationKind))
	o.SetNamespace(ns)
	o.SetName("no-spec")
	err := env.Client.Create(context.Background(), o)
	expectResult(g, err, rejected("spec", "Required value"))
}
