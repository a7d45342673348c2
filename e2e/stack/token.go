package stack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The local stack's REST API caller: a ServiceAccount bound to a
// ClusterRole that grants everything in the API's permission group, whose
// token ops-apiserver checks with a real TokenReview and whose permissions
// with a real SubjectAccessReview (docs/auth.md).
const (
	DevServiceAccount  = "ops-dev"
	devClusterRole     = "ops-dev-api-admin"
	apiPermissionGroup = "api.ops.observability.tidbcloud.com"
	// TokenFile is the token's file in the state directory.
	TokenFile = "token"
	// tokenLifetime is how long a token of one run stays valid.
	tokenLifetime = 7 * 24 * 3600
)

// issueToken makes sure the dev caller exists with its permissions,
// requests a fresh token for it, stores it in StateDir/token (mode 0600)
// and in s.Token.
func (s *Stack) issueToken(ctx context.Context) error {
	c := s.Env.Client
	objs := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DevServiceAccount, Namespace: Namespace}},
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: devClusterRole},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{apiPermissionGroup}, Resources: []string{"*"}, Verbs: []string{"*"}}},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: devClusterRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: DevServiceAccount, Namespace: Namespace}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: devClusterRole},
		},
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the dev API caller: %w", err)
		}
	}
	cs, err := kubernetes.NewForConfig(s.Env.Config)
	if err != nil {
		return err
	}
	tr, err := cs.CoreV1().ServiceAccounts(Namespace).CreateToken(ctx, DevServiceAccount, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](tokenLifetime)},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("requesting a token for the dev API caller: %w", err)
	}
	if err := os.WriteFile(filepath.Join(s.stateDir, TokenFile), []byte(tr.Status.Token+"\n"), 0o600); err != nil {
		return err
	}
	s.Token = tr.Status.Token
	return nil
}
