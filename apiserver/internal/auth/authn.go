package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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
// API and remembers the answers (valid and invalid) for TTL. Tokens are
// kept only as SHA-256 hashes.
type TokenReviewAuthenticator struct {
	client    authnclient.TokenReviewInterface
	audiences []string
	cache     *ttlCache[tokenAnswer]
}

type tokenAnswer struct {
	user *User
	ok   bool
}

// NewTokenReviewAuthenticator returns an authenticator on client.
func NewTokenReviewAuthenticator(client authnclient.TokenReviewInterface, audiences []string, ttl time.Duration) *TokenReviewAuthenticator {
	return &TokenReviewAuthenticator{client: client, audiences: audiences, cache: newTTLCache[tokenAnswer](ttl, 10000)}
}

// AuthenticateToken implements Authenticator.
func (a *TokenReviewAuthenticator) AuthenticateToken(ctx context.Context, token string) (*User, bool, error) {
	sum := sha256.Sum256([]byte(token))
	key := hex.EncodeToString(sum[:])
	if ans, ok := a.cache.get(key); ok {
		return ans.user, ans.ok, nil
	}
	review, err := a.client.Create(ctx, &authnv1.TokenReview{
		Spec: authnv1.TokenReviewSpec{Token: token, Audiences: a.audiences},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, false, fmt.Errorf("TokenReview: %w", err)
	}
	st := review.Status
	ans := tokenAnswer{ok: st.Authenticated && st.Error == ""}
	if ans.ok {
		ans.user = &User{Name: st.User.Username, UID: st.User.UID, Groups: st.User.Groups}
		if len(st.User.Extra) > 0 {
			ans.user.Extra = make(map[string][]string, len(st.User.Extra))
			for k, v := range st.User.Extra {
				ans.user.Extra[k] = v
			}
		}
	}
	a.cache.put(key, ans)
	return ans.user, ans.ok, nil
}
