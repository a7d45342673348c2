package apierror

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

func TestFromCloud(t *testing.T) {
	own := NotFound("R", "gone")
	tests := []struct {
		name       string
		err        error
		code       int
		status     string
		reason     string
		message    string
		violations []FieldViolation
		metadata   map[string]string
	}{
		{name: "not found", err: cloud.Errorf(cloud.NotFound, "eks", "DescribeCluster", "no cluster prod"),
			code: 404, status: StatusNotFound, reason: ReasonClusterNotFound, message: "eks DescribeCluster: no cluster prod"},
		{name: "unsupported names cloudProvider", err: cloud.Errorf(cloud.Unsupported, "gke", "ListAddons", "no addons on gke"),
			code: 400, status: StatusInvalidArgument, reason: ReasonInvalidRequest, message: "not supported by this provider",
			violations: []FieldViolation{{Field: "cloudProvider", Description: "no addons on gke"}}},
		{name: "retryable", err: cloud.Errorf(cloud.Retryable, "aks", "List", "throttled"),
			code: 503, status: StatusUnavailable, reason: ReasonCloudUnavailable, message: "aks List: throttled"},
		{name: "retryable with Retry-After: its seconds rounded, plus one", err: &cloud.Error{Kind: cloud.Retryable, Provider: "ack", Op: "List", Message: "throttled", RetryAfter: 1500 * time.Millisecond},
			code: 503, status: StatusUnavailable, reason: ReasonCloudUnavailable, message: "ack List: throttled",
			metadata: map[string]string{MetadataRetryAfter: "3"}},
		{name: "retryable timeout", err: &cloud.Error{Kind: cloud.Retryable, Provider: "eks", Op: "List", Message: "timed out", Timeout: true},
			code: 504, status: StatusDeadlineExceeded, reason: ReasonUnavailable, message: "eks List: timed out"},
		{name: "wrapped classified error", err: fmt.Errorf("listing: %w", cloud.Errorf(cloud.NotFound, "mock", "", "no cluster")),
			code: 404, status: StatusNotFound, reason: ReasonClusterNotFound, message: "mock: no cluster"},
		{name: "permanent", err: cloud.Errorf(cloud.Permanent, "gke", "Get", "forbidden"),
			code: 502, status: StatusInternal, reason: ReasonCloudError, message: "gke Get: forbidden"},
		{name: "unclassified deadline", err: fmt.Errorf("list: %w", context.DeadlineExceeded),
			code: 504, status: StatusDeadlineExceeded, reason: ReasonUnavailable, message: "the cloud did not answer in time"},
		{name: "unclassified", err: errors.New("weird"),
			code: 502, status: StatusInternal, reason: ReasonCloudError, message: "the cloud provider failed: weird"},
		{name: "an API error passes through", err: fmt.Errorf("x: %w", own),
			code: 404, status: StatusNotFound, reason: "R", message: "gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			e := FromCloud(tt.err)
			g.Expect(e.Code).To(Equal(tt.code))
			g.Expect(e.Status).To(Equal(tt.status))
			g.Expect(e.Status).To(Equal(StatusForCode(tt.code)))
			g.Expect(e.Reason).To(Equal(tt.reason))
			g.Expect(e.Message).To(Equal(tt.message))
			g.Expect(e.Violations).To(Equal(tt.violations))
			g.Expect(e.Metadata).To(Equal(tt.metadata))
		})
	}

	g := NewWithT(t)
	g.Expect(FromCloud(fmt.Errorf("x: %w", own))).To(BeIdenticalTo(own))
	g.Expect(FromCloud(nil)).To(BeNil())
}

func TestFromCloudResolve(t *testing.T) {
	tests := []struct {
		name        string
		err         error
		description string
	}{
		{"not configured: the classified message", &cloud.Error{Kind: cloud.Unsupported, Provider: "gke",
			Message: `cloud provider "gke" is not configured (configured: eks)`}, `cloud provider "gke" is not configured (configured: eks)`},
		{"wrapped", fmt.Errorf("resolve: %w", cloud.Errorf(cloud.Permanent, "aks", "", "no subscriptionID configured")), "no subscriptionID configured"},
		{"unclassified: the whole error", errors.New("no registry"), "no registry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			e := FromCloudResolve(tt.err)
			g.Expect(e.Code).To(Equal(http.StatusBadRequest))
			g.Expect(e.Status).To(Equal(StatusInvalidArgument))
			g.Expect(e.Message).To(Equal("the cluster cannot be reached with this server's configuration"))
			g.Expect(e.Violations).To(Equal([]FieldViolation{{Field: "cloudProvider", Description: tt.description}}))
		})
	}
	NewWithT(t).Expect(FromCloudResolve(nil)).To(BeNil())
}

func TestFromCloudOrKubernetes(t *testing.T) {
	g := NewWithT(t)
	g.Expect(FromCloudOrKubernetes(fmt.Errorf("preflight: %w", cloud.Errorf(cloud.NotFound, "eks", "", "no cluster"))).Reason).
		To(Equal(ReasonClusterNotFound))
	kube := FromCloudOrKubernetes(apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, "n"))
	g.Expect(kube.Code).To(Equal(http.StatusNotFound))
	g.Expect(kube.Reason).To(Equal(ReasonNotFound))
	g.Expect(FromCloudOrKubernetes(context.DeadlineExceeded).Message).To(ContainSubstring("Kubernetes API server"))
	g.Expect(FromCloudOrKubernetes(nil)).To(BeNil())
}
