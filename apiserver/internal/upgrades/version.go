package upgrades

import (
	"context"
	"sort"
	"strconv"
	"strings"

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
// ACK) against the versions available to the cluster: a full version
// (1.31.1-aliyun.1) must be one of them, and a shorter one (1.30 or 1.30.1)
// becomes the newest available version it is a prefix of. It returns the
// request with the resolved target, the version written into the spec; an
// unavailable version is a 400 on targetVersion listing the available ones.
// Other providers' requests are returned as they are.
func resolveTarget(ctx context.Context, p cloud.Provider, ref cloud.ClusterRef, req *Request) (*Request, error) {
	lister, ok := p.(cloud.VersionLister)
	if !ok {
		return req, nil
	}
	ctx, cancel := context.WithTimeout(ctx, CloudTimeout)
	defer cancel()
	available, err := lister.AvailableVersions(ctx, ref)
	if err != nil {
		return nil, cloudError(err)
	}
	sortVersions(available)
	resolved, ok := pickVersion(req.TargetVersion, available)
	if !ok {
		listed := "none"
		if len(available) > 0 {
			listed = strings.Join(available, ", ")
		}
		what := "no version matching " + req.TargetVersion + " is"
		if fullVersion(req.TargetVersion) {
			what = req.TargetVersion + " is not"
		}
		return nil, apierror.InvalidArgument("the target version is not available for this cluster",
			apierror.Violation("targetVersion", "%s available for %s cluster %q in region %q; available versions: %s",
				what, req.CloudProvider, req.K8sClusterName, req.Region, listed))
	}
	if resolved == req.TargetVersion {
		return req, nil
	}
	out := *req
	out.TargetVersion, out.requestedVersion = resolved, req.TargetVersion
	return &out, nil
}

// pickVersion returns requested itself when it is one of available, or
// else the newest available version that requested is a prefix of at a
// component boundary (1.30 → 1.30.2-aliyun.1, 1.30.1 → 1.30.1-aliyun.2,
// never 1.3 → 1.30.x). A full version matches only itself. available is
// sorted oldest first.
func pickVersion(requested string, available []string) (string, bool) {
	for _, v := range available {
		if v == requested {
			return v, true
		}
	}
	if fullVersion(requested) {
		return "", false
	}
	for i := len(available) - 1; i >= 0; i-- {
		v := available[i]
		if strings.HasPrefix(v, requested+".") || strings.HasPrefix(v, requested+"-") {
			return v, true
		}
	}
	return "", false
}

// fullVersion reports whether v carries the provider's suffix
// (1.31.1-aliyun.1): such a version names one release, not a series.
func fullVersion(v string) bool { return strings.Contains(v, "-") }

// sortVersions sorts Kubernetes versions oldest first, comparing the
// dot- or dash-separated components numerically where both are numbers
// (1.30.10-aliyun.1 after 1.30.9-aliyun.2).
func sortVersions(vs []string) {
	sort.SliceStable(vs, func(i, j int) bool { return compareVersions(vs[i], vs[j]) < 0 })
}

func compareVersions(a, b string) int {
	split := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return r == '.' || r == '-' })
	}
	pa, pb := split(a), split(b)
	for i := 0; i < len(pa) && i < len(pb); i++ {
		na, errA := strconv.ParseUint(pa[i], 10, 64)
		nb, errB := strconv.ParseUint(pb[i], 10, 64)
		switch {
		case errA == nil && errB == nil:
			if na != nb {
				if na < nb {
					return -1
				}
				return 1
			}
		case errA == nil: // a number sorts before a word
			return -1
		case errB == nil:
			return 1
		default:
			if c := strings.Compare(pa[i], pb[i]); c != 0 {
				return c
			}
		}
	}
	switch {
	case len(pa) < len(pb):
		return -1
	case len(pa) > len(pb):
		return 1
	}
	return strings.Compare(a, b)
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
