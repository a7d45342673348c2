package vmclusterop

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/api/resource"
)

// CanonicalResources turns resources as found in a VMCluster spec or in
// Helm values (quantities as strings or numbers) into the canonical JSON of
// ResourcesJSON; anything it cannot read is kept as its JSON.
func CanonicalResources(v any) string {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return "{}"
	}
	out := map[string]map[string]string{}
	for _, name := range []string{"requests", "limits"} {
		rl, ok := m[name].(map[string]any)
		if !ok || len(rl) == 0 {
			continue
		}
		out[name] = map[string]string{}
		for k, raw := range rl {
			var s string
			switch x := raw.(type) {
			case string:
				s = x
			default:
				b, _ := json.Marshal(x)
				s = string(b)
			}
			if q, err := resource.ParseQuantity(s); err == nil {
				s = q.String()
			}
			out[name][k] = s
		}
	}
	b, _ := json.Marshal(out)
	return string(b)
}
