package watch

import (
	"bytes"
	"testing"

	. "github.com/onsi/gomega"
)

func TestEncodeEvent(t *testing.T) {
	for _, tc := range []struct {
		name, id, event, data, want string
	}{
		{"an event", "12", "ADDED", `{"a":1}`, "id: 12\nevent: ADDED\ndata: {\"a\":1}\n\n"},
		{"one data line per line", "", "X", "a\nb\r\nc\rd", "event: X\ndata: a\ndata: b\ndata: c\ndata: d\n\n"},
		{"line ends in the id and name cannot start a field", "1\nevent: evil", "A\r\nid: 9", "x", "id: 1 event: evil\nevent: A  id: 9\ndata: x\n\n"},
		{"empty data is one empty data line", "", "", "", "data: \n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var b bytes.Buffer
			g.Expect(encodeEvent(&b, tc.id, tc.event, []byte(tc.data))).To(Succeed())
			g.Expect(b.String()).To(Equal(tc.want))
		})
	}
}

func TestEncodeComment(t *testing.T) {
	g := NewWithT(t)
	var b bytes.Buffer
	g.Expect(encodeComment(&b, "heart\nbeat")).To(Succeed())
	g.Expect(b.String()).To(Equal(": heart beat\n\n"))
}
