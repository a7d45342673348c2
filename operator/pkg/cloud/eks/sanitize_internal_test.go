package eks

import (
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestSanitize(t *testing.T) {
	cases := []struct {
		name, in  string
		mustNot   []string
		mustStill []string
	}{
		{name: "query string", in: "GET https://api.example.com/v1/x?api-version=1&sig=abc123 failed",
			mustNot: []string{"sig=abc123", "api-version"}, mustStill: []string{"https://api.example.com/v1/x", "failed"}},
		{name: "user info", in: "dial https://user:hunter2@host.example.com/path", mustNot: []string{"hunter2"}, mustStill: []string{"host.example.com/path"}},
		{name: "bearer token", in: "Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.payload.sig", mustNot: []string{"eyJhbGciOiJSUzI1NiJ9"}},
		{name: "key=value secrets", in: "password=hunter2 token: abc.def secret=\"s3cr3t\"", mustNot: []string{"hunter2", "abc.def", "s3cr3t"}},
		{name: "plain message", in: "node group ng-a is UPDATING", mustStill: []string{"node group ng-a is UPDATING"}},
		{name: "long message", in: strings.Repeat("x", 5000)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			out := sanitize(tc.in)
			for _, s := range tc.mustNot {
				g.Expect(out).NotTo(ContainSubstring(s))
			}
			for _, s := range tc.mustStill {
				g.Expect(out).To(ContainSubstring(s))
			}
			g.Expect(len(out)).To(BeNumerically("<=", cloud.MaxMessage+len("…")))
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
	}{
		{"", 0}, {"5", 5 * time.Second}, {"0.5", 500 * time.Millisecond}, {"-1", 0}, {"soon", 0},
		{"Tue, 01 Dec 2026 10:00:30 GMT", 30 * time.Second}, {"Tue, 01 Dec 2026 09:00:00 GMT", 0},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			NewWithT(t).Expect(parseRetryAfter(tc.in, now)).To(Equal(tc.want))
		})
	}
}
