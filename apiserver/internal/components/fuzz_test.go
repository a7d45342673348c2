package components

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
)

// FuzzDecode feeds arbitrary bodies and Idempotency-Keys to the decoders:
// never a panic; a rejection is a 400 with at least one field violation;
// an accepted create has a valid name, a valid namespace (if any) and
// canonical object values, and translates into a HelmRelease of that name
// which only components (not vmclusters) see.
func FuzzDecode(f *testing.F) {
	f.Add(`{"name":"vmagent","chart":"vmagent"}`, "")
	f.Add(`{"name":"components/a","chart":"vector","version":"1.2.3","namespace":"logging","values":{"b":1e3,"a":[true,null]}}`, "key")
	f.Add(`{"name":"a","chart":"c","values":{"x":1e999}}`, "")
	f.Add(`{"values":{}}`, "")
	f.Add(`[]`, "")
	f.Add(`{"name":"a","chart":"c"} {}`, "")
	tr := vmclusters.Translator{Namespace: "observability", Chart: vmclusters.ChartSource{Name: "c", DefaultVersion: "1.0.0"}, Flux: config.Default().Flux}
	f.Fuzz(func(t *testing.T, body, key string) {
		req, err := DecodeCreate([]byte(body), key)
		if err != nil {
			if err.Code != 400 || len(err.Violations) == 0 {
				t.Fatalf("rejection without a field violation: %+v", err)
			}
		} else {
			if problems := vmclusters.ValidateName(req.Name); len(problems) > 0 {
				t.Fatalf("accepted name %q: %v", req.Name, problems)
			}
			if req.Namespace != "" && len(validation.IsDNS1123Label(req.Namespace)) > 0 {
				t.Fatalf("accepted namespace %q", req.Namespace)
			}
			var m map[string]any
			if json.Unmarshal(req.Values, &m) != nil || m == nil {
				t.Fatalf("accepted values are not a JSON object: %s", req.Values)
			}
			hr := Release(tr, req, "observability", time.Unix(0, 0))
			if hr.Name != req.Name || !IsManaged(hr) || vmclusters.IsManaged(hr) {
				t.Fatalf("release of %q: %+v", req.Name, hr.ObjectMeta)
			}
		}
		if _, err := DecodeUpdate([]byte(body)); err != nil && len(err.Violations) == 0 {
			t.Fatalf("update rejection without a field violation: %+v", err)
		}
	})
}
