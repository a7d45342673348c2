package cloud_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// sdkError stands for a provider SDK's error type.
type sdkError struct {
	status int
	msg    string
}

func (e *sdkError) Error() string { return e.msg }

// classifySDK is a provider's own part: it knows sdkError only.
func classifySDK(err error, ce *cloud.Error) bool {
	var se *sdkError
	if !errors.As(err, &se) {
		return false
	}
	ce.StatusCode, ce.Kind, ce.Message = se.status, cloud.FromHTTPStatus(se.status), cloud.Sanitize(se.msg)
	ce.RetryAfter = 2 * time.Second
	return true
}

// timeoutError is a net.Error that timed out.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func TestClassify(t *testing.T) {
	already := cloud.Errorf(cloud.NotFound, cloud.EKS, "DescribeCluster", "no cluster")
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	cases := []struct {
		name       string
		err        error
		want       *cloud.Error
		same       bool // the error itself comes back
		notContain string
	}{
		{name: "an already classified error passes through", err: fmt.Errorf("calling: %w", already), same: true},
		{name: "deadline", err: fmt.Errorf("get: %w", context.DeadlineExceeded),
			want: &cloud.Error{Kind: cloud.Retryable, Timeout: true, Message: "request timed out"}},
		{name: "network timeout", err: fmt.Errorf("get: %w", timeoutError{}),
			want: &cloud.Error{Kind: cloud.Retryable, Timeout: true, Message: "request timed out"}},
		{name: "cancelled", err: fmt.Errorf("get: %w", context.Canceled),
			want: &cloud.Error{Kind: cloud.Retryable, Message: "request cancelled"}},
		{name: "the provider's own part", err: fmt.Errorf("op: %w", &sdkError{status: 429, msg: "slow down token=s3cr3t"}),
			want: &cloud.Error{Kind: cloud.Retryable, StatusCode: 429, RetryAfter: 2 * time.Second, Message: "slow down token=[redacted]"}},
		{name: "unreachable endpoint", err: fmt.Errorf("get: %w", refused),
			want: &cloud.Error{Kind: cloud.Retryable, Message: "network error: dial tcp: connect: connection refused"}},
		{name: "anything else is permanent, sanitised", err: errors.New("Get https://user:hunter2@example.com/x?sig=abc: bad"),
			want: &cloud.Error{Kind: cloud.Permanent, Message: "Get https://example.com/x bad"}, notContain: "hunter2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := cloud.Classify(cloud.GKE, "DescribeCluster", tc.err, classifySDK)
			if tc.same {
				g.Expect(got).To(BeIdenticalTo(tc.err))
				return
			}
			var ce *cloud.Error
			g.Expect(errors.As(got, &ce)).To(BeTrue())
			want := *tc.want
			want.Provider, want.Op = cloud.GKE, "DescribeCluster"
			if tc.notContain != "" {
				g.Expect(ce.Message).NotTo(ContainSubstring(tc.notContain))
			}
			g.Expect(*ce).To(Equal(want))
		})
	}
}

func TestClassifyNil(t *testing.T) {
	NewWithT(t).Expect(cloud.Classify(cloud.ACK, "PollOperation", nil, classifySDK)).To(Succeed())
}

func TestClassifyWithoutSDKPart(t *testing.T) {
	g := NewWithT(t)
	err := cloud.Classify(cloud.AKS, "ListNodeGroups", &sdkError{status: 404, msg: "gone"}, nil)
	g.Expect(cloud.KindOf(err)).To(Equal(cloud.Permanent))
	g.Expect(err.Error()).To(Equal("aks ListNodeGroups: gone"))
}
