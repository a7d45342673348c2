// Package jsonbody decodes a request body that must be exactly one JSON
// object into a struct, strictly: malformed JSON, another JSON value,
// unknown fields, wrong JSON types and data after the object are each a
// 400 naming the field.
package jsonbody

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
)

// Decode decodes body (surrounding white space allowed) into v.
func Decode(body []byte, v any) *apierror.Error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return apierror.InvalidArgument("the request body must be a JSON object", apierror.Violation("body", "must be a JSON object"))
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return apierror.InvalidArgument("the request body must hold one JSON object", apierror.Violation("body", "unexpected data after the JSON object"))
	}
	return nil
}

func decodeError(err error) *apierror.Error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "body"
		}
		return apierror.InvalidArgument("a field has the wrong JSON type",
			apierror.Violation(field, "must be a JSON %s, not %s", jsonKind(typeErr.Type.Kind().String()), typeErr.Value))
	case errors.As(err, &syntaxErr):
		return apierror.InvalidArgument("the request body is not valid JSON",
			apierror.Violation("body", "malformed JSON at byte %d", syntaxErr.Offset))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return apierror.InvalidArgument("the request has an unknown field", apierror.Violation(name, "unknown field"))
	default:
		return apierror.InvalidArgument("the request body is not valid JSON", apierror.Violation("body", "malformed JSON"))
	}
}

// jsonKind names the JSON type a Go kind decodes from.
func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	case "struct", "map":
		return "object"
	default:
		return "number"
	}
}
