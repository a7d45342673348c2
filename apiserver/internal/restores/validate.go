package restores

import (
	"bytes"
	"fmt"
	"net/url"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/jsonbody"
	"github.com/tidbcloud/ops-server/apiserver/internal/listing"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// maxReplicas is the CRD's bound on ordinals and mapping entries.
const maxReplicas = 512

// Decode parses and validates a POST body: backup is required, the rest
// optional; unknown fields and wrong JSON types are rejected, every
// problem is a field violation (the CRD's rules, checked first).
func Decode(body []byte) (*Request, *apierror.Error) {
	var req Request
	if len(bytes.TrimSpace(body)) > 0 {
		if err := jsonbody.Decode(body, &req); err != nil {
			return nil, err
		}
	}
	if v := Validate(&req); len(v) > 0 {
		return nil, apierror.InvalidArgument(fmt.Sprintf("the restore request has %d invalid field(s)", len(v)), v...)
	}
	return &req, nil
}

// Validate returns one violation per bad field.
func Validate(r *Request) []apierror.FieldViolation {
	var v []apierror.FieldViolation
	add := func(field, format string, args ...any) { v = append(v, apierror.Violation(field, format, args...)) }
	switch {
	case r.Backup == "":
		add("backup", "is required: the id or name of a Succeeded backup")
	case len(r.Backup) > 253 || len(validation.IsDNS1123Subdomain(r.Backup)) > 0:
		add("backup", "must be a backup id or name")
	}
	if s := r.Strategy; s != "" && s != string(opsv1.RestoreOneAtATime) && s != string(opsv1.RestoreAllAtOnce) {
		add("strategy", "must be one of %s, %s", opsv1.RestoreOneAtATime, opsv1.RestoreAllAtOnce)
	}
	if len(r.ReplicaMapping) > maxReplicas {
		add("replica_mapping", "must have at most %d entries", maxReplicas)
	}
	seen := map[int64]bool{}
	for i, m := range r.ReplicaMapping {
		for _, f := range []struct {
			name string
			val  *int64
		}{{"replica", m.Replica}, {"from_replica", m.FromReplica}} {
			switch {
			case f.val == nil:
				add(fmt.Sprintf("replica_mapping[%d].%s", i, f.name), "is required")
			case *f.val < 0 || *f.val >= maxReplicas:
				add(fmt.Sprintf("replica_mapping[%d].%s", i, f.name), "must be between 0 and %d", maxReplicas-1)
			}
		}
		if m.Replica != nil {
			if seen[*m.Replica] {
				add(fmt.Sprintf("replica_mapping[%d].replica", i), "names replica %d twice", *m.Replica)
			}
			seen[*m.Replica] = true
		}
	}
	return v
}

// ParseList validates the list query: page_size and page_token.
func ParseList(q url.Values) (ListRequest, *apierror.Error) {
	size, after, violations := listing.SnakeCase.ParseCursor(q)
	if len(violations) > 0 {
		return ListRequest{}, apierror.InvalidArgument("the list request is invalid", violations...)
	}
	return ListRequest{PageSize: size, After: after}, nil
}

// ListRequest is a validated list query.
type ListRequest struct {
	PageSize int
	After    *listing.Cursor
}
