package auth

import (
	"context"
	"fmt"
	"strings"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// Group is the API group of the REST API's permissions. No CRD (and no
// API server) serves it: RBAC rules name it only to grant REST access. It
// is deliberately not the group of our custom resources
// (ops.observability.tidbcloud.com), so that the REST "operator" role grants
// no kubectl rights on ClusterBackups or ClusterUpgradeOperations, and
// kubectl rights on them grant nothing on the REST API.
const Group = "api.ops.observability.tidbcloud.com"

// Permission is what a route needs: a verb on a resource of Group (with
// an optional subresource, "upgradeoperations/pause") in a namespace.
type Permission struct {
	Verb      string
	Resource  string
	Namespace string
}

// split returns the resource and the subresource.
func (p Permission) split() (string, string) {
	res, sub, _ := strings.Cut(p.Resource, "/")
	return res, sub
}

// String reads like the Kubernetes API server's own denials.
func (p Permission) String() string {
	res, sub := p.split()
	s := fmt.Sprintf("%s resource %q", p.Verb, res)
	if sub != "" {
		s = fmt.Sprintf("%s resource %q subresource %q", p.Verb, res, sub)
	}
	return fmt.Sprintf("%s in API group %q in the namespace %q", s, Group, p.Namespace)
}

// Decision is an authorization answer.
type Decision struct {
	Allowed bool
	// Reason is the authorizer's explanation, if any.
	Reason string
}

// Authorizer decides whether a user holds a permission. An error means
// it could not decide (a 503).
type Authorizer interface {
	Authorize(ctx context.Context, u *User, p Permission) (Decision, error)
}

// SubjectAccessReviewAuthorizer asks the Kubernetes API server with a
// SubjectAccessReview (so RBAC, and any other authorizer the cluster
// runs, decides) and remembers at most size answers for TTL (a bounded
// LRU keyed by a hash of the user and the permission).
type SubjectAccessReviewAuthorizer struct {
	client authzclient.SubjectAccessReviewInterface
	cache  *lruCache[Decision]
}

// NewSubjectAccessReviewAuthorizer returns an authorizer on client.
func NewSubjectAccessReviewAuthorizer(client authzclient.SubjectAccessReviewInterface, ttl time.Duration, size int) *SubjectAccessReviewAuthorizer {
	return &SubjectAccessReviewAuthorizer{client: client, cache: newLRUCache[Decision](ttl, size)}
}

// Authorize implements Authorizer. The error (the SubjectAccessReview API
// failed) is for the log only: it is never shown to a caller, and neither
// is Decision.Reason.
func (a *SubjectAccessReviewAuthorizer) Authorize(ctx context.Context, u *User, p Permission) (Decision, error) {
	key := cacheKey(u.key(), p.Verb, p.Resource, p.Namespace)
	if d, ok := a.cache.get(key); ok {
		return d, nil
	}
	res, sub := p.split()
	spec := authzv1.SubjectAccessReviewSpec{
		User:   u.Name,
		UID:    u.UID,
		Groups: u.Groups,
		ResourceAttributes: &authzv1.ResourceAttributes{
			Namespace:   p.Namespace,
			Verb:        p.Verb,
			Group:       Group,
			Resource:    res,
			Subresource: sub,
		},
	}
	if len(u.Extra) > 0 {
		spec.Extra = make(map[string]authzv1.ExtraValue, len(u.Extra))
		for k, v := range u.Extra {
			spec.Extra[k] = v
		}
	}
	review, err := a.client.Create(ctx, &authzv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return Decision{}, fmt.Errorf("SubjectAccessReview: %w", err)
	}
	d := Decision{Allowed: review.Status.Allowed && !review.Status.Denied, Reason: review.Status.Reason}
	a.cache.put(key, d)
	return d, nil
}
