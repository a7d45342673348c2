package vmclusters

import (
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/labstack/echo/v4"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/watch"
)

// ParamResourceVersion resumes a watch (like the Last-Event-ID header).
const ParamResourceVersion = "resource_version"

// watchStream streams the vmclusters the list query req selects, in the
// list's view (without values) (docs/apiserver.md, "Watch streams").
func (h *Handler) watchStream(c echo.Context, req ListRequest) error {
	since, resumed, v := watch.ParseResume(c.Request(), ParamResourceVersion)
	if v != nil {
		return apierror.InvalidArgument("the watch request is invalid", *v)
	}
	var hub *watch.Hub
	if h.Svc != nil {
		hub = h.Svc.Watch
	}
	return hub.Serve(c, watch.Stream{
		Match: func(o client.Object) bool {
			hr, ok := o.(*helmv2.HelmRelease)
			return ok && IsManaged(hr) && (req.Status == "" || StatusOf(hr).Status == req.Status)
		},
		View:  func(o client.Object) any { return h.Svc.Translator.View(o.(*helmv2.HelmRelease), false) },
		Since: since, Resumed: resumed,
	})
}
