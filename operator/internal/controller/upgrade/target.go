package upgrade

import (
	"context"
	"errors"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// The version the steps upgrade to.
//
// ACK upgrades only to its own full versions (1.30.2-aliyun.1). The REST
// API resolves a shorter targetVersion (1.30) when the request arrives; an
// operation committed to Git and applied with kubectl is resolved here, in
// the preflight, with the same function (cloud.ResolveVersion) and the
// same refusal, and the result is recorded in status.resolvedTargetVersion
// before the first step: every step then reads it, so a restarted operator
// (or a newer patch appearing in the cloud meanwhile) never resolves it
// differently.

// targetVersion is what the steps upgrade to: status.resolvedTargetVersion
// once the preflight fixed it, spec.targetVersion for an operation started
// before the field existed.
func targetVersion(op *opsv1.ClusterUpgradeOperation) string {
	if v := op.Status.ResolvedTargetVersion; v != "" {
		return v
	}
	return op.Spec.TargetVersion
}

// resolveTargetVersion returns the version the operation upgrades to: the
// recorded one, spec.targetVersion for a provider that takes it as it is,
// or the full version it resolves to for a cloud.VersionLister. A version
// the cloud does not offer the cluster is refused with refusal (the REST
// API's words, prefixed by the field); a failed listing is the cloud's
// error.
func resolveTargetVersion(ctx context.Context, p cloud.Provider, ref cloud.ClusterRef, op *opsv1.ClusterUpgradeOperation) (version, refusal string, err error) {
	if v := op.Status.ResolvedTargetVersion; v != "" {
		return v, "", nil
	}
	spec := &op.Spec
	lister, ok := p.(cloud.VersionLister)
	if !ok {
		return spec.TargetVersion, "", nil
	}
	resolved, err := cloud.ResolveVersion(ctx, lister, ref, spec.TargetVersion)
	var unavailable *cloud.UnavailableVersionError
	switch {
	case errors.As(err, &unavailable):
		return "", "targetVersion: " + unavailable.Message(string(spec.CloudProvider), spec.K8sClusterName, spec.Region), nil
	case err != nil:
		return "", "", err
	}
	return resolved, "", nil
}
