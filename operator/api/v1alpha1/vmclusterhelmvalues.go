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

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// VMClusterHelmValues is the part of a VMCluster spec that a VMStorage
// rollout may merge-patch into VMCluster observability/vmcluster: an
// allowlist, not a free-form object. Its only key is "vmstorage"; see
// VMStorageHelmValues for the keys below it.
//
// It is a map rather than a struct on purpose: a structural CRD schema
// silently prunes fields it does not declare, which would turn a refused
// key into a quietly dropped one. As maps, every key stays visible to the
// CRD's CEL rules, which refuse the object naming the key.
//
// +kubebuilder:validation:MaxProperties=16
// +kubebuilder:validation:XValidation:rule="self.all(k, k == 'vmstorage')",messageExpression="'may only set vmstorage (the vmstorage placement and size); not allowed: ' + self.filter(k, k != 'vmstorage').join(', ')",reason="FieldValueForbidden"
type VMClusterHelmValues map[string]VMStorageHelmValues

// VMStorageHelmValues are the VMCluster spec.vmstorage fields a VMStorage
// rollout may change: where vmstorage runs and how big it is —
// nodeSelector, affinity, tolerations, topologySpreadConstraints,
// replicaCount and resources (AllowedVMStorageHelmValues). Anything else
// (a service account, host networking, extra containers or volumes, the
// storage, the image, extra arguments) is refused: those are not needed to
// move vmstorage to a new node group, and each could give the caller more
// power than the upgrade API grants.
//
// +kubebuilder:validation:MaxProperties=32
// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['nodeSelector', 'affinity', 'tolerations', 'topologySpreadConstraints', 'replicaCount', 'resources'])",messageExpression="'may only set nodeSelector, affinity, tolerations, topologySpreadConstraints, replicaCount and resources; not allowed: ' + self.filter(k, !(k in ['nodeSelector', 'affinity', 'tolerations', 'topologySpreadConstraints', 'replicaCount', 'resources'])).join(', ')",reason="FieldValueForbidden"
type VMStorageHelmValues map[string]apiextensionsv1.JSON

// VMStorageHelmValuesKey is the one key of VMClusterHelmValues.
const VMStorageHelmValuesKey = "vmstorage"

// AllowedVMStorageHelmValues are the keys VMStorageHelmValues may hold,
// each with the JSON type its value must have. The CRD's CEL rule on
// VMStorageHelmValues lists the same keys (a test in
// internal/apivalidation proves they agree).
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

// Validate returns every problem of the values, sorted by path: a key
// outside the allowlist, vmstorage that is not an object, a value of the
// wrong JSON type (null is accepted: in a merge patch it removes the
// field), a replicaCount below 1. ops-apiserver refuses a request with any
// of them (one field violation each) and ops-operator fails an operation
// with any of them before it starts (reason InvalidSpec), so values that
// reached the cluster by another way than the CRD's checks are never
// patched into the VMCluster.
func (v VMClusterHelmValues) Validate() []VMClusterHelmValuesViolation {
	var out []VMClusterHelmValuesViolation
	add := func(path, format string, args ...any) {
		out = append(out, VMClusterHelmValuesViolation{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	for k, vs := range v {
		if k != VMStorageHelmValuesKey {
			add(k, "is not allowed: only vmstorage (its placement and size) may be set")
			continue
		}
		for f, val := range vs {
			want, ok := AllowedVMStorageHelmValues[f]
			if !ok {
				add(k+"."+f, "is not allowed: only %s may be set", strings.Join(allowedKeys(), ", "))
				continue
			}
			got := jsonType(val.Raw)
			switch {
			case got == "null":
			case want == "integer" && got == "number":
				n, isInt := jsonInt(val.Raw)
				switch {
				case !isInt:
					add(k+"."+f, "must be an integer")
				case n < 1:
					add(k+"."+f, "must be at least 1")
				}
			case got != want:
				add(k+"."+f, "must be a JSON %s, not %s", want, got)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// ParseVMClusterHelmValues decodes a JSON object into VMClusterHelmValues.
// It fails on anything else than an object whose values are objects (the
// shape the CRD stores); Validate then says what is allowed.
func ParseVMClusterHelmValues(raw []byte) (VMClusterHelmValues, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return nil, fmt.Errorf("must be a JSON object")
	}
	out := VMClusterHelmValues{}
	for k, v := range top {
		var inner map[string]json.RawMessage
		if err := json.Unmarshal(v, &inner); err != nil || inner == nil {
			return nil, fmt.Errorf("%s must be a JSON object", k)
		}
		vs := VMStorageHelmValues{}
		for f, val := range inner {
			var buf bytes.Buffer
			if err := json.Compact(&buf, val); err != nil {
				return nil, fmt.Errorf("%s.%s: %w", k, f, err)
			}
			vs[f] = apiextensionsv1.JSON{Raw: buf.Bytes()}
		}
		out[k] = vs
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
