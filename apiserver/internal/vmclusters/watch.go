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

// Watcher is implemented by an Operations that streams the list's
// changes (*Service with a Watch hub).
type Watcher interface {
	// WatchStream returns the hub and the stream of the list query req.
	WatchStream(req ListRequest) (*watch.Hub, watch.Stream)
}

// WatchStream implements Watcher: the managed HelmReleases the list
// query selects, in the list's view (without values).
func (s *Service) WatchStream(req ListRequest) (*watch.Hub, watch.Stream) {
	return s.Watch, watch.Stream{
		Match: func(o client.Object) bool {
			hr, ok := o.(*helmv2.HelmRelease)
			return ok && IsManaged(hr) && (req.Status == "" || StatusOf(hr).Status == req.Status)
		},
		View: func(o client.Object) any { return s.Translator.View(o.(*helmv2.HelmRelease), false) },
	}
}

// watchStream streams the vmclusters the list query req selects
// (docs/apiserver.md, "Watch streams").
func (h *Handler) watchStream(c echo.Context, req ListRequest) error {
	since, resumed, v := watch.ParseResume(c.Request(), ParamResourceVersion)
	if v != nil {
		return apierror.InvalidArgument("the watch request is invalid", *v)
	}
	w, ok := h.Ops.(Watcher)
	if !ok {
		return apierror.Unavailable("watch streams are not available on this server")
	}
	hub, s := w.WatchStream(req)
	s.Since, s.Resumed = since, resumed
	return hub.Serve(c, s)
}
