package auth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
)

// Authenticator maps a bearer token to its user. ok is false when the
// token is not valid; err is for failures to decide (the TokenReview API
// unreachable), which are 503s, not 401s.
type Authenticator interface {
	AuthenticateToken(ctx context.Context, token string) (u *User, ok bool, err error)
}

// Union tries each authenticator in turn; the first that accepts the token
// wins. An error of one is returned only when none accepts the token.
type Union []Authenticator

// AuthenticateToken implements Authenticator.
func (us Union) AuthenticateToken(ctx context.Context, token string) (*User, bool, error) {
	var errs []error
	for _, a := range us {
		u, ok, err := a.AuthenticateToken(ctx, token)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			return u, true, nil
		}
	}
	return nil, false, errors.Join(errs...)
}

// TokenReviewAuthenticator checks tokens with the Kubernetes TokenReview
// API and remembers the answers for TTL in two bounded LRU caches, one
// for accepted and one for refused tokens, so that a flood of bad tokens
// can only evict other bad tokens' answers. Tokens are kept only as
// SHA-256 hashes.
//
// With audiences set, a token is accepted only when the TokenReview says
// it was minted for one of them (status.audiences): a token for the
// Kubernetes API server or for another service cannot be replayed here,
// and a token for ops-apiserver is useless against the API server. An
// authenticator that is not audience-aware (an empty status.audiences)
// means the token is valid for the API server only, and is refused.
type TokenReviewAuthenticator struct {
	client    authnclient.TokenReviewInterface
	audiences []string
	valid     *lruCache[*User]
	invalid   *lruCache[struct{}]
}

// NewTokenReviewAuthenticator returns an authenticator on client that asks
// for audiences (none: the API server's own) and keeps at most size
// answers of each kind for ttl.
func NewTokenReviewAuthenticator(client authnclient.TokenReviewInterface, audiences []string, ttl time.Duration, size int) *TokenReviewAuthenticator {
	return &TokenReviewAuthenticator{
		client:    client,
		audiences: append([]string(nil), audiences...),
		valid:     newLRUCache[*User](ttl, size),
		invalid:   newLRUCache[struct{}](ttl, size),
	}
}

// AuthenticateToken implements Authenticator. The error (the TokenReview
// API failed) is for the log only: it is never shown to a caller.
func (a *TokenReviewAuthenticator) AuthenticateToken(ctx context.Context, token string) (*User, bool, error) {
	key := cacheKey(token)
	if u, ok := a.valid.get(key); ok {
		return u, true, nil
	}
	if _, ok := a.invalid.get(key); ok {
		return nil, false, nil
	}
	review, err := a.client.Create(ctx, &authnv1.TokenReview{
		Spec: authnv1.TokenReviewSpec{Token: token, Audiences: a.audiences},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, false, fmt.Errorf("TokenReview: %w", err)
	}
	st := review.Status
	if !st.Authenticated || st.Error != "" || !a.audienceMatches(st.Audiences) {
		a.invalid.put(key, struct{}{})
		return nil, false, nil
	}
	u := &User{Name: st.User.Username, UID: st.User.UID, Groups: st.User.Groups}
	if len(st.User.Extra) > 0 {
		u.Extra = make(map[string][]string, len(st.User.Extra))
		for k, v := range st.User.Extra {
			u.Extra[k] = v
		}
	}
	a.valid.put(key, u)
	return u, true, nil
}

// audienceMatches reports whether the audiences the TokenReview returned
// include one that was asked for (always true when none was asked for).
func (a *TokenReviewAuthenticator) audienceMatches(got []string) bool {
	if len(a.audiences) == 0 {
		return true
	}
	for _, g := range got {
		if slices.Contains(a.audiences, g) {
			return true
		}
	}
	return false
}
