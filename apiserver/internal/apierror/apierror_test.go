package apierror

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestFromKubernetes(t *testing.T) {
	gr := schema.GroupResource{Group: "helm.toolkit.fluxcd.io", Resource: "helmreleases"}
	tests := []struct {
		name   string
		err    error
		code   int
		status string
	}{
		{"not found", apierrors.NewNotFound(gr, "x"), 404, StatusNotFound},
		{"already exists", apierrors.NewAlreadyExists(gr, "x"), 409, StatusAlreadyExists},
		{"conflict", apierrors.NewConflict(gr, "x", errors.New("changed")), 409, StatusAborted},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "HelmRelease"}, "x",
			field.ErrorList{field.Invalid(field.NewPath("spec", "releaseName"), "x", "too long")}), 400, StatusInvalidArgument},
		{"forbidden is ours, not the caller's", apierrors.NewForbidden(gr, "x", errors.New("no")), 500, StatusInternal},
		{"server timeout", apierrors.NewServerTimeout(gr, "create", 1), 504, StatusDeadlineExceeded},
		{"deadline", fmt.Errorf("get: %w", context.DeadlineExceeded), 504, StatusDeadlineExceeded},
		{"too many requests", apierrors.NewTooManyRequests("slow down", 1), 503, StatusUnavailable},
		{"connection refused", &net.OpError{Op: "dial", Err: errors.New("refused")}, 503, StatusUnavailable},
		{"anything else", errors.New("weird"), 500, StatusInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			e := FromKubernetes(fmt.Errorf("wrapped: %w", tt.err))
			g.Expect(e.Code).To(Equal(tt.code))
			g.Expect(e.Status).To(Equal(tt.status))
			g.Expect(errors.Unwrap(e)).NotTo(BeNil(), "the cause is kept for the logs")
			g.Expect(e.ToBody("").Error.Message).NotTo(ContainSubstring("wrapped"))
		})
	}

	g := NewWithT(t)
	e := FromKubernetes(apierrors.NewInvalid(schema.GroupKind{Kind: "HelmRelease"}, "x",
		field.ErrorList{field.Invalid(field.NewPath("spec", "releaseName"), "x", "too long")}))
	g.Expect(e.Violations).To(ConsistOf(HaveField("Field", "spec.releaseName")))

	own := NotFound("R", "gone")
	g.Expect(FromKubernetes(fmt.Errorf("x: %w", own))).To(BeIdenticalTo(own))
	g.Expect(FromKubernetes(nil)).To(BeNil())
}

func TestToBody(t *testing.T) {
	g := NewWithT(t)
	b := InvalidArgument("bad", Violation("name", "too %s", "long")).WithMetadata("k", "v").ToBody("rid")
	g.Expect(b.Error.Code).To(Equal(400))
	g.Expect(b.Error.Details).To(Equal([]Detail{
		{Type: TypeErrorInfo, Reason: ReasonInvalidRequest, Domain: Domain, Metadata: map[string]string{"k": "v"}},
		{Type: TypeBadRequest, FieldViolations: []FieldViolation{{Field: "name", Description: "too long"}}},
		{Type: TypeRequestInfo, RequestID: "rid"},
	}))
	g.Expect(Internal(errors.New("secret")).ToBody("").Error.Message).To(Equal("internal error"))
}
