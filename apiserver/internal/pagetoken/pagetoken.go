// Package pagetoken is the list pagination every collection of the REST
// API shares (AIP-158): the page sizes, and page tokens that are an opaque
// base64url(JSON) cursor of the collection's own shape.
package pagetoken

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Page sizes.
const (
	DefaultPageSize = 50
	MaxPageSize     = 1000
)

// maxLength bounds a token before decoding it.
const maxLength = 512

// ErrInvalid is the answer to a token this API did not issue (or issued
// for another query); it reads as a field violation of page_token.
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

// ParseSize parses a page_size parameter: empty or 0 means
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
