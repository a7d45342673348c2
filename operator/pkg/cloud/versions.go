package cloud

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Target-version resolution for providers whose upgrades take one of the
// cloud's own full versions (VersionLister: ACK). ops-apiserver resolves a
// request's targetVersion with it when the request arrives, and
// ops-operator resolves the targetVersion of an operation applied with
// kubectl with it in preflight (recorded in status.resolvedTargetVersion),
// so both paths accept, resolve and refuse the same versions with the same
// words.

// UnavailableVersionError says that a requested target version is not
// available to the cluster: a full version that is not one of Available,
// or a shorter one that is a prefix of none of them.
type UnavailableVersionError struct {
	Requested string
	// Available is sorted oldest first.
	Available []string
}

func (e *UnavailableVersionError) Error() string {
	return e.Message("", "", "")
}

// Message is the reason for a user, naming the cluster when provider is
// set: "no version matching 1.33 is available for ack cluster "prod" in
// region "cn-hangzhou"; available versions: 1.29.3-aliyun.1, …".
func (e *UnavailableVersionError) Message(provider, cluster, region string) string {
	listed := "none"
	if len(e.Available) > 0 {
		listed = strings.Join(e.Available, ", ")
	}
	what := "no version matching " + e.Requested + " is"
	if FullVersion(e.Requested) {
		what = e.Requested + " is not"
	}
	where := ""
	if provider != "" {
		where = fmt.Sprintf(" for %s cluster %q in region %q", provider, cluster, region)
	}
	return fmt.Sprintf("%s available%s; available versions: %s", what, where, listed)
}

// ResolveVersion resolves requested against the versions l lists for the
// cluster: a full version (1.31.1-aliyun.1) must be one of them, and a
// shorter one (1.30 or 1.30.1) becomes the newest one it is a prefix of
// (PickVersion). A version that is not available is an
// *UnavailableVersionError; a failed listing is the cloud's error.
func ResolveVersion(ctx context.Context, l VersionLister, ref ClusterRef, requested string) (string, error) {
	available, err := l.AvailableVersions(ctx, ref)
	if err != nil {
		return "", err
	}
	SortVersions(available)
	resolved, ok := PickVersion(requested, available)
	if !ok {
		return "", &UnavailableVersionError{Requested: requested, Available: available}
	}
	return resolved, nil
}

// PickVersion returns requested itself when it is one of available, or
// else the newest available version that requested is a prefix of at a
// component boundary (1.30 → 1.30.2-aliyun.1, 1.30.1 → 1.30.1-aliyun.2,
// never 1.3 → 1.30.x). A full version matches only itself. available is
// sorted oldest first.
func PickVersion(requested string, available []string) (string, bool) {
	for _, v := range available {
		if v == requested {
			return v, true
		}
	}
	if FullVersion(requested) {
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

// MajorMinor parses a Kubernetes version into its major and minor: 1.30,
// v1.30.2, 1.30.2-eks-…, 1.30.4-gke.1200 and 1.31.1-aliyun.1 all give 1
// and 30. It is the one parser of every provider, fake cloud, preflight
// and the upgrade reconciler.
func MajorMinor(v string) (major, minor int, ok bool) {
	v = strings.TrimPrefix(v, "v")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	mn := parts[1]
	if i := strings.IndexAny(mn, "-+"); i >= 0 {
		mn = mn[:i]
	}
	maj, err1 := strconv.Atoi(parts[0])
	m, err2 := strconv.Atoi(mn)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return maj, m, true
}

// FullVersion reports whether v carries the provider's suffix
// (1.31.1-aliyun.1): such a version names one release, not a series.
func FullVersion(v string) bool { return strings.Contains(v, "-") }

// SortVersions sorts Kubernetes versions oldest first, comparing the
// dot- or dash-separated components numerically where both are numbers
// (1.30.10-aliyun.1 after 1.30.9-aliyun.2).
func SortVersions(vs []string) {
	sort.SliceStable(vs, func(i, j int) bool { return CompareVersions(vs[i], vs[j]) < 0 })
}

// CompareVersions orders two versions as SortVersions does: -1, 0 or 1.
func CompareVersions(a, b string) int {
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
