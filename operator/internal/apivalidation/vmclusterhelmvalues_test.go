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
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// TestVMClusterHelmValuesAllowlistMatchesGo: the CRD's CEL rule and the Go
// allowlist (used by ops-apiserver and the operator's preflight) agree:
// every key of v1alpha1.AllowedVMStorageHelmValues is accepted and stored
// as written (not pruned), and a key outside it is refused.
func TestVMClusterHelmValuesAllowlistMatchesGo(t *testing.T) {
	ns := env.NewNamespace(t)
	sample := map[string]any{"object": obj{}, "array": []any{}, "integer": int64(2)}
	i := 0
	for key, typ := range v1alpha1.AllowedVMStorageHelmValues {
		t.Run(key, func(t *testing.T) {
			g := NewWithT(t)
			spec := upgradeSpec()
			setNodeGroups(vmstorageWith(func(n obj) {
				n["vmClusterHelmValues"] = obj{"vmstorage": obj{key: sample[typ]}}
			}))(spec)
			i++
			o := newObject(v1alpha1.ClusterUpgradeOperationKind, ns, fmt.Sprintf("allowed-%d", i), spec)
			g.Expect(env.Client.Create(context.Background(), o)).To(Succeed())
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(o.GroupVersionKind())
			g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(o), got)).To(Succeed())
			_, found, err := unstructured.NestedFieldNoCopy(got.Object, "spec", "nodeGroupUpgrades")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(found).To(BeTrue())
			ngs, _, _ := unstructured.NestedSlice(got.Object, "spec", "nodeGroupUpgrades")
			_, kept, _ := unstructured.NestedFieldNoCopy(ngs[0].(map[string]any), "vmClusterHelmValues", "vmstorage", key)
			g.Expect(kept).To(BeTrue(), "vmstorage.%s was pruned", key)
		})
	}
	overlay := func() obj {
		spec := upgradeSpec()
		setNodeGroups(vmstorageWith(func(n obj) {
			n["vmClusterHelmValues"] = obj{"vmstorage": obj{"replicaCount": int64(3), "serviceAccountName": "ops-operator"}}
		}))(spec)
		return spec
	}
	t.Run("a vmstorage field outside the allowlist, strict field validation (kubectl's default)", func(t *testing.T) {
		g := NewWithT(t)
		err := env.Client.Create(context.Background(), newObject(v1alpha1.ClusterUpgradeOperationKind, ns, "refused", overlay()), client.FieldValidation("Strict"))
		g.Expect(err).To(HaveOccurred())
		g.Expect(err.Error()).To(ContainSubstring(`unknown field "spec.nodeGroupUpgrades[0].vmClusterHelmValues.vmstorage.serviceAccountName"`))
	})
	t.Run("a vmstorage field outside the allowlist, no field validation: pruned, never stored", func(t *testing.T) {
		g := NewWithT(t)
		o := newObject(v1alpha1.ClusterUpgradeOperationKind, ns, "pruned", overlay())
		g.Expect(env.Client.Create(context.Background(), o)).To(Succeed())
		got := &v1alpha1.ClusterUpgradeOperation{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(o), got)).To(Succeed())
		b, err := json.Marshal(got.Spec.NodeGroupUpgrades[0].VMClusterHelmValues)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(b).To(MatchJSON(`{"vmstorage":{"replicaCount":3}}`))
	})
}
