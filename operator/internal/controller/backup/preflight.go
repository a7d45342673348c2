package backup

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// preflight checks, before a backup touches anything (no snapshot call, no
// Job, no file), the rules the CRD cannot express: the VMCluster is in the
// ClusterBackup's own namespace (metadata.namespace is not visible to CRD
// validation rules; the chart's ValidatingAdmissionPolicy refuses it at
// admission, this holds when the policy is absent), an fs:// destination
// is inside a root the administrator allowed (Options.FSRoots), and every
// Secret the backup names carries the opt-in label. It returns the
// problems, "" when there is none; the backup then fails with reason
// InvalidSpec. An error is a failure to read, retried.
//
// A Secret that is missing or unlabelled fails the backup at once rather
// than waiting for it: a ClusterBackup is a one-shot request, and failing
// with a message that says what to fix is clearer than a backup pending
// for ever (create the Secret first, then the backup; docs/backups.md).
func (r *Reconciler) preflight(ctx context.Context, b *opsv1.ClusterBackup) (string, error) {
	var problems []string
	if msg := b.CrossNamespaceProblem(); msg != "" {
		problems = append(problems, msg)
	}
	if msg := opsv1.FSDestinationProblem(b.Spec.Destination.URL, r.Options.FSRoots); msg != "" {
		problems = append(problems, "spec.destination.url: "+msg)
	}
	for _, ref := range []struct {
		field string
		ref   *opsv1.SecretKeyReference
	}{
		{"spec.destination.credentialsSecretRef", b.Spec.Destination.CredentialsSecretRef},
		{"spec.snapshotAuthKeySecretRef", b.Spec.SnapshotAuthKeySecretRef},
	} {
		if ref.ref == nil {
			continue
		}
		if _, err := r.backupSecret(ctx, b.Namespace, ref.ref.Name); err != nil {
			if !IsPermanent(err) {
				return "", err
			}
			problems = append(problems, ref.field+": "+err.Error())
		}
	}
	return strings.Join(problems, "; "), nil
}

// backupSecret is the only way the reconciler reads a Secret: it returns
// the Secret only if it carries opsv1.BackupCredentialsLabel; a Secret
// without it is reported exactly like a missing one (a Permanent error),
// so a ClusterBackup cannot make the operator read, or mount into a Job,
// a Secret that was not opted in. (The operator's RBAC is get on Secrets
// of the watched namespace; a label-selected cache would need list and
// watch of every Secret there, which is more, not less.)
func (r *Reconciler) backupSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	sec := &corev1.Secret{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, sec)
	switch {
	case apierrors.IsNotFound(err) || err == nil && !opsv1.IsBackupCredentials(sec.Labels):
		return nil, Permanent(fmt.Errorf("Secret %s/%s not found, or not labelled %s=%q", namespace, name, opsv1.BackupCredentialsLabel, opsv1.BackupCredentialsLabelValue))
	case err != nil:
		return nil, fmt.Errorf("getting Secret %s/%s: %w", namespace, name, err)
	}
	return sec, nil
}
