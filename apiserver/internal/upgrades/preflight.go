package upgrades

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/server"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/preflight"
)

// PreflightTimeout bounds the reads of one preflight (cloud and
// Kubernetes).
const PreflightTimeout = 60 * time.Second

// Preflight runs, for a create request, the checks ops-operator runs
// before the first step (package preflight) and returns their report; it
// creates nothing and takes no lock. The request is validated as Create
// validates it (ACK target resolved, cloud configuration, rollout
// targets): a request Create would refuse is refused with the same 4xx.
func (s *Service) Preflight(ctx context.Context, req *Request) (*opsv1.PreflightReport, error) {
	req, err := s.checkCloud(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := s.resolveTargets(ctx, req); err != nil {
		return nil, err
	}
	p, ref, err := s.resolve(ClusterQuery{CloudProvider: req.CloudProvider, K8sClusterName: req.K8sClusterName, Region: req.Region})
	if err != nil {
		return nil, err
	}
	spec := toSpec(req)
	kube := s.Live
	if kube == nil {
		kube = s.Reader
	}
	ctx, cancel := context.WithTimeout(ctx, PreflightTimeout)
	defer cancel()
	rep, err := preflight.Run(ctx, preflight.Input{Spec: &spec, Target: req.TargetVersion, Provider: p, Ref: ref,
		Kube: kube, HelmNamespaces: preflight.DefaultHelmNamespaces, Now: time.Now()})
	if err != nil {
		return nil, apierror.FromCloudOrKubernetes(err)
	}
	return rep, nil
}

func (h *Handler) preflight(c echo.Context) error {
	req, _, err := server.DecodeCreate(c, Decode)
	if err != nil {
		return err
	}
	rep, err := h.Svc.Preflight(c.Request().Context(), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rep)
}
