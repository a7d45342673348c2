// Package stacks serves GET /api/v1/observability-ops/bootstrap: the
// ObservabilityStacks of the vmcluster namespace with the status
// ops-operator reports (docs/bootstrap.md). Read live (one List per
// request): the stacks are few and small.
package stacks

import (
	"context"
	"fmt"
	"net/http"
	"sort"

	"github.com/labstack/echo/v4"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/server"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// Path is the route's path.
const Path = "/api/v1/observability-ops/bootstrap"

// Resource is the permission resource of the route (see docs/auth.md).
const Resource = "observabilitystacks"

// Handler serves the route.
type Handler struct {
	Reader    client.Reader
	Namespace string
}

// Routes implements server.API.
func (h *Handler) Routes() []server.Route {
	return []server.Route{
		{Method: http.MethodGet, Path: Path, Name: "bootstrap.get", Handler: h.get, Resource: Resource, Verb: "list"},
	}
}

// Response is the body of GET /bootstrap.
type Response struct {
	// Stacks by name.
	Stacks []Stack `json:"stacks"`
}

// Stack is one ObservabilityStack: its overall Ready condition and the
// status of each component.
type Stack struct {
	Name string `json:"name"`
	// Ready is True, False or Unknown (not reconciled yet).
	Ready   metav1.ConditionStatus `json:"ready"`
	Reason  string                 `json:"reason,omitempty"`
	Message string                 `json:"message,omitempty"`
	// UpToDate: ops-operator has applied the latest declaration.
	UpToDate         bool                    `json:"upToDate"`
	AllowDataRemoval bool                    `json:"allowDataRemoval"`
	Components       []opsv1.ComponentStatus `json:"components"`
}

func (h *Handler) get(c echo.Context) error {
	out, err := h.List(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// List reads the stacks of the namespace.
func (h *Handler) List(ctx context.Context) (Response, error) {
	var list opsv1.ObservabilityStackList
	if err := h.Reader.List(ctx, &list, client.InNamespace(h.Namespace)); err != nil {
		return Response{}, fmt.Errorf("listing the ObservabilityStacks of %s: %w", h.Namespace, err)
	}
	out := Response{Stacks: make([]Stack, 0, len(list.Items))}
	for i := range list.Items {
		out.Stacks = append(out.Stacks, FromObject(&list.Items[i]))
	}
	sort.Slice(out.Stacks, func(i, j int) bool { return out.Stacks[i].Name < out.Stacks[j].Name })
	return out, nil
}

// FromObject is the REST view of an ObservabilityStack.
func FromObject(s *opsv1.ObservabilityStack) Stack {
	st := Stack{
		Name: s.Name, Ready: metav1.ConditionUnknown, AllowDataRemoval: s.Spec.AllowDataRemoval,
		UpToDate:   s.Status.ObservedGeneration == s.Generation,
		Components: s.Status.Components,
	}
	if st.Components == nil {
		st.Components = []opsv1.ComponentStatus{}
	}
	if ready := apimeta.FindStatusCondition(s.Status.Conditions, opsv1.ReadyCondition); ready != nil {
		st.Ready, st.Reason, st.Message = ready.Status, ready.Reason, ready.Message
	}
	return st
}
