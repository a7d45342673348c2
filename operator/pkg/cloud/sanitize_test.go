package cloud_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// TestSanitize is the one table of what every provider's messages lose:
// the credential shapes of every cloud, URL query strings and user info.
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
		{name: "AWS access key id and secret", in: "credential AKIAABCDEFGHIJKLMNOP aws_secret_access_key=wJalrXUtnFEMI/K7MDENG",
			mustNot: []string{"AKIAABCDEFGHIJKLMNOP", "wJalrXUtnFEMI"}},
		{name: "SigV4 signature", in: "X-Amz-Signature=0123456789abcdef in request", mustNot: []string{"0123456789abcdef"}, mustStill: []string{"in request"}},
		{name: "Alibaba Cloud key id and ACS3 signature", in: "ACS3-HMAC-SHA256 Credential=LTAI5tAbCdEfGh123,Signature=deadbeef AccessKeySecret: xyz987",
			mustNot: []string{"LTAI5tAbCdEfGh123", "deadbeef", "xyz987"}},
		{name: "Azure storage key", in: "DefaultEndpointsProtocol=https;AccountName=obs;AccountKey=bXlrZXk=;EndpointSuffix=core", mustNot: []string{"bXlrZXk="},
			mustStill: []string{"AccountName=obs"}},
		{name: "Azure client secret", in: `{"client_secret": "Zq8~s3cr3t"}`, mustNot: []string{"Zq8~s3cr3t"}},
		{name: "GCP service account key", in: "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY----- in key.json",
			mustNot: []string{"MIIEvQIBADANBg"}, mustStill: []string{"in key.json"}},
		{name: "plain message", in: "node group ng-a is UPDATING", mustStill: []string{"node group ng-a is UPDATING"}},
		{name: "long message", in: strings.Repeat("x", 5000)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			out := cloud.Sanitize(tc.in)
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
		{"", 0}, {"5", 5 * time.Second}, {" 5 ", 5 * time.Second}, {"0.5", 500 * time.Millisecond}, {"0", 0}, {"-1", 0}, {"soon", 0},
		{"Tue, 01 Dec 2026 10:00:30 GMT", 30 * time.Second}, {"Tue, 01 Dec 2026 09:00:00 GMT", 0},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			NewWithT(t).Expect(cloud.ParseRetryAfter(tc.in, now)).To(Equal(tc.want))
		})
	}
}

func TestIsTimeout(t *testing.T) {
	g := NewWithT(t)
	g.Expect(cloud.IsTimeout(fmt.Errorf("get: %w", timeoutError{}))).To(BeTrue())
	g.Expect(cloud.IsTimeout(&net.OpError{Op: "dial", Err: errors.New("connection refused")})).To(BeFalse())
	g.Expect(cloud.IsTimeout(context.DeadlineExceeded)).To(BeTrue(), "context.DeadlineExceeded is a net.Error that timed out")
	g.Expect(cloud.IsTimeout(errors.New("boom"))).To(BeFalse())
}
