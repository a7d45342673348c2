package upgrades

import (
	"context"
	"errors"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// AnnotationRequestedVersion records the targetVersion a request asked for
// when it was resolved to another (ACK: 1.30 → 1.30.2-aliyun.1): a retry
// with the same Idempotency-Key is the same request even if a newer patch
// has appeared since.
const AnnotationRequestedVersion = "ops.observability.tidbcloud.com/requested-target-version"

// resolveTarget resolves the target version of a request for a provider
// whose upgrades take one of the cloud's own versions (cloud.VersionLister:
// ACK) against the versions available to the cluster (cloud.ResolveVersion,
// the resolution ops-operator applies to an operation applied with kubectl
// too). It returns the request with the resolved target, the version
// written into the spec; an unavailable version is a 400 on targetVersion
// listing the available ones. Other providers' requests are returned as
// they are.
func resolveTarget(ctx context.Context, p cloud.Provider, ref cloud.ClusterRef, req *Request) (*Request, error) {
	lister, ok := p.(cloud.VersionLister)
	if !ok {
		return req, nil
	}
	ctx, cancel := context.WithTimeout(ctx, CloudTimeout)
	defer cancel()
	resolved, err := cloud.ResolveVersion(ctx, lister, ref, req.TargetVersion)
	var unavailable *cloud.UnavailableVersionError
	switch {
	case errors.As(err, &unavailable):
		return nil, apierror.InvalidArgument("the target version is not available for this cluster",
			apierror.Violation("targetVersion", "%s", unavailable.Message(req.CloudProvider, req.K8sClusterName, req.Region)))
	case err != nil:
		return nil, apierror.FromCloud(err)
	}
	if resolved == req.TargetVersion {
		return req, nil
	}
	out := *req
	out.TargetVersion, out.requestedVersion = resolved, req.TargetVersion
	return &out, nil
}

// requestedSpec is an operation's spec with the target version it was
// asked for (AnnotationRequestedVersion) rather than the one it was
// resolved to, for comparing requests.
func requestedSpec(o *opsv1.ClusterUpgradeOperation) opsv1.ClusterUpgradeOperationSpec {
	s := o.Spec
	if v := o.Annotations[AnnotationRequestedVersion]; v != "" {
		s.TargetVersion = v
	}
	return s
}
