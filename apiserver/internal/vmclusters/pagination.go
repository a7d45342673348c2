package vmclusters

import (
	"net/url"
	"slices"
	"strings"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/pagetoken"
	"github.com/tidbcloud/ops-server/apiserver/internal/watch"
)

// WatchViolations are the page and resume parameters of q that do not go
// with watch (the lists with page_size, page_token and resource_version:
// vmclusters, backups).
func WatchViolations(q url.Values, watch bool) []apierror.FieldViolation {
	var v []apierror.FieldViolation
	for _, k := range []string{"page_size", "page_token"} {
		if watch && q.Has(k) {
			v = append(v, apierror.Violation(k, "a watch has no pages; not allowed with watch=true"))
		}
	}
	if !watch && q.Has(ParamResourceVersion) {
		v = append(v, apierror.Violation(ParamResourceVersion, "resumes a watch; only allowed with watch=true"))
	}
	return v
}

// pageToken is the cursor of a page token (see package pagetoken): the
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
	return pagetoken.Encode(pageToken{Version: pageTokenVersion, After: after, Status: status})
}

// DecodePageToken returns the name a token starts after. The token must
// have been issued for the same status filter.
func DecodePageToken(token string, status Status) (string, error) {
	var t pageToken
	if err := pagetoken.Decode(token, &t); err != nil {
		return "", err
	}
	if t.Version != pageTokenVersion || len(ValidateName(t.After)) > 0 || t.Status != status {
		return "", pagetoken.ErrInvalid
	}
	return t.After, nil
}

// ParseList validates the list query: page_size (0..1000, 0 means 50),
// page_token, status, watch (then resource_version, and no page). Other
// parameters are ignored.
func ParseList(q url.Values) (ListRequest, *apierror.Error) {
	req := ListRequest{PageSize: pagetoken.DefaultPageSize}
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
	if size, problem := pagetoken.ParseSize(q.Get("page_size")); problem != "" {
		violations = append(violations, apierror.Violation("page_size", "%s", problem))
	} else {
		req.PageSize = size
	}
	if tok := q.Get("page_token"); tok != "" {
		after, err := DecodePageToken(tok, req.Status)
		if err != nil {
			violations = append(violations, apierror.Violation("page_token", "%v", err))
		}
		req.After = after
	}
	w, wv := watch.ParseWatch(q)
	if wv != nil {
		violations = append(violations, *wv)
	}
	req.Watch = w
	violations = append(violations, WatchViolations(q, w)...)
	if len(violations) > 0 {
		return ListRequest{}, apierror.InvalidArgument("the list request is invalid", violations...)
	}
	return req, nil
}

// Paginate returns one page of items (already filtered) in name order and
// the token of the next page ("" on the last page). name gives the sort
// key of an item; names are unique. items is left as it was.
//
// The page is the page-size smallest names after the cursor, kept in a
// bounded max-heap in one pass: sorting every item on every request was
// most of the cost of listing a thousand vmclusters.
func Paginate[T any](items []T, name func(T) string, req ListRequest) ([]T, string) {
	size := req.PageSize
	if size <= 0 {
		size = pagetoken.DefaultPageSize
	}
	h := maxHeap[T]{name: name, items: make([]T, 0, min(size, len(items)))}
	more := false
	for _, it := range items {
		n := name(it)
		if n <= req.After {
			continue
		}
		switch {
		case len(h.items) < size:
			h.push(it)
		case n < name(h.items[0]):
			h.items[0] = it
			h.down(0)
			more = true
		default:
			more = true
		}
	}
	page := h.items
	slices.SortFunc(page, func(a, b T) int { return strings.Compare(name(a), name(b)) })
	if more && len(page) > 0 {
		return page, EncodePageToken(name(page[len(page)-1]), req.Status)
	}
	return page, ""
}

// maxHeap is a binary heap with the greatest name at the root.
type maxHeap[T any] struct {
	name  func(T) string
	items []T
}

func (h *maxHeap[T]) less(i, j int) bool { return h.name(h.items[i]) < h.name(h.items[j]) }

func (h *maxHeap[T]) push(it T) {
	h.items = append(h.items, it)
	for i := len(h.items) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(p, i) {
			break
		}
		h.items[p], h.items[i] = h.items[i], h.items[p]
		i = p
	}
}

func (h *maxHeap[T]) down(i int) {
	for {
		l, big := 2*i+1, i
		if l < len(h.items) && h.less(big, l) {
			big = l
		}
		if r := l + 1; r < len(h.items) && h.less(big, r) {
			big = r
		}
		if big == i {
			return
		}
		h.items[i], h.items[big] = h.items[big], h.items[i]
		i = big
	}
}
