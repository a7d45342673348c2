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
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestVMClusterHelmValuesValidate(t *testing.T) {
	cases := []struct {
		name string
		in   string
		// want are the violation paths, sorted.
		want []string
	}{
		{name: "empty", in: `{}`},
		{name: "empty vmstorage", in: `{"vmstorage":{}}`},
		{name: "every allowed key", in: `{"vmstorage":{"nodeSelector":{"a":"b"},"affinity":{},"tolerations":[],"topologySpreadConstraints":[{"maxSkew":1}],"replicaCount":3,"resources":{"limits":{"cpu":"1"}}}}`},
		{name: "null removes a field", in: `{"vmstorage":{"nodeSelector":null}}`},
		{name: "service account", in: `{"vmstorage":{"serviceAccountName":"ops-operator"}}`, want: []string{"vmstorage.serviceAccountName"}},
		{name: "another component", in: `{"vminsert":{"replicaCount":1},"vmstorage":{"replicaCount":1}}`, want: []string{"vminsert"}},
		{name: "every problem, sorted", in: `{"vmstorage":{"hostNetwork":true,"containers":[],"replicaCount":3},"vmselect":{},"clusterVersion":{}}`,
			want: []string{"clusterVersion", "vmselect", "vmstorage.containers", "vmstorage.hostNetwork"}},
		{name: "replicaCount a string", in: `{"vmstorage":{"replicaCount":"3"}}`, want: []string{"vmstorage.replicaCount"}},
		{name: "replicaCount fractional", in: `{"vmstorage":{"replicaCount":1.5}}`, want: []string{"vmstorage.replicaCount"}},
		{name: "replicaCount zero", in: `{"vmstorage":{"replicaCount":0}}`, want: []string{"vmstorage.replicaCount"}},
		{name: "replicaCount huge", in: `{"vmstorage":{"replicaCount":1e30}}`, want: []string{"vmstorage.replicaCount"}},
		{name: "nodeSelector a string", in: `{"vmstorage":{"nodeSelector":"a: b\nhostNetwork: true"}}`, want: []string{"vmstorage.nodeSelector"}},
		{name: "tolerations an object", in: `{"vmstorage":{"tolerations":{}}}`, want: []string{"vmstorage.tolerations"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range ValidateVMClusterHelmValuesJSON([]byte(tc.in)) {
				if p.Message == "" {
					t.Errorf("%s: empty message", p.Path)
				}
				got = append(got, p.Path)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("violations = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseVMClusterHelmValuesRefusesOtherShapes(t *testing.T) {
	for _, in := range []string{`null`, `[]`, `"x"`, `3`, `{"vmstorage":null}`, `{"vmstorage":[]}`, `{"vmstorage":"replicaCount: 3"}`, `{`} {
		if _, err := ParseVMClusterHelmValues([]byte(in)); err == nil {
			t.Errorf("%s: parsed, want an error", in)
		}
	}
}

// TestVMClusterHelmValuesJSON checks that {} survives a round trip as a
// present, empty object (the CRD requires it for a rollout without change)
// and that an absent value stays absent.
func TestVMClusterHelmValuesJSON(t *testing.T) {
	b, err := json.Marshal(NodeGroupUpgrade{NodeGroupName: "a", VMClusterHelmValues: VMClusterHelmValues{}})
	if err != nil || !strings.Contains(string(b), `"vmClusterHelmValues":{}`) {
		t.Fatalf("empty values: %s, %v", b, err)
	}
	b, err = json.Marshal(NodeGroupUpgrade{NodeGroupName: "a"})
	if err != nil || strings.Contains(string(b), "vmClusterHelmValues") {
		t.Fatalf("absent values: %s, %v", b, err)
	}
	var n NodeGroupUpgrade
	if err := json.Unmarshal([]byte(`{"vmClusterHelmValues":{"vmstorage":{"replicaCount":3}}}`), &n); err != nil {
		t.Fatal(err)
	}
	if got := n.VMClusterHelmValues["vmstorage"].ReplicaCount; got == nil || *got != 3 {
		t.Fatalf("replicaCount = %v", got)
	}
	cp := n.DeepCopy()
	*cp.VMClusterHelmValues["vmstorage"].ReplicaCount = 5
	if got := *n.VMClusterHelmValues["vmstorage"].ReplicaCount; got != 3 {
		t.Fatalf("DeepCopy shares the value: replicaCount = %d", got)
	}
}

// FuzzVMClusterHelmValues: whatever Validate accepts holds only allowed
// keys, with values of their type.
func FuzzVMClusterHelmValues(f *testing.F) {
	f.Add(`{"vmstorage":{"replicaCount":3,"nodeSelector":{"a":"b"}}}`)
	f.Add(`{"vmstorage":{"serviceAccountName":"x"},"vminsert":{}}`)
	f.Fuzz(func(t *testing.T, in string) {
		if len(ValidateVMClusterHelmValuesJSON([]byte(in))) > 0 {
			return
		}
		var top map[string]map[string]json.RawMessage
		if err := json.Unmarshal([]byte(in), &top); err != nil {
			t.Fatalf("accepted %q: %v", in, err)
		}
		for k, vs := range top {
			if k != VMStorageHelmValuesKey {
				t.Fatalf("accepted key %q", k)
			}
			for f, val := range vs {
				want, ok := AllowedVMStorageHelmValues[f]
				if !ok {
					t.Fatalf("accepted key vmstorage.%s", f)
				}
				if got := jsonType(val); got != "null" && got != want && !(want == "integer" && got == "number") {
					t.Fatalf("accepted vmstorage.%s of type %s", f, got)
				}
			}
		}
		// What is accepted decodes into the typed values.
		if _, err := ParseVMClusterHelmValues([]byte(in)); err != nil {
			t.Fatalf("accepted but not decodable: %v", err)
		}
	})
}
