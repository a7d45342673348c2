package listing

import (
	"net/url"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
)

// Cursor is the content of the page token of a list of a vmcluster's
// objects (backups, backup schedules, restores, operations): the position
// the next page starts after (the creation time in Unix seconds and the
// name of the last object of the page; a list by name needs the name
// only), and the vmcluster and the filter of the list it was issued for.
// It is only a position, so creations and deletions between pages never
// cause a gap or a repeat among the objects that exist throughout. The
// JSON names are the tokens' own: they never change.
type Cursor struct {
	Version   int    `json:"v"`
	Created   int64  `json:"c"`
	Name      string `json:"n"`
	VMCluster string `json:"m"`
	Filter    string `json:"f,omitempty"`
}

// cursorVersion is the version of the tokens Cursor issues.
const cursorVersion = 1

// Token is the page token of c, of this version.
func (c Cursor) Token() string {
	c.Version = cursorVersion
	return Encode(c)
}

// DecodeCursor decodes a token that Token issued. Anything else is
// ErrInvalid: what Decode refuses, another version, no vmcluster, a name
// that is not a Kubernetes object name. Whether the token was issued for
// the list requested is Check's.
func DecodeCursor(token string) (*Cursor, error) {
	var c Cursor
	if err := Decode(token, &c); err != nil {
		return nil, err
	}
	if c.Version != cursorVersion || c.Name == "" || c.VMCluster == "" || len(validation.IsDNS1123Subdomain(c.Name)) > 0 {
		return nil, ErrInvalid
	}
	return &c, nil
}

// Key is the position of the cursor in a list newest first (nil: the
// first page).
func (c *Cursor) Key() *Key {
	if c == nil {
		return nil
	}
	return &Key{Created: c.Created, Name: c.Name}
}

// Check is nil when c (nil: the first page) was issued for the list of
// vmcluster with filter ("" for a list without one), and otherwise the
// 400 of a page token of another list, on page_token as Parse's.
func (c *Cursor) Check(vmcluster, filter string) error {
	if c == nil || c.VMCluster == vmcluster && c.Filter == filter {
		return nil
	}
	return apierror.InvalidArgument("the list request is invalid", apierror.Violation(SnakeCase.Token, "%v", ErrInvalid))
}

// ParseCursor is Parse for a list whose page tokens are Cursors: the page
// size, the position the page starts after (nil: the first page) and the
// violations of both parameters.
func (p Params) ParseCursor(q url.Values) (size int, after *Cursor, violations []apierror.FieldViolation) {
	size, violations = p.Parse(q, func(token string) (err error) {
		after, err = DecodeCursor(token)
		return err
	})
	return size, after, violations
}
