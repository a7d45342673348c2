package backups

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/jsonbody"
	"github.com/tidbcloud/ops-server/apiserver/internal/listing"
	"github.com/tidbcloud/ops-server/apiserver/internal/watch"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// The rules below are the CRD's (operator/api/v1alpha1), checked here
// first so a caller gets one field violation per bad field; the API
// server's own validation runs on create as well.
const (
	minConcurrency = 1
	maxConcurrency = 32
)

var deletionPolicies = []string{string(opsv1.DeletionPolicyRetain), string(opsv1.DeletionPolicyDelete)}

// Decode parses and validates a POST body. An empty body is an empty
// request (every field is optional); unknown fields and wrong JSON types
// are rejected, every problem is a field violation.
func Decode(body []byte) (*Request, *apierror.Error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return &Request{}, nil
	}
	var req Request
	if err := jsonbody.Decode(body, &req); err != nil {
		return nil, err
	}
	if v := Validate(&req); len(v) > 0 {
		return nil, apierror.InvalidArgument(fmt.Sprintf("the backup request has %d invalid field(s)", len(v)), v...)
	}
	return &req, nil
}

// Validate returns one violation per bad field of a request (what the
// server's defaults add is checked by the service).
func Validate(r *Request) []apierror.FieldViolation {
	var v []apierror.FieldViolation
	add := func(field, format string, args ...any) { v = append(v, apierror.Violation(field, format, args...)) }
	if d := r.Destination; d != nil {
		if d.URL != "" {
			if msg := opsv1.BackupDestinationProblem(d.URL); msg != "" {
				add("destination.url", "%s", msg)
			}
		}
		switch {
		case d.CredentialsSecret != nil && *d.CredentialsSecret != "":
			if len(validation.IsDNS1123Subdomain(*d.CredentialsSecret)) > 0 {
				add("destination.credentials_secret", "must be a Secret name: at most 253 lower case letters, digits, '-' and '.', starting and ending with a letter or digit")
			}
			if d.URL != "" && opsv1.IsFSBackupDestination(d.URL) {
				add("destination.credentials_secret", "is not used with an fs:// destination")
			}
		case d.CredentialsSecretKey != "":
			add("destination.credentials_secret_key", "needs destination.credentials_secret")
		}
		if d.CredentialsSecretKey != "" {
			if msg := opsv1.SecretKeyProblem(d.CredentialsSecretKey); msg != "" {
				add("destination.credentials_secret_key", "%s", msg)
			}
		}
	}
	if r.Concurrency != nil && (*r.Concurrency < minConcurrency || *r.Concurrency > maxConcurrency) {
		add("concurrency", "must be between %d and %d", minConcurrency, maxConcurrency)
	}
	if r.DeletionPolicy != "" && r.DeletionPolicy != deletionPolicies[0] && r.DeletionPolicy != deletionPolicies[1] {
		add("deletion_policy", "must be one of %s", strings.Join(deletionPolicies, ", "))
	}
	return v
}

// ParseList validates the list query: page_size (0..1000, 0 means 50)
// and page_token. Other parameters are ignored. Whether the token belongs
// to the vmcluster listed is checked by the service.
func ParseList(q url.Values) (ListRequest, *apierror.Error) {
	size, after, violations := listing.SnakeCase.ParseCursor(q)
	req := ListRequest{PageSize: size, After: after}
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
