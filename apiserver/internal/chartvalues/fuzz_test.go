package chartvalues

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"sigs.k8s.io/yaml"
)

// anyKey stands for a key the values may choose (a map's key: a node
// selector's label, a resource name) in a derived field path.
const anyKey = "\x00any"

// declaredPaths derives the field paths the chart can render from its
// schema and templates, not from a list kept by hand: it renders the chart
// once per boolean setting with a maximal value (every property the schema
// declares, every map with one key of the values' choosing, every list
// with one item) and records every path of the output, a chosen key as
// anyKey, a list item as "[]".
func declaredPaths(t testing.TB, v *Validator) [][]string {
	t.Helper()
	var schema map[string]any
	if err := json.Unmarshal(v.chart.Schema, &schema); err != nil {
		t.Fatalf("schema: %v", err)
	}
	defs, _ := schema["$defs"].(map[string]any)
	seen := map[string][]string{}
	for _, b := range []bool{false, true} {
		values, err := json.Marshal(maximal(schema, defs, b, 0))
		if err != nil {
			t.Fatal(err)
		}
		out, err := v.render(values, false)
		if err != nil {
			t.Fatalf("rendering the maximal values %s: %v", values, err)
		}
		for _, p := range renderedPaths(t, out) {
			seen[strings.Join(p, "\x01")] = p
		}
	}
	paths := make([][]string, 0, len(seen))
	for _, p := range seen {
		paths = append(paths, p)
	}
	return paths
}

// maximal builds the largest value a schema declares; placeholders for
// strings, the minimum for numbers.
func maximal(s map[string]any, defs map[string]any, b bool, depth int) any {
	if depth > 32 {
		panic("schema too deep")
	}
	if ref, ok := s["$ref"].(string); ok {
		return maximal(defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any), defs, b, depth+1)
	}
	typ := s["type"]
	if l, ok := typ.([]any); ok {
		typ = l[0]
	}
	switch typ {
	case "object":
		m := map[string]any{}
		if props, ok := s["properties"].(map[string]any); ok {
			for k, ps := range props {
				m[k] = maximal(ps.(map[string]any), defs, b, depth+1)
			}
		}
		if pp, ok := s["patternProperties"].(map[string]any); ok {
			for _, ps := range pp {
				m[anyKey] = maximal(ps.(map[string]any), defs, b, depth+1)
			}
		}
		if ap, ok := s["additionalProperties"].(map[string]any); ok {
			m[anyKey] = maximal(ap, defs, b, depth+1)
		}
		return m
	case "array":
		return []any{maximal(s["items"].(map[string]any), defs, b, depth+1)}
	case "string":
		if e, ok := s["enum"].([]any); ok {
			return e[len(e)-1]
		}
		return "x"
	case "integer", "number":
		if m, ok := s["minimum"].(float64); ok {
			return m
		}
		return 1
	case "boolean":
		return b
	}
	panic(fmt.Sprintf("schema type %v not handled", typ))
}

// renderedPaths parses the rendered manifests (one document expected) and
// returns every field path in them.
func renderedPaths(t testing.TB, out map[string]string) [][]string {
	t.Helper()
	var docs []string
	for _, name := range sortedNames(out) {
		for _, d := range releaseutil.SplitManifests(out[name]) {
			if strings.TrimSpace(d) != "" {
				docs = append(docs, d)
			}
		}
	}
	if len(docs) != 1 {
		t.Fatalf("rendered %d YAML documents, want 1:\n%s", len(docs), strings.Join(docs, "\n---\n"))
	}
	var obj map[string]any
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &obj); err != nil {
		t.Fatalf("the rendered VMCluster is not one strict YAML object: %v\n%s", err, docs[0])
	}
	var paths [][]string
	var walk func(prefix []string, v any)
	walk = func(prefix []string, v any) {
		switch c := v.(type) {
		case map[string]any:
			if len(c) == 0 {
				paths = append(paths, prefix)
			}
			for k, e := range c {
				walk(append(append([]string{}, prefix...), k), e)
			}
		case []any:
			if len(c) == 0 {
				paths = append(paths, prefix)
			}
			for _, e := range c {
				walk(append(append([]string{}, prefix...), "[]"), e)
			}
		default:
			paths = append(paths, prefix)
		}
	}
	walk(nil, obj)
	return paths
}

func sortedNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// declared reports whether p is a declared path or a prefix of one (an
// empty map or list the values chose).
func declared(p []string, allowed [][]string) bool {
	for _, a := range allowed {
		if len(p) > len(a) {
			continue
		}
		ok := true
		for i, seg := range p {
			if a[i] != seg && a[i] != anyKey {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

var (
	fuzzOnce    sync.Once
	fuzzV       *Validator
	fuzzAllowed [][]string
	fuzzLeaves  [][]string
)

// FuzzValidate feeds arbitrary JSON through the validation; every value it
// accepts must render (Helm's own schema check included) as exactly one
// VMCluster whose every field path is one the chart declares.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"replicationFactor":2,"retentionPeriod":"30d","imageTag":"v1.101.0-cluster"}`,
		`{"vmstorage":{"replicaCount":5,"storage":{"size":"1Ti","storageClassName":"gp3"},"resources":{"requests":{"cpu":"2","memory":"8Gi"},"limits":{"memory":8e9}}}}`,
		`{"vmstorage":{"storage":{"emptyDir":true},"nodeSelector":{"node-role.observability/vmstorage":"true"},"tolerations":[{"key":"dedicated","operator":"Equal","value":"vm","effect":"NoSchedule","tolerationSeconds":30}]}}`,
		`{"vmselect":{"service":{"type":"NodePort"},"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a","b"]}]}]}}}}}`,
		`{"vminsert":{"affinity":{"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":50,"podAffinityTerm":{"topologyKey":"kubernetes.io/hostname","labelSelector":{"matchExpressions":[{"key":"app","operator":"Exists"}]},"namespaces":["obs"]}}]}}}}`,
		`{"replicationFactor":"1\n  serviceAccountName: ops-operator","vmselect":{"replicaCount":"1\nhostNetwork: true"}}`,
		`{"retentionPeriod":"1\n---\nkind: Secret"}`,
		`{"vmselect":{"nodeSelector":{"a":{"b":"c"}}}}`,
		`{"replicationFactor":1e300}`,
		`{"vmstorage":{"hostNetwork":true}}`,
		`{"vmstorage":{"storage":null}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		checkValues(t, data)
	})
}

// FuzzValidateScalars puts an arbitrary string, number or object into
// each place of the values the schema declares (the leaves of the maximal
// value, a chosen key included) and checks the result as FuzzValidate
// does: the JSON shape is right, only the text varies.
func FuzzValidateScalars(f *testing.F) {
	f.Add(uint16(0), "1\n  serviceAccountName: ops-operator", 1.0, uint8(0))
	f.Add(uint16(3), "ClusterIP\n---\nkind: Secret", 3.0, uint8(1))
	f.Add(uint16(7), "a: b", 1e300, uint8(2))
	f.Add(uint16(11), "node-role/x", -1.0, uint8(3))
	f.Fuzz(func(t *testing.T, slot uint16, s string, n float64, pick uint8) {
		fuzzSetup(t)
		leaves := fuzzLeaves
		leaf := leaves[int(slot)%len(leaves)]
		var value any
		switch pick % 4 {
		case 0:
			value = s
		case 1:
			value = n
		case 2:
			value = map[string]any{s: s}
		default:
			value = []any{s}
		}
		values := setPath(map[string]any{}, leaf, s, value)
		data, err := json.Marshal(values)
		if err != nil {
			return // NaN or Inf: not JSON
		}
		checkValues(t, data)
	})
}

func fuzzSetup(t *testing.T) {
	fuzzOnce.Do(func() {
		fuzzV = vmclusterValidator(t)
		fuzzAllowed = declaredPaths(t, fuzzV)
		var schema map[string]any
		if err := json.Unmarshal(fuzzV.chart.Schema, &schema); err != nil {
			t.Fatal(err)
		}
		defs, _ := schema["$defs"].(map[string]any)
		fuzzLeaves = leafPaths(nil, maximal(schema, defs, false, 0))
		sort.Slice(fuzzLeaves, func(i, j int) bool { return strings.Join(fuzzLeaves[i], "\x01") < strings.Join(fuzzLeaves[j], "\x01") })
	})
}

// leafPaths lists the paths to the scalars of v.
func leafPaths(prefix []string, v any) [][]string {
	switch c := v.(type) {
	case map[string]any:
		var out [][]string
		for k, e := range c {
			out = append(out, leafPaths(append(append([]string{}, prefix...), k), e)...)
		}
		return out
	case []any:
		return leafPaths(append(append([]string{}, prefix...), "[]"), c[0])
	}
	return [][]string{prefix}
}

// setPath builds the value with value at path (a chosen key replaced by
// key, a list of one item).
func setPath(m map[string]any, path []string, key string, value any) any {
	if len(path) == 0 {
		return value
	}
	seg := path[0]
	if seg == "[]" {
		return []any{setPath(map[string]any{}, path[1:], key, value)}
	}
	if seg == anyKey {
		seg = key
	}
	m[seg] = setPath(map[string]any{}, path[1:], key, value)
	return m
}

// checkValues validates data; accepted values must render (Helm's own
// schema check included) as one VMCluster of declared fields only.
func checkValues(t *testing.T, data []byte) {
	fuzzSetup(t)
	if vs := fuzzV.Validate(data); len(vs) > 0 {
		for _, v := range vs {
			if !strings.HasPrefix(v.Field, Field) || v.Description == "" {
				t.Fatalf("violation %+v: want a field under %q and a description", v, Field)
			}
		}
		return
	}
	out, err := fuzzV.Render(data)
	if err != nil {
		t.Fatalf("accepted values that Helm refuses: %v\nvalues: %s", err, data)
	}
	for _, p := range renderedPaths(t, out) {
		if !declared(p, fuzzAllowed) {
			t.Fatalf("accepted values render the undeclared field %q\nvalues: %s", strings.Join(p, "."), data)
		}
	}
}

// TestDeclaredPaths: the derivation sees the fields the chart renders
// and the injection targets of issue #18 are not among them.
func TestDeclaredPaths(t *testing.T) {
	allowed := declaredPaths(t, vmclusterValidator(t))
	for _, p := range [][]string{
		{"spec", "replicationFactor"},
		{"spec", "vmselect", "serviceSpec", "spec", "type"},
		{"spec", "vmstorage", "storage", "emptyDir"},
		{"spec", "vmstorage", "storage", "volumeClaimTemplate", "spec", "resources", "requests", "storage"},
		{"spec", "vmstorage", "nodeSelector", "node-role.observability/vmstorage"},
		{"spec", "vminsert", "tolerations", "[]", "key"},
	} {
		if !declared(p, allowed) {
			t.Errorf("%q: want declared", strings.Join(p, "."))
		}
	}
	for _, p := range [][]string{
		{"spec", "serviceAccountName"},
		{"spec", "vmstorage", "serviceAccountName"},
		{"spec", "vmselect", "hostNetwork"},
		{"spec", "vminsert", "containers"},
		{"spec", "vmstorage", "storage", "volumeClaimTemplate", "spec", "selector"},
		{"kind", "x"},
	} {
		if declared(p, allowed) {
			t.Errorf("%q: want undeclared", strings.Join(p, "."))
		}
	}
}
