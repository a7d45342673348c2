package vmclusters

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestRetentionHours(t *testing.T) {
	cases := []struct {
		name string
		in   any
		want float64
		bad  bool
	}{
		{name: "months as a string", in: "1", want: 31 * 24},
		{name: "fractional months", in: "0.5", want: 31 * 12},
		{name: "months as a JSON number", in: jsonNumber("3"), want: 3 * 31 * 24},
		{name: "months as a float", in: float64(2), want: 2 * 31 * 24},
		{name: "hours", in: "36h", want: 36},
		{name: "days", in: "10d", want: 240},
		{name: "weeks", in: "2w", want: 336},
		{name: "years", in: "1y", want: 365 * 24},
		{name: "spaces", in: " 2w ", want: 336},
		{name: "minutes are ambiguous", in: "1m", bad: true},
		{name: "unknown unit", in: "1x", bad: true},
		{name: "negative", in: "-1", bad: true},
		{name: "empty", in: "", bad: true},
		{name: "a map", in: map[string]any{}, bad: true},
		{name: "a bool", in: true, bad: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := RetentionHours(tc.in)
			if tc.bad {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(BeNumerically("~", tc.want, 1e-9))
		})
	}
}

func values(t *testing.T, raw string) map[string]any {
	t.Helper()
	m, err := DecodeValues([]byte(raw))
	if err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	return m
}

func TestCheckDataLoss(t *testing.T) {
	defaults := FallbackDefaults()
	// oldChart is the chart before the storage default: no storage keys.
	oldChart := map[string]any{"retentionPeriod": "1", "vmstorage": map[string]any{"storage": map[string]any{}}}
	cases := []struct {
		name       string
		old, new   string
		oldDefault map[string]any
		allow      bool
		// fields are the fields of the expected violations, in order.
		fields []string
	}{
		{name: "no change", old: `{}`, new: `{}`},
		{name: "longer retention", old: `{"retentionPeriod":"1"}`, new: `{"retentionPeriod":"2"}`},
		{name: "same retention, other unit", old: `{"retentionPeriod":"1"}`, new: `{"retentionPeriod":"31d"}`},
		{name: "shorter retention", old: `{"retentionPeriod":"3"}`, new: `{"retentionPeriod":"2w"}`, fields: []string{"values.retentionPeriod"}},
		{name: "shorter retention allowed", old: `{"retentionPeriod":"3"}`, new: `{"retentionPeriod":"2w"}`, allow: true},
		{name: "retention dropped falls back to a shorter default", old: `{"retentionPeriod":"1y"}`, new: `{}`, fields: []string{"values.retentionPeriod"}},
		{name: "retention null falls back to VictoriaMetrics' month", old: `{"retentionPeriod":"1y"}`, new: `{"retentionPeriod":null}`, fields: []string{"values.retentionPeriod"}},
		{name: "retention null to a month", old: `{"retentionPeriod":"1"}`, new: `{"retentionPeriod":null}`},
		{name: "retention unparsable", old: `{}`, new: `{"retentionPeriod":"forever"}`, allow: true, fields: []string{"values.retentionPeriod"}},
		{name: "old retention unparsable is not compared", old: `{"retentionPeriod":"forever"}`, new: `{"retentionPeriod":"1d"}`},
		{name: "to emptyDir", old: `{}`, new: `{"vmstorage":{"storage":{"emptyDir":true}}}`, fields: []string{"values.vmstorage.storage.emptyDir"}},
		{name: "to emptyDir allowed", old: `{}`, new: `{"vmstorage":{"storage":{"emptyDir":true}}}`, allow: true},
		{name: "the string false is true to Helm", old: `{}`, new: `{"vmstorage":{"storage":{"emptyDir":"false"}}}`, fields: []string{"values.vmstorage.storage.emptyDir"}},
		{name: "from emptyDir to a PVC", old: `{"vmstorage":{"storage":{"emptyDir":true}}}`, new: `{}`},
		{name: "emptyDir stays", old: `{"vmstorage":{"storage":{"emptyDir":true,"size":"50Gi"}}}`, new: `{"vmstorage":{"storage":{"emptyDir":true,"size":"1Gi"}}}`},
		{name: "grow", old: `{"vmstorage":{"storage":{"size":"10Gi"}}}`, new: `{"vmstorage":{"storage":{"size":"20Gi"}}}`},
		{name: "same size, other notation", old: `{"vmstorage":{"storage":{"size":"1Gi"}}}`, new: `{"vmstorage":{"storage":{"size":"1024Mi"}}}`},
		{name: "shrink", old: `{"vmstorage":{"storage":{"size":"50Gi"}}}`, new: `{"vmstorage":{"storage":{"size":"20Gi"}}}`, fields: []string{"values.vmstorage.storage.size"}},
		{name: "shrink is refused even when allowed", old: `{"vmstorage":{"storage":{"size":"50Gi"}}}`, new: `{"vmstorage":{"storage":{"size":"20Gi"}}}`, allow: true, fields: []string{"values.vmstorage.storage.size"}},
		{name: "size dropped falls back to a smaller default", old: `{"vmstorage":{"storage":{"size":"50Gi"}}}`, new: `{"vmstorage":{}}`, fields: []string{"values.vmstorage.storage.size"}},
		{name: "storage replaced by a scalar", old: `{"vmstorage":{"storage":{"size":"50Gi"}}}`, new: `{"vmstorage":{"storage":"x"}}`},
		{name: "size not a quantity", old: `{}`, new: `{"vmstorage":{"storage":{"size":"big"}}}`, fields: []string{"values.vmstorage.storage.size"}},
		{name: "other storage class", old: `{"vmstorage":{"storage":{"storageClassName":"a"}}}`, new: `{"vmstorage":{"storage":{"storageClassName":"b"}}}`, allow: true, fields: []string{"values.vmstorage.storage.storageClassName"}},
		{name: "storage class set on the default class", old: `{}`, new: `{"vmstorage":{"storage":{"storageClassName":"fast"}}}`, fields: []string{"values.vmstorage.storage.storageClassName"}},
		{name: "storage class dropped", old: `{"vmstorage":{"storage":{"storageClassName":"fast"}}}`, new: `{}`, fields: []string{"values.vmstorage.storage.storageClassName"}},
		{name: "storage class with emptyDir before", old: `{"vmstorage":{"storage":{"emptyDir":true}}}`, new: `{"vmstorage":{"storage":{"storageClassName":"fast"}}}`},
		{name: "everything at once", old: `{"retentionPeriod":"1y","vmstorage":{"storage":{"size":"50Gi"}}}`, new: `{"retentionPeriod":"1d","vmstorage":{"storage":{"emptyDir":true}}}`,
			fields: []string{"values.vmstorage.storage.emptyDir", "values.retentionPeriod"}},
		{name: "old chart without storage keys to the new defaults", old: `{}`, oldDefault: oldChart, new: `{}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			od := defaults
			if tc.oldDefault != nil {
				od = tc.oldDefault
			}
			got := CheckDataLoss(Effective{Values: values(t, tc.old), Defaults: od}, Effective{Values: values(t, tc.new), Defaults: defaults}, tc.allow)
			fields := []string{}
			for _, v := range got {
				fields = append(fields, v.Field)
				g.Expect(v.Description).NotTo(BeEmpty())
			}
			if tc.fields == nil {
				tc.fields = []string{}
			}
			g.Expect(fields).To(Equal(tc.fields), "%v", got)
		})
	}
}

func FuzzCheckDataLoss(f *testing.F) {
	f.Add([]byte(`{"retentionPeriod":"3","vmstorage":{"storage":{"size":"50Gi"}}}`), []byte(`{"retentionPeriod":"2w"}`), false)
	f.Add([]byte(`{}`), []byte(`{"vmstorage":{"storage":{"emptyDir":true,"storageClassName":"x"}}}`), true)
	f.Add([]byte(`{"vmstorage":"x"}`), []byte(`{"vmstorage":{"storage":null}}`), false)
	f.Fuzz(func(t *testing.T, oldRaw, newRaw []byte, allow bool) {
		old, err := DecodeValues(oldRaw)
		if err != nil {
			return
		}
		nv, err := DecodeValues(newRaw)
		if err != nil {
			return
		}
		d := FallbackDefaults()
		got := CheckDataLoss(Effective{Values: old, Defaults: d}, Effective{Values: nv, Defaults: d}, allow)
		seen := map[string]bool{}
		for _, v := range got {
			if seen[v.Field] {
				t.Fatalf("two violations for %s: %v", v.Field, got)
			}
			seen[v.Field] = true
		}
		// The same values are never a loss (unless they cannot be read).
		same := CheckDataLoss(Effective{Values: old, Defaults: d}, Effective{Values: old, Defaults: d}, false)
		for _, v := range same {
			if v.Field != "values.retentionPeriod" && v.Field != "values.vmstorage.storage.size" {
				t.Fatalf("no change refused: %v", same)
			}
		}
	})
}
