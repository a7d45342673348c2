package backups

import (
	"github.com/labstack/echo/v4"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	"github.com/tidbcloud/ops-server/apiserver/internal/watch"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// watchStream streams the backups of the vmcluster vmclusterID
// (docs/apiserver.md, "Watch streams"); the vmcluster is resolved once,
// as the list resolves it (a deleted vmcluster's backups too).
func (h *Handler) watchStream(c echo.Context, vmclusterID string) error {
	since, resumed, v := watch.ParseResume(c.Request(), vmclusters.ParamResourceVersion)
	if v != nil {
		return apierror.InvalidArgument("the watch request is invalid", *v)
	}
	if h.Svc == nil || h.Svc.Watch == nil {
		return apierror.Unavailable("watch streams are not available on this server")
	}
	t, err := h.Svc.resolve(c.Request().Context(), vmclusterID)
	if err != nil {
		return err
	}
	return h.Svc.Watch.Serve(c, watch.Stream{
		Match: func(o client.Object) bool {
			b, ok := o.(*opsv1.ClusterBackup)
			return ok && t.owns(b)
		},
		View:  func(o client.Object) any { return toBackup(o.(*opsv1.ClusterBackup)) },
		Since: since, Resumed: resumed,
	})
}
