package vmclusters

import (
	"net/url"
	"strings"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/listing"
	"github.com/tidbcloud/ops-server/apiserver/internal/watch"
)

// pageToken is the cursor of a page token (see package listing): the
// name the next page starts after (vmclusters are listed by name), and the
// filter the token belongs to. It is only a cursor, so deletions and
// creations between pages never cause a gap or a repeat among the
// vmclusters that exist throughout.
type pageToken struct {
	Version int    `json:"v"`
	After   string `json:"a"`
	Status  Status `json:"s,omitempty"`
}

const pageTokenVersion = 1

// EncodePageToken returns the token of the page after the name after.
func EncodePageToken(after string, status Status) string {
	return listing.Encode(pageToken{Version: pageTokenVersion, After: after, Status: status})
}

// DecodePageToken returns the name a token starts after. The token must
// have been issued for the same status filter.
func DecodePageToken(token string, status Status) (string, error) {
	var t pageToken
	if err := listing.Decode(token, &t); err != nil {
		return "", err
	}
	if t.Version != pageTokenVersion || len(ValidateName(t.After)) > 0 || t.Status != status {
		return "", listing.ErrInvalid
	}
	return t.After, nil
}

// ParseList validates the list query: page_size (0..1000, 0 means 50),
// page_token, status, watch (then resource_version, and no page). Other
// parameters are ignored.
func ParseList(q url.Values) (ListRequest, *apierror.Error) {
	req := ListRequest{PageSize: listing.DefaultPageSize}
	var violations []apierror.FieldViolation
	if s := q.Get("status"); s != "" {
		st := Status(strings.ToUpper(s))
		valid := false
		for _, known := range Statuses {
			valid = valid || st == known
		}
		if valid {
			req.Status = st
		} else {
			violations = append(violations, apierror.Violation("status", "must be one of CREATING, RUNNING, UPDATING, FAILED, DELETING"))
		}
	}
	size, pv := listing.SnakeCase.Parse(q, func(tok string) (err error) {
		req.After, err = DecodePageToken(tok, req.Status)
		return err
	})
	req.PageSize = size
	violations = append(violations, pv...)
	w, wv := watch.ParseWatch(q)
	if wv != nil {
		violations = append(violations, *wv)
	}
	req.Watch = w
	violations = append(violations, listing.SnakeCase.WatchViolations(q, w)...)
	if len(violations) > 0 {
		return ListRequest{}, apierror.InvalidArgument("the list request is invalid", violations...)
	}
	return req, nil
}
