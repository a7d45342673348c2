package cloud_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

func TestErrorKinds(t *testing.T) {
	throttled := &cloud.Error{Kind: cloud.Retryable, Provider: cloud.EKS, Op: "DescribeCluster", Message: "ThrottlingException: Rate exceeded", RetryAfter: 7 * time.Second}
	cases := []struct {
		name          string
		err           error
		kind          cloud.ErrorKind
		retryable     bool
		notFound      bool
		retryAfter    time.Duration
		resultOfCalls string
	}{
		{name: "nil", err: nil, kind: cloud.Permanent, resultOfCalls: "Success"},
		{name: "classified", err: throttled, kind: cloud.Retryable, retryable: true, retryAfter: 7 * time.Second, resultOfCalls: "Retryable"},
		{name: "wrapped classified", err: fmt.Errorf("upgrading: %w", throttled), kind: cloud.Retryable, retryable: true, retryAfter: 7 * time.Second, resultOfCalls: "Retryable"},
		{name: "not found", err: cloud.Errorf(cloud.NotFound, cloud.GKE, "ListNodeGroups", "no pool %q", "a"), kind: cloud.NotFound, notFound: true, resultOfCalls: "NotFound"},
		{name: "deadline", err: fmt.Errorf("polling: %w", context.DeadlineExceeded), kind: cloud.Retryable, retryable: true, resultOfCalls: "Error"},
		{name: "anything else", err: errors.New("boom"), kind: cloud.Permanent, resultOfCalls: "Error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			if tc.err != nil {
				g.Expect(cloud.KindOf(tc.err)).To(Equal(tc.kind))
			}
			g.Expect(cloud.IsRetryable(tc.err)).To(Equal(tc.retryable))
			g.Expect(cloud.IsNotFound(tc.err)).To(Equal(tc.notFound))
			g.Expect(cloud.RetryAfter(tc.err)).To(Equal(tc.retryAfter))
			g.Expect(cloud.CallResult(tc.err)).To(Equal(tc.resultOfCalls))
		})
	}
}

func TestErrorMessage(t *testing.T) {
	g := NewWithT(t)
	g.Expect(cloud.Errorf(cloud.Permanent, cloud.AKS, "StartNodeGroupUpgrade", "pool %q is %s", "a", "Failed").Error()).
		To(Equal(`aks StartNodeGroupUpgrade: pool "a" is Failed`))
	g.Expect((&cloud.Error{Provider: cloud.ACK, Message: "not configured"}).Error()).To(Equal("ack: not configured"))
}

func TestFromHTTPStatus(t *testing.T) {
	cases := map[int]cloud.ErrorKind{
		400: cloud.Permanent, 401: cloud.Permanent, 403: cloud.Permanent, 404: cloud.NotFound, 409: cloud.Permanent,
		429: cloud.Retryable, 500: cloud.Retryable, 502: cloud.Retryable, 503: cloud.Retryable,
	}
	for code, want := range cases {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			NewWithT(t).Expect(cloud.FromHTTPStatus(code)).To(Equal(want))
		})
	}
}
