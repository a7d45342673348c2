package upgrades

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/auth"
	"github.com/tidbcloud/ops-server/apiserver/internal/jsonbody"
	"github.com/tidbcloud/ops-server/apiserver/internal/server"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// ApproveVerb is the permission of PUT .../approve: a verb of its own on
// upgradeoperations, so that who may start an upgrade and who may let it
// past a gate are granted apart (docs/auth.md).
const ApproveVerb = "approve"

func (h *Handler) approve(c echo.Context) error {
	body, err := server.ReadBody(c)
	if err != nil {
		return err
	}
	var req ApproveRequest
	if len(bytes.TrimSpace(body)) > 0 {
		if verr := jsonbody.Decode(body, &req); verr != nil {
			return verr
		}
	}
	op, err := h.Svc.Approve(c.Request().Context(), c.Param("id"), req.Gate)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, op)
}

// Approve adds a gate id to spec.approved, as a GitOps user does in Git:
// gate, or with gate empty the one the operation waits at
// (status.awaitingApproval). Approving an approved gate answers 200 with
// the operation; a gate the operation does not have is a 400 naming the
// ones it has; a finished or cancelled operation is a 409. The audit line
// and the Event name the approver.
func (s *Service) Approve(ctx context.Context, id, gate string) (Operation, error) {
	if len(gate) > 128 {
		return Operation{}, apierror.InvalidArgument("invalid gate", apierror.Violation("gate", "must be at most 128 characters"))
	}
	obj, err := s.find(ctx, id)
	if err != nil {
		return Operation{}, err
	}
	for attempt := 1; ; attempt++ {
		phase := obj.Status.Phase
		want := gate
		switch {
		case phase.IsTerminal():
			return Operation{}, apierror.Aborted("OPERATION_FINISHED", "upgrade operation %s is %s; a finished operation cannot be approved", obj.Name, phase)
		case obj.Spec.Cancel:
			return Operation{}, apierror.Aborted("OPERATION_CANCELLING", "upgrade operation %s is being cancelled", obj.Name)
		}
		if want == "" {
			if obj.Status.AwaitingApproval == nil {
				return Operation{}, apierror.FailedPrecondition("NOT_AWAITING_APPROVAL", "upgrade operation %s waits at no approval gate (phase %s); name the gate to approve it ahead of time", obj.Name, phase)
			}
			want = obj.Status.AwaitingApproval.Gate
		}
		gates := obj.Spec.GateIDs()
		if !oneOf(want, gates) {
			msg := "the operation has no approval gates (spec.approvals is empty)"
			if len(gates) > 0 {
				msg = "must be one of the operation's gates: " + strings.Join(gates, ", ")
			}
			return Operation{}, apierror.InvalidArgument(fmt.Sprintf("upgrade operation %s has no gate %q", obj.Name, want), apierror.Violation("gate", "%s", msg))
		}
		if obj.Spec.IsApproved(want) {
			return toOperation(obj), nil
		}
		approved := append(append([]string(nil), obj.Spec.Approved...), want)
		patch, _ := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": obj.ResourceVersion},
			"spec":     map[string]any{"approved": approved},
		})
		out := obj.DeepCopy()
		err := s.Writer.Patch(ctx, out, client.RawPatch(types.MergePatchType, patch))
		if err == nil {
			auth.RecordTarget(ctx, objectRef(out), "ApprovedThroughAPI", "Approved gate "+want)
			auth.RecordDetail(ctx, "gate", want)
			return toOperation(out), nil
		}
		if !apierrors.IsConflict(err) || attempt >= maxWriteAttempts {
			return Operation{}, apierror.FromKubernetes(err)
		}
		fresh := &opsv1.ClusterUpgradeOperation{}
		if err := s.Writer.Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
			if apierrors.IsNotFound(err) {
				return Operation{}, apierror.FromKubernetes(err)
			}
			return Operation{}, fmt.Errorf("reading upgrade operation %s again: %w", obj.Name, err)
		}
		obj = fresh
	}
}
