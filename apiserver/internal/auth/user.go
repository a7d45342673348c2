// Package auth authenticates and authorizes REST callers on Kubernetes:
// bearer tokens are checked with the TokenReview API (service-account
// tokens minted for the configured audiences, and whatever OIDC the cluster
// trusts) or, for development, against a file of hashed static tokens;
// every route's permission is checked with a SubjectAccessReview in the
// REST API's own group (Group), so Kubernetes RBAC grants REST access
// without granting anything on the custom resources, and the other way
// round. The middleware limits each client address's request rate before
// authentication and each caller's after it, and writes one audit line per
// mutating or refused request. docs/auth.md is the user's guide.
package auth

import (
	"context"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// User is an authenticated caller.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// key identifies the user in caches: name, uid, groups and extra.
func (u *User) key() string {
	var b strings.Builder
	b.WriteString(u.Name)
	b.WriteByte(0)
	b.WriteString(u.UID)
	b.WriteByte(0)
	groups := append([]string(nil), u.Groups...)
	sort.Strings(groups)
	b.WriteString(strings.Join(groups, "\x01"))
	keys := make([]string, 0, len(u.Extra))
	for k := range u.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteByte(0)
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strings.Join(u.Extra[k], "\x01"))
	}
	return b.String()
}

type userKey struct{}

// WithUser returns ctx carrying u.
func WithUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the authenticated caller of the request ctx belongs
// to, or nil.
func UserFrom(ctx context.Context) *User {
	u, _ := ctx.Value(userKey{}).(*User)
	return u
}

// CallerName is the name of the authenticated caller, "" when there is
// none (the services' Caller hook).
func CallerName(ctx context.Context) string {
	if u := UserFrom(ctx); u != nil {
		return u.Name
	}
	return ""
}

// StampCaller records the caller of the request (caller(ctx), when caller
// is set and names one) in obj's initiated-by annotation.
func StampCaller(ctx context.Context, caller func(context.Context) string, obj metav1.Object) {
	if caller == nil {
		return
	}
	who := caller(ctx)
	if who == "" {
		return
	}
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[opsv1.AnnotationInitiatedBy] = who
	obj.SetAnnotations(a)
}
