package outcome_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tidbcloud/ops-server/operator/internal/outcome"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

func TestClassify(t *testing.T) {
	throttled := cloud.Errorf(cloud.Retryable, cloud.EKS, "UpdateNodegroupVersion", "throttled")
	throttled.RetryAfter = 7 * time.Second
	for _, tc := range []struct {
		name string
		err  error
		want outcome.Outcome
	}{
		{"nil", nil, outcome.Outcome{}},
		{"cloud permanent", cloud.Errorf(cloud.Permanent, cloud.EKS, "Op", "bad request"), outcome.Outcome{Terminal: true, Cloud: true}},
		{"cloud not found, wrapped", fmt.Errorf("step: %w", cloud.Errorf(cloud.NotFound, cloud.GKE, "Op", "no such pool")), outcome.Outcome{Terminal: true, Cloud: true}},
		{"cloud unsupported", cloud.Errorf(cloud.Unsupported, cloud.AKS, "Op", "no addons"), outcome.Outcome{Terminal: true, Cloud: true}},
		{"cloud retryable with a hint", throttled, outcome.Outcome{RequeueAfter: 7 * time.Second, Cloud: true}},
		{"terminal (a spec that can never succeed)", outcome.Terminal(errors.New("invalid spec")), outcome.Outcome{Terminal: true}},
		{"terminal, wrapped", fmt.Errorf("x: %w", outcome.Terminal(errors.New("invalid spec"))), outcome.Outcome{Terminal: true}},
		{"k8s timeout", apierrors.NewTimeoutError("timeout", 1), outcome.Outcome{}},
		{"k8s 503", apierrors.NewServiceUnavailable("down"), outcome.Outcome{}},
		{"k8s 429", apierrors.NewTooManyRequests("slow", 1), outcome.Outcome{}},
		{"k8s conflict", apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "n", errors.New("modified")), outcome.Outcome{}},
		{"k8s forbidden", apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "n", errors.New("RBAC")), outcome.Outcome{}},
		{"etcd leader change", apierrors.NewInternalError(errors.New("etcdserver: leader changed")), outcome.Outcome{}},
		{"connection refused", &url.Error{Op: "Get", URL: "https://127.0.0.1:6443", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}, outcome.Outcome{}},
		{"context deadline", fmt.Errorf("list: %w", context.DeadlineExceeded), outcome.Outcome{}},
		{"unknown", errors.New("boom"), outcome.Outcome{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(outcome.Classify(tc.err)).To(Equal(tc.want))
			g.Expect(outcome.IsTerminal(tc.err)).To(Equal(tc.want.Terminal))
		})
	}
	NewWithT(t).Expect(outcome.Terminal(nil)).To(BeNil())
}
