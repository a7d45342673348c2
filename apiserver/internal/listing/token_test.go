package listing

import (
	"encoding/base64"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

type cursor struct {
	Name    string `json:"n"`
	Created int64  `json:"c"`
}

func TestRoundTrip(t *testing.T) {
	g := NewWithT(t)
	var got cursor
	g.Expect(Decode(Encode(cursor{Name: "a", Created: 7}), &got)).To(Succeed())
	g.Expect(got).To(Equal(cursor{Name: "a", Created: 7}))
}

func TestInvalid(t *testing.T) {
	b64 := base64.RawURLEncoding.EncodeToString
	for name, tok := range map[string]string{
		"not base64":    "%%%",
		"not JSON":      b64([]byte("nope")),
		"unknown field": b64([]byte(`{"n":"a","x":1}`)),
		"two values":    b64([]byte(`{"n":"a"}{"n":"b"}`)),
		"wrong type":    b64([]byte(`{"n":1}`)),
		"too long":      strings.Repeat("A", 600),
		"a JSON array":  b64([]byte(`["a"]`)),
	} {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(Decode(tok, &cursor{})).To(MatchError(ErrInvalid))
		})
	}
}
