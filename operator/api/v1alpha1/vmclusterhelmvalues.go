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
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
)

// VMClusterHelmValues is the part of a VMCluster spec that a VMStorage
// rollout may merge-patch into VMCluster observability/vmcluster: an
// allowlist, not a free-form object. Its only key is "vmstorage"; see
// VMStorageHelmValues for the fields below it.
//
// The top level is a map, not a struct, so that every key stays visible to
// the CRD's CEL rule, which refuses another component naming it (a struct
// would let the API server silently prune it).
//
// +kubebuilder:validation:MaxProperties=16
// +kubebuilder:validation:XValidation:rule="self.all(k, k == 'vmstorage')",message="may only set vmstorage (the vmstorage placement and size): any other key, e.g. vminsert or vmselect, is not allowed",reason="FieldValueForbidden"
type VMClusterHelmValues map[string]VMStorageHelmValues

// VMStorageHelmValues are the VMCluster spec.vmstorage fields a VMStorage
// rollout may change: where vmstorage runs and how big it is. Anything else
// (a service account, host networking, extra containers or volumes, the
// storage, the image, extra arguments) is refused: none is needed to move
// vmstorage to a new node group, and each could give the caller more power
// than the upgrade API grants. This level is typed (CEL cannot see the keys
// of a map whose values have no single type): kubectl, which validates
// fields strictly by default, refuses an unknown field naming it; a client
// that asks for no field validation gets it pruned, never stored or
// patched. ops-apiserver refuses it with a 400 naming it.
type VMStorageHelmValues struct {
	// NodeSelector of the vmstorage pods, e.g. the new node group's label.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Affinity of the vmstorage pods (a Kubernetes Affinity).
	// +optional
	Affinity *runtime.RawExtension `json:"affinity,omitempty"`
	// Tolerations of the vmstorage pods (Kubernetes Tolerations).
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Tolerations []runtime.RawExtension `json:"tolerations,omitempty"`
	// TopologySpreadConstraints of the vmstorage pods.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	TopologySpreadConstraints []runtime.RawExtension `json:"topologySpreadConstraints,omitempty"`
	// ReplicaCount is the number of vmstorage replicas.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ReplicaCount *int32 `json:"replicaCount,omitempty"`
	// Resources of the vmstorage container (Kubernetes
	// ResourceRequirements).
	// +optional
	Resources *runtime.RawExtension `json:"resources,omitempty"`
}

// VMStorageHelmValuesKey is the one key of VMClusterHelmValues.
const VMStorageHelmValuesKey = "vmstorage"

// AllowedVMStorageHelmValues are the keys VMStorageHelmValues may hold,
// each with the JSON type its value must have: the JSON names of the fields
// of VMStorageHelmValues (a test in internal/apivalidation proves the CRD
// stores each of them and refuses any other).
var AllowedVMStorageHelmValues = map[string]string{
	"nodeSelector":              "object",
	"affinity":                  "object",
	"tolerations":               "array",
	"topologySpreadConstraints": "array",
	"replicaCount":              "integer",
	"resources":                 "object",
}

// VMClusterHelmValuesViolation is one problem of a VMClusterHelmValues:
// the path of the offending key below vmClusterHelmValues (e.g.
// "vmstorage.serviceAccountName") and what is wrong with it.
// +kubebuilder:object:generate=false
type VMClusterHelmValuesViolation struct {
	Path    string
	Message string
}

// Validate returns every problem of the values (see
// ValidateVMClusterHelmValuesJSON). Decoded values hold no key outside the
// allowlist (there is no field for one); the types and bounds are checked.
func (v VMClusterHelmValues) Validate() []VMClusterHelmValuesViolation {
	if len(v) == 0 {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return []VMClusterHelmValuesViolation{{Path: "", Message: err.Error()}}
	}
	return ValidateVMClusterHelmValuesJSON(b)
}

// ValidateVMClusterHelmValuesJSON returns every problem of vmClusterHelmValues
// given as JSON, sorted by path: a key outside the allowlist, vmstorage that
// is not an object, a value of the wrong JSON type (null is accepted: in a
// merge patch it removes the field), a replicaCount below 1. ops-apiserver
// refuses a request with any of them (one field violation each) and
// ops-operator fails an operation with any of them before it starts
// (reason InvalidSpec).
func ValidateVMClusterHelmValuesJSON(raw []byte) []VMClusterHelmValuesViolation {
	var out []VMClusterHelmValuesViolation
	add := func(path, format string, args ...any) {
		out = append(out, VMClusterHelmValuesViolation{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		add("", "must be a JSON object")
		return out
	}
	for k, inner := range top {
		if k != VMStorageHelmValuesKey {
			add(k, "is not allowed: only vmstorage (its placement and size) may be set")
			continue
		}
		var vs map[string]json.RawMessage
		if err := json.Unmarshal(inner, &vs); err != nil || vs == nil {
			add(k, "must be a JSON object")
			continue
		}
		for f, val := range vs {
			want, ok := AllowedVMStorageHelmValues[f]
			if !ok {
				add(k+"."+f, "is not allowed: only %s may be set", strings.Join(allowedKeys(), ", "))
				continue
			}
			got := jsonType(val)
			switch {
			case got == "null":
			case want == "integer" && got == "number":
				n, isInt := jsonInt(val)
				switch {
				case !isInt:
					add(k+"."+f, "must be an integer")
				case n < 1:
					add(k+"."+f, "must be at least 1")
				}
			case got != want:
				add(k+"."+f, "must be a JSON %s, not %s", want, got)
			case f == "nodeSelector":
				var m map[string]string
				if json.Unmarshal(val, &m) != nil {
					add(k+"."+f, "must map strings to strings")
				}
			case want == "array":
				var items []json.RawMessage
				_ = json.Unmarshal(val, &items)
				for i, it := range items {
					if jsonType(it) != "object" {
						add(fmt.Sprintf("%s.%s[%d]", k, f, i), "must be a JSON object")
					}
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// ParseVMClusterHelmValues decodes values that
// ValidateVMClusterHelmValuesJSON accepts.
func ParseVMClusterHelmValues(raw []byte) (VMClusterHelmValues, error) {
	if p := ValidateVMClusterHelmValuesJSON(raw); len(p) > 0 {
		return nil, fmt.Errorf("%s %s", p[0].Path, p[0].Message)
	}
	out := VMClusterHelmValues{}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func allowedKeys() []string {
	keys := make([]string, 0, len(AllowedVMStorageHelmValues))
	for k := range AllowedVMStorageHelmValues {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// jsonType names the JSON type of a raw value: object, array, string,
// number, boolean, null, or invalid.
func jsonType(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "null"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	if json.Valid(raw) {
		return "number"
	}
	return "invalid"
}

// jsonInt reads a JSON number that is an integer within int32.
func jsonInt(raw []byte) (int64, bool) {
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, false
	}
	i, err := n.Int64()
	if err != nil || i > 1<<31-1 || i < -(1<<31) {
		return 0, false
	}
	return i, true
}
