package upgrade

import (
	"context"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/preflight"
)

// runPreflight makes the checks of package preflight — the same ones
// POST /ops/api/v1/upgradeOperations/preflight answers with — and records
// the report in status.preflight: a fail ends the operation before any
// change, warnings stay in the report. Every call is a read; the
// Kubernetes reads go to the API server (uncached).
func (r *Reconciler) runPreflight(ctx context.Context, s *scope, target string) (*opsv1.PreflightReport, error) {
	rep, err := preflight.Run(ctx, preflight.Input{
		Spec: &s.op.Spec, Target: target, Provider: s.provider, Ref: s.ref,
		Kube: r.APIReader, HelmNamespaces: preflight.DefaultHelmNamespaces, Now: r.Now(),
	})
	if err != nil {
		return nil, err
	}
	s.op.Status.Preflight = rep
	return rep, nil
}
