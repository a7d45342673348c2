package restores

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestDecode(t *testing.T) {
	for name, tc := range map[string]struct {
		body   string
		fields []string
	}{
		"backup only":           {body: `{"backup":"backup-vmc-x7k2p"}`},
		"everything":            {body: `{"backup":"b","strategy":"AllAtOnce","replica_mapping":[{"replica":0,"from_replica":1}]}`},
		"empty body":            {body: ``, fields: []string{"backup"}},
		"backup not a name":     {body: `{"backup":"Backup_1"}`, fields: []string{"backup"}},
		"unknown strategy":      {body: `{"backup":"b","strategy":"Parallel"}`, fields: []string{"strategy"}},
		"mapping fields absent": {body: `{"backup":"b","replica_mapping":[{}]}`, fields: []string{"replica_mapping[0].replica", "replica_mapping[0].from_replica"}},
		"mapping out of range":  {body: `{"backup":"b","replica_mapping":[{"replica":-1,"from_replica":512}]}`, fields: []string{"replica_mapping[0].replica", "replica_mapping[0].from_replica"}},
		"a replica twice": {body: `{"backup":"b","replica_mapping":[{"replica":0,"from_replica":0},{"replica":0,"from_replica":1}]}`,
			fields: []string{"replica_mapping[1].replica"}},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			req, err := Decode([]byte(tc.body))
			if len(tc.fields) == 0 {
				g.Expect(err).To(BeNil())
				g.Expect(req).NotTo(BeNil())
				return
			}
			g.Expect(err).NotTo(BeNil())
			var got []string
			for _, v := range err.Violations {
				got = append(got, v.Field)
			}
			g.Expect(got).To(ConsistOf(tc.fields))
		})
	}
}

func TestDecodeRejectsUnknownFields(t *testing.T) {
	_, err := Decode([]byte(`{"backup":"b","target":"x"}`))
	NewWithT(t).Expect(err).NotTo(BeNil())
}
