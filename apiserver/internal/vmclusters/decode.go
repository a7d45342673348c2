package vmclusters

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
)

// MaxNameLength is Helm's limit for release names.
const MaxNameLength = 53

// nameRE is a DNS-1123 label: Helm's release-name rule without dots, which
// the name would carry into Service and label names of the chart.
var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ValidateName returns the problems of a vmcluster name (none if valid).
func ValidateName(name string) []string {
	var out []string
	switch {
	case name == "":
		return []string{"is required"}
	case len(name) > MaxNameLength:
		out = append(out, fmt.Sprintf("must be at most %d characters", MaxNameLength))
	}
	if !nameRE.MatchString(name) {
		out = append(out, "must consist of lower case letters, digits and '-', and start and end with a letter or digit")
	}
	return out
}

// maxVersionLength bounds a chart version string.
const maxVersionLength = 64

// ValidateVersion returns the problem of a chart version (empty if valid).
func ValidateVersion(v string) string {
	if len(v) > maxVersionLength {
		return fmt.Sprintf("must be at most %d characters", maxVersionLength)
	}
	if _, err := semver.StrictNewVersion(v); err != nil {
		return "must be a semantic version such as 1.2.3"
	}
	return ""
}

// The request fields. Output-only fields are accepted (so that a body
// read with GET can be sent back with PUT) and ignored.
var (
	createFields  = fieldSet("name", "values", "values_overrides", "helm_release_info", "id", "status", "status_reason", "status_message", "endpoints", "create_time", "etag", "allow_data_loss", "restore_from")
	updateFields  = fieldSet("name", "values", "values_overrides", "helm_release_info", "id", "status", "status_reason", "status_message", "endpoints", "create_time", "etag", "allow_data_loss")
	releaseFields = fieldSet("release_name", "release_namespace", "chart", "version", "deployed_version", "last_action")
)

func fieldSet(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// decoded is a request body split into its known fields.
type decoded struct {
	fields      map[string]json.RawMessage
	releaseInfo map[string]json.RawMessage
	violations  []apierror.FieldViolation
}

func (d *decoded) violate(field, format string, args ...any) {
	d.violations = append(d.violations, apierror.Violation(field, format, args...))
}

// decodeBody checks that body is one JSON object whose keys are all in
// allowed (exact case: encoding/json alone would match keys in any case),
// and the same for helm_release_info.
func decodeBody(body []byte, allowed map[string]bool) *decoded {
	d := &decoded{}
	if len(bytes.TrimSpace(body)) == 0 {
		d.violate("body", "a JSON object is required")
		return d
	}
	obj, msg := decodeObject(body)
	if msg != "" {
		d.violate("body", "%s", msg)
		return d
	}
	for _, k := range sortedKeys(obj) {
		if !allowed[k] {
			d.violate(fieldName(k), "unknown field")
		}
	}
	d.fields = obj
	if raw, ok := obj["helm_release_info"]; ok && !isNull(raw) {
		ri, msg := decodeObject(raw)
		if msg != "" {
			d.violate("helm_release_info", "must be a JSON object")
		} else {
			for _, k := range sortedKeys(ri) {
				if !releaseFields[k] {
					d.violate("helm_release_info."+fieldName(k), "unknown field")
				}
			}
			d.releaseInfo = ri
		}
	}
	return d
}

// plainFieldRE matches keys that can be echoed as a field path as they are.
var plainFieldRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// fieldName makes an arbitrary key safe to echo as a field path: plain
// keys as they are, anything else (empty, dots, control characters, very
// long) quoted and cut.
func fieldName(k string) string {
	if plainFieldRE.MatchString(k) {
		return k
	}
	const max = 64
	k = strings.ToValidUTF8(k, "?")
	if len(k) > max {
		k = k[:max] + "..."
	}
	return strconv.Quote(k)
}

// decodeObject parses data as one JSON object, rejecting anything else.
func decodeObject(data []byte) (map[string]json.RawMessage, string) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		if json.Valid(trimmed) {
			return nil, "must be a JSON object"
		}
		return nil, "is not valid JSON"
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Sprintf("is not valid JSON (at byte %d)", se.Offset)
		}
		return nil, "is not valid JSON"
	}
	return obj, ""
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func isNull(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// stringField decodes an optional string field; nil when absent.
func (d *decoded) stringField(obj map[string]json.RawMessage, key, field string) *string {
	raw, ok := obj[key]
	if !ok {
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		d.violate(field, "must be a string")
		return nil
	}
	return &s
}

// values decodes the values field into canonical JSON: an object, keys
// sorted, numbers kept as written.
func (d *decoded) values(required bool) []byte {
	raw, ok := d.fields["values"]
	if !ok {
		if required {
			d.violate("values", "is required: PUT replaces the values; send the complete values")
			return nil
		}
		return []byte("{}")
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		d.violate("values", "must be a JSON object")
		return nil
	}
	canonical, err := CanonicalValues(trimmed)
	if err != nil {
		d.violate("values", "must be a JSON object of representable values: %v", err)
		return nil
	}
	return canonical
}

// CanonicalValues re-encodes a JSON object with sorted keys and numbers
// as written, so that equal values compare equal byte for byte.
func CanonicalValues(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if v == nil {
		return nil, errors.New("values must be a JSON object")
	}
	if err := checkNumbers(v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// checkNumbers rejects numbers no JSON decoder downstream (the Kubernetes
// API server, Helm) can represent.
func checkNumbers(v any) error {
	switch t := v.(type) {
	case json.Number:
		if _, err := strconv.ParseFloat(string(t), 64); err != nil {
			return fmt.Errorf("number %.32s is out of range", t)
		}
	case map[string]any:
		for _, e := range t {
			if err := checkNumbers(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range t {
			if err := checkNumbers(e); err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *decoded) version() string {
	if d.releaseInfo == nil {
		return ""
	}
	v := d.stringField(d.releaseInfo, "version", "helm_release_info.version")
	if v == nil {
		return ""
	}
	if msg := ValidateVersion(*v); msg != "" {
		d.violate("helm_release_info.version", "%s", msg)
		return ""
	}
	return *v
}

func (d *decoded) err() *apierror.Error {
	if len(d.violations) == 0 {
		return nil
	}
	return apierror.InvalidArgument("the request is invalid", d.violations...)
}

// DecodeCreate parses and validates a POST body: name (with or without the
// "vmclusters/" prefix), values (an object, default {}), and optionally
// helm_release_info.version. Every problem is a field violation.
func DecodeCreate(body []byte) (CreateRequest, *apierror.Error) {
	d := decodeBody(body, createFields)
	if d.fields == nil {
		return CreateRequest{}, d.err()
	}
	var req CreateRequest
	if name := d.stringField(d.fields, "name", "name"); name == nil {
		if _, present := d.fields["name"]; !present {
			d.violate("name", "is required")
		}
	} else {
		req.Name = strings.TrimPrefix(*name, CollectionPrefix)
		for _, msg := range ValidateName(req.Name) {
			d.violate("name", "%s", msg)
		}
	}
	req.Values = d.values(false)
	req.Version = d.version()
	if _, ok := d.fields["allow_data_loss"]; ok {
		// A create cannot lose data: refusing the field says so rather
		// than ignoring an acknowledgement that means nothing here.
		d.violate("allow_data_loss", "applies to PUT only: a create has no data to lose")
	}
	if d.releaseInfo != nil {
		for _, k := range []string{"release_name", "release_namespace", "chart"} {
			if _, ok := d.releaseInfo[k]; ok {
				d.violate("helm_release_info."+k, "is set by the server")
			}
		}
	}
	req.RestoreFrom = d.restoreFrom()
	if err := d.err(); err != nil {
		return CreateRequest{}, err
	}
	return req, nil
}

// restoreFrom decodes restore_from: {"backup": "<backup id>"} (absent or
// null: nil).
func (d *decoded) restoreFrom() *RestoreFrom {
	raw, ok := d.fields["restore_from"]
	if !ok || isNull(raw) {
		return nil
	}
	obj, msg := decodeObject(raw)
	if msg != "" {
		d.violate("restore_from", "must be a JSON object")
		return nil
	}
	for _, k := range sortedKeys(obj) {
		if k != "backup" {
			d.violate("restore_from."+fieldName(k), "unknown field")
		}
	}
	if _, ok := obj["backup"]; !ok {
		d.violate("restore_from.backup", "is required")
		return nil
	}
	b := d.stringField(obj, "backup", "restore_from.backup")
	if b == nil {
		return nil
	}
	if *b == "" {
		d.violate("restore_from.backup", "must not be empty")
		return nil
	}
	if len(*b) > 253 {
		d.violate("restore_from.backup", "must be at most 253 characters")
		return nil
	}
	return &RestoreFrom{Backup: *b}
}

// DecodeUpdate parses and validates a PUT body: values (required, an
// object, replacing the current values) and optionally
// helm_release_info.version (a chart version change). name, id and the
// other helm_release_info fields may be echoed from a GET; the service
// checks that they match.
func DecodeUpdate(body []byte) (UpdateRequest, *apierror.Error) {
	d := decodeBody(body, updateFields)
	if d.fields == nil {
		return UpdateRequest{}, d.err()
	}
	var req UpdateRequest
	req.Values = d.values(true)
	req.Version = d.version()
	if name := d.stringField(d.fields, "name", "name"); name != nil {
		n := strings.TrimPrefix(*name, CollectionPrefix)
		req.Name = &n
	}
	req.ID = d.stringField(d.fields, "id", "id")
	if raw, ok := d.fields["allow_data_loss"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &req.AllowDataLoss); err != nil {
			d.violate("allow_data_loss", "must be a boolean")
		}
	}
	if raw, ok := d.fields["etag"]; ok && !isNull(raw) {
		req.ETag = d.stringField(d.fields, "etag", "etag")
	}
	if d.releaseInfo != nil {
		req.ReleaseName = d.stringField(d.releaseInfo, "release_name", "helm_release_info.release_name")
		req.ReleaseNamespace = d.stringField(d.releaseInfo, "release_namespace", "helm_release_info.release_namespace")
		req.Chart = d.stringField(d.releaseInfo, "chart", "helm_release_info.chart")
	}
	if err := d.err(); err != nil {
		return UpdateRequest{}, err
	}
	return req, nil
}
