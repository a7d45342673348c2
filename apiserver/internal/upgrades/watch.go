package upgrades

import (
	"github.com/labstack/echo/v4"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/watch"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// ParamResourceVersion resumes a watch (like the Last-Event-ID header).
const ParamResourceVersion = "resourceVersion"

// watchStream streams the operations the list query req selects
// (docs/apiserver.md, "Watch streams").
func (h *Handler) watchStream(c echo.Context, req ListRequest) error {
	since, resumed, v := watch.ParseResume(c.Request(), ParamResourceVersion)
	if v != nil {
		return apierror.InvalidArgument("invalid watch request", *v)
	}
	var hub *watch.Hub
	if h.Svc != nil {
		hub = h.Svc.Watch
	}
	return hub.Serve(c, watch.Stream{
		Match: func(o client.Object) bool {
			op, ok := o.(*opsv1.ClusterUpgradeOperation)
			return ok && matches(op, req)
		},
		View:  func(o client.Object) any { return toOperation(o.(*opsv1.ClusterUpgradeOperation)) },
		Since: since, Resumed: resumed,
	})
}

// matches reports whether the list query req selects o.
func matches(o *opsv1.ClusterUpgradeOperation, req ListRequest) bool {
	if req.K8sClusterName != "" && o.Spec.K8sClusterName != req.K8sClusterName {
		return false
	}
	phase := string(o.Status.Phase)
	if phase == "" {
		phase = string(opsv1.UpgradePhasePending)
	}
	return req.Status == "" || phase == req.Status
}
