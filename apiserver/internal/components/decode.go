package components

import (
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/jsonbody"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
)

// IdempotencyHeader makes a POST safe to retry (docs/components.md).
const IdempotencyHeader = "Idempotency-Key"

// maxIdempotencyKey bounds the Idempotency-Key header.
const maxIdempotencyKey = 255

// body is a POST or PUT body. The output-only fields are accepted (so a
// body read with GET can be sent back with PUT) and ignored.
type body struct {
	Name      *string         `json:"name"`
	Chart     *string         `json:"chart"`
	Version   *string         `json:"version"`
	Namespace *string         `json:"namespace"`
	Values    json.RawMessage `json:"values"`
	ID        *string         `json:"id"`
	ETag      *string         `json:"etag"`

	DeployedVersion json.RawMessage `json:"deployed_version"`
	Status          json.RawMessage `json:"status"`
	StatusReason    json.RawMessage `json:"status_reason"`
	StatusMessage   json.RawMessage `json:"status_message"`
	LastAction      json.RawMessage `json:"last_action"`
	CreateTime      json.RawMessage `json:"create_time"`
}

type violations []apierror.FieldViolation

func (v *violations) add(field, format string, args ...any) {
	*v = append(*v, apierror.Violation(field, format, args...))
}

func (v violations) err() *apierror.Error {
	if len(v) == 0 {
		return nil
	}
	return apierror.InvalidArgument("the request is invalid", v...)
}

// values canonicalizes the values field (absent: {} unless required).
func (v *violations) values(raw json.RawMessage, required bool) []byte {
	if len(raw) == 0 || string(raw) == "null" {
		if required {
			v.add("values", "is required: PUT replaces the values; send the complete values")
			return nil
		}
		return []byte("{}")
	}
	if raw[0] != '{' {
		v.add("values", "must be a JSON object")
		return nil
	}
	canonical, err := vmclusters.CanonicalValues(raw)
	if err != nil {
		v.add("values", "must be a JSON object of representable values: %v", err)
		return nil
	}
	return canonical
}

func (v *violations) version(s *string) string {
	if s == nil || *s == "" {
		return ""
	}
	if msg := vmclusters.ValidateVersion(*s); msg != "" {
		v.add("version", "%s", msg)
		return ""
	}
	return *s
}

// DecodeCreate parses and validates a POST body: name (with or without
// "components/"), chart (required), version, namespace, values (an
// object, default {}); and the Idempotency-Key header.
func DecodeCreate(raw []byte, idempotencyKey string) (CreateRequest, *apierror.Error) {
	var b body
	if err := jsonbody.Decode(raw, &b); err != nil {
		return CreateRequest{}, err
	}
	var vs violations
	var req CreateRequest
	if b.Name == nil {
		vs.add("name", "is required")
	} else {
		req.Name = strings.TrimPrefix(*b.Name, CollectionPrefix)
		for _, msg := range vmclusters.ValidateName(req.Name) {
			vs.add("name", "%s", msg)
		}
	}
	if b.Chart == nil || *b.Chart == "" {
		vs.add("chart", "is required: the name of a catalog chart")
	} else {
		req.Chart = *b.Chart
	}
	req.Version = vs.version(b.Version)
	if b.Namespace != nil && *b.Namespace != "" {
		req.Namespace = *b.Namespace
		for _, msg := range validation.IsDNS1123Label(req.Namespace) {
			vs.add("namespace", "%s", msg)
		}
	}
	req.Values = vs.values(b.Values, false)
	for field, set := range map[string]bool{"id": b.ID != nil, "etag": b.ETag != nil} {
		if set {
			vs.add(field, "is set by the server")
		}
	}
	if len(idempotencyKey) > maxIdempotencyKey {
		vs.add(IdempotencyHeader, "must be at most %d characters", maxIdempotencyKey)
	}
	req.IdempotencyKey = idempotencyKey
	if err := vs.err(); err != nil {
		return CreateRequest{}, err
	}
	return req, nil
}

// DecodeUpdate parses and validates a PUT body: values (required,
// replacing the current values) and optionally version; name, id, chart
// and namespace may be echoed from a GET (the service checks them).
func DecodeUpdate(raw []byte) (UpdateRequest, *apierror.Error) {
	var b body
	if err := jsonbody.Decode(raw, &b); err != nil {
		return UpdateRequest{}, err
	}
	var vs violations
	req := UpdateRequest{ID: b.ID, Chart: b.Chart, Namespace: b.Namespace, ETag: b.ETag}
	req.Values = vs.values(b.Values, true)
	req.Version = vs.version(b.Version)
	if b.Name != nil {
		n := strings.TrimPrefix(*b.Name, CollectionPrefix)
		req.Name = &n
	}
	if err := vs.err(); err != nil {
		return UpdateRequest{}, err
	}
	return req, nil
}
