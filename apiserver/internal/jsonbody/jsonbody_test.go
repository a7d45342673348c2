package jsonbody

import (
	"testing"

	. "github.com/onsi/gomega"
)

type body struct {
	Name  string            `json:"name"`
	Size  int               `json:"size"`
	Tags  []string          `json:"tags"`
	Inner struct{ On bool } `json:"inner"`
}

func TestDecode(t *testing.T) {
	var b body
	NewWithT(t).Expect(Decode([]byte(" {\"name\":\"a\",\"size\":2,\"tags\":[\"x\"]}\n"), &b)).To(BeNil())
	NewWithT(t).Expect(b).To(Equal(body{Name: "a", Size: 2, Tags: []string{"x"}}))

	for _, c := range []struct{ in, field, msg string }{
		{``, "body", "must be a JSON object"},
		{`[1]`, "body", "must be a JSON object"},
		{`{"name":1}`, "name", "must be a JSON string, not number"},
		{`{"size":"2"}`, "size", "must be a JSON number, not string"},
		{`{"tags":"x"}`, "tags", "must be a JSON array, not string"},
		{`{"inner":[]}`, "inner", "must be a JSON object, not array"},
		{`{"nope":1}`, "nope", "unknown field"},
		{`{"name":"a"`, "body", "malformed JSON"},
		{`{"name":"a"} {}`, "body", "unexpected data after the JSON object"},
	} {
		t.Run(c.in, func(t *testing.T) {
			g := NewWithT(t)
			err := Decode([]byte(c.in), &body{})
			g.Expect(err).NotTo(BeNil())
			g.Expect(err.Code).To(Equal(400))
			g.Expect(err.Violations).To(HaveLen(1))
			g.Expect(err.Violations[0].Field).To(Equal(c.field))
			g.Expect(err.Violations[0].Description).To(HavePrefix(c.msg))
		})
	}
}
