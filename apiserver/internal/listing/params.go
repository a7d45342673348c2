package listing

import (
	"fmt"
	"net/url"
	"strconv"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
)

// Params are the names of a list's page parameters, and of the parameter
// that resumes its watch.
type Params struct {
	Size, Token, ResourceVersion string
}

// The page parameters of the lists: snake case, and camelCase for the
// upgrade operations.
var (
	SnakeCase = Params{Size: "page_size", Token: "page_token", ResourceVersion: "resource_version"}
	CamelCase = Params{Size: "pageSize", Token: "pageToken", ResourceVersion: "resourceVersion"}
)

// ParseSize parses a page size parameter: empty or 0 means
// DefaultPageSize. problem is the description of a violation ("" when s
// is valid).
func ParseSize(s string) (size int, problem string) {
	if s == "" {
		return DefaultPageSize, ""
	}
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return 0, "must be an integer"
	case n < 0 || n > MaxPageSize:
		return 0, fmt.Sprintf("must be between 0 and %d", MaxPageSize)
	case n == 0:
		return DefaultPageSize, ""
	}
	return n, ""
}

// Parse reads the page size and the page token of q. decode is called
// with the token when there is one: it decodes and checks the cursor (the
// caller's own), and its error (ErrInvalid) is a violation of the token
// parameter. size is DefaultPageSize when the size is absent, 0 or
// invalid; violations are the size's, then the token's.
func (p Params) Parse(q url.Values, decode func(token string) error) (size int, violations []apierror.FieldViolation) {
	size, problem := ParseSize(q.Get(p.Size))
	if problem != "" {
		size = DefaultPageSize
		violations = append(violations, apierror.Violation(p.Size, "%s", problem))
	}
	if tok := q.Get(p.Token); tok != "" {
		if err := decode(tok); err != nil {
			violations = append(violations, apierror.Violation(p.Token, "%v", err))
		}
	}
	return size, violations
}

// WatchViolations are the parameters of q that do not go with watch: the
// page size and token with watch=true (a watch has no pages), the resume
// point without it.
func (p Params) WatchViolations(q url.Values, watch bool) []apierror.FieldViolation {
	var v []apierror.FieldViolation
	for _, k := range []string{p.Size, p.Token} {
		if watch && q.Has(k) {
			v = append(v, apierror.Violation(k, "a watch has no pages; not allowed with watch=true"))
		}
	}
	if !watch && q.Has(p.ResourceVersion) {
		v = append(v, apierror.Violation(p.ResourceVersion, "resumes a watch; only allowed with watch=true"))
	}
	return v
}
