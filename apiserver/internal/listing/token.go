// Package listing is what every list route of the REST API shares
// (AIP-158): the page sizes, the page parameters (snake case page_size and
// page_token, or camelCase pageSize and pageToken for the upgrade
// operations) and their rules with watch=true, page tokens that are an
// opaque base64url(JSON) cursor of the collection's own shape (Cursor, the
// one of the lists of a vmcluster's objects), and Page, the one
// paginator: a bounded heap over the collection in its order.
//
// A query parameter a route does not declare in the OpenAPI document is
// refused before any of this, by package server (openapi.QueryParameters).
package listing

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
)

// Page sizes.
const (
	DefaultPageSize = 50
	MaxPageSize     = 1000
)

// maxLength bounds a token before decoding it.
const maxLength = 512

// ErrInvalid is the answer to a token this API did not issue (or issued
// for another query); it reads as a field violation of the page token
// parameter.
var ErrInvalid = errors.New("is not a page token returned by this API for this query")

// Encode returns the token of cursor (a struct with JSON tags).
func Encode(cursor any) string {
	b, _ := json.Marshal(cursor)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Decode decodes a token into cursor, strictly: a token that is too long,
// not base64url, not exactly one JSON object or with fields cursor lacks
// is ErrInvalid. The caller checks the cursor's content.
func Decode(token string, cursor any) error {
	if len(token) > maxLength {
		return ErrInvalid
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return ErrInvalid
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(cursor); err != nil || dec.More() {
		return ErrInvalid
	}
	return nil
}
