package vmclusters

import (
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
)

// ETags (AIP-154; docs/vmclusters.md, "Concurrent changes").
//
// The etag of a vmcluster is derived from what clients control: the
// HelmRelease's UID and metadata.generation, which the API server bumps on
// every spec change and never on a status write. Flux writes the status of
// a release constantly; an etag derived from the resourceVersion would go
// stale between a client's GET and its PUT without anything the client
// cares about changing.
//
// The check is atomic with the write: the service patches with the
// resourceVersion of the object it checked the etag on, and on a conflict
// reads the object again and retries while the etag still matches.

// ReasonETagMismatch is the reason of a 412 Precondition Failed.
const ReasonETagMismatch = "ETAG_MISMATCH"

// ETagOf is the etag of hr: opaque, unquoted (the body's form).
func ETagOf(hr *helmv2.HelmRelease) string {
	sum := sha256.Sum256([]byte(string(hr.UID) + "/" + strconv.FormatInt(hr.Generation, 10)))
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// HeaderETag quotes an etag for the ETag header (RFC 9110).
func HeaderETag(etag string) string { return `"` + etag + `"` }

// Precondition is what a request requires of the current etag: nothing,
// any existing object (If-Match: *), or one of the listed etags.
type Precondition struct {
	Any   bool
	ETags []string
}

// IsZero reports whether the request set no precondition.
func (p Precondition) IsZero() bool { return !p.Any && len(p.ETags) == 0 }

// Matches reports whether etag satisfies p.
func (p Precondition) Matches(etag string) bool {
	if p.IsZero() || p.Any {
		return true
	}
	for _, e := range p.ETags {
		if e == etag {
			return true
		}
	}
	return false
}

// normalizeETag strips the quotes and a weak prefix, so that the body's
// form and the header's form compare equal. The etags are derived from
// the generation, which is what a weak comparison means anyway.
func normalizeETag(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "W/")
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	return s
}

// maxIfMatch bounds the If-Match header's list.
const maxIfMatch = 16

// ParseIfMatch parses the If-Match header values (RFC 9110: "*" or a list
// of entity tags) and the body's etag field (nil when absent).
func ParseIfMatch(header []string, body *string) (Precondition, *apierror.Error) {
	var p Precondition
	for _, h := range header {
		for _, part := range strings.Split(h, ",") {
			part = strings.TrimSpace(part)
			switch {
			case part == "":
				continue
			case part == "*":
				p.Any = true
				continue
			}
			e := normalizeETag(part)
			if e == "" || len(e) > 128 {
				return p, apierror.InvalidArgument("the If-Match header is invalid",
					apierror.Violation("If-Match", "must be * or a list of the etags returned by GET"))
			}
			p.ETags = append(p.ETags, e)
		}
	}
	if len(p.ETags) > maxIfMatch {
		return p, apierror.InvalidArgument("the If-Match header is invalid",
			apierror.Violation("If-Match", "must list at most %d etags", maxIfMatch))
	}
	if body != nil {
		e := normalizeETag(*body)
		if e == "" {
			return p, apierror.InvalidArgument("the request is invalid",
				apierror.Violation("etag", "must be the etag returned by GET (or absent)"))
		}
		if !p.IsZero() && !p.Matches(e) {
			return p, apierror.InvalidArgument("the request is invalid",
				apierror.Violation("etag", "differs from the If-Match header"))
		}
		if p.Any || p.IsZero() {
			p = Precondition{ETags: []string{e}}
		}
	}
	return p, nil
}
