package idempotency

import (
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
)

// Header carries the key of a create that is safe to retry: a retry with
// the same key answers what the first attempt created instead of
// creating a second object (see Create and Replay).
const Header = "Idempotency-Key"

// MaxKeyLength bounds a key.
const MaxKeyLength = 255

// ValidateKey checks a key: at most MaxKeyLength characters, else a 400
// naming the header. "" (no key) is valid.
func ValidateKey(key string) *apierror.Error {
	if len(key) > MaxKeyLength {
		return apierror.InvalidArgument("invalid Idempotency-Key",
			apierror.Violation(Header, "must be at most %d characters", MaxKeyLength))
	}
	return nil
}

// KeyFrom is the key of a request ("" without one), checked by
// ValidateKey.
func KeyFrom(r *http.Request) (string, *apierror.Error) {
	key := r.Header.Get(Header)
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	return key, nil
}

// maxNameBase keeps a generated name a DNS label: the prefix, the base,
// "-" and the API server's 5 random characters fit in 63.
func maxNameBase(prefix string) int {
	return validation.DNS1123LabelMaxLength - len(prefix) - len("-") - 5
}

// SetName names obj, created for a vmcluster (or anything) called base by
// a request with key: after the key (Name(prefix, key)) and annotated with
// it (Annotate), so a retry finds it; without a key, by the API server
// (metadata.generateName "<prefix><base>-", base cut so that the name
// stays a DNS label), readable in kubectl.
func SetName(obj client.Object, prefix, base, key string) {
	if key != "" {
		obj.SetName(Name(prefix, key))
		Annotate(obj, key)
		return
	}
	if n := maxNameBase(prefix); len(base) > n {
		base = strings.TrimRight(base[:n], "-")
	}
	obj.SetGenerateName(prefix + base + "-")
}
