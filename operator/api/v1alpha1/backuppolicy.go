package v1alpha1

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// The rules below keep a ClusterBackup inside what its namespace and the
// administrator allow (docs/backups.md, "What a backup may touch"). The
// REST API checks them at request time and ops-operator before it acts, so
// a ClusterBackup applied with kubectl or GitOps is held to the same rules.

// BackupCredentialsLabel is the label a Secret must carry, with the value
// "true", to be named by a ClusterBackup (destination.credentialsSecretRef,
// snapshotAuthKeySecretRef). Without it the Secret is treated as missing,
// so a backup cannot be pointed at an arbitrary Secret of its namespace.
const BackupCredentialsLabel = "ops.observability.tidbcloud.com/backup-credentials"

// BackupCredentialsLabelValue is the value BackupCredentialsLabel must have.
const BackupCredentialsLabelValue = "true"

// IsBackupCredentials reports whether a Secret with these labels may be
// used by a ClusterBackup.
func IsBackupCredentials(labels map[string]string) bool {
	return labels[BackupCredentialsLabel] == BackupCredentialsLabelValue
}

// fsScheme is the scheme of a local file system destination.
const fsScheme = "fs://"

// ParseFSRoots parses a comma-separated list of absolute directories (the
// --backup-fs-roots flag of ops-apiserver and ops-operator) into cleaned
// paths. Empty elements are ignored, so "" is no root at all.
func ParseFSRoots(s string) ([]string, error) {
	var roots []string
	for _, r := range strings.Split(s, ",") {
		if r = strings.TrimSpace(r); r != "" {
			roots = append(roots, r)
		}
	}
	return CleanFSRoots(roots)
}

// CleanFSRoots checks that every root is an absolute path without ".."
// elements and returns them cleaned.
func CleanFSRoots(roots []string) ([]string, error) {
	out := make([]string, 0, len(roots))
	var errs []error
	for _, r := range roots {
		switch {
		case !filepath.IsAbs(r):
			errs = append(errs, fmt.Errorf("backup fs root %q: must be an absolute path", r))
		case strings.ContainsAny(r, ",\x00\n"):
			errs = append(errs, fmt.Errorf("backup fs root %q: must not contain a comma, NUL or newline", r))
		case hasDotDot(r):
			errs = append(errs, fmt.Errorf("backup fs root %q: must not contain '..'", r))
		default:
			out = append(out, filepath.Clean(r))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func hasDotDot(p string) bool {
	for _, e := range strings.Split(p, "/") {
		if e == ".." {
			return true
		}
	}
	return false
}

// FSDestinationProblem returns what is wrong with destination URL u given
// the allowed fs:// roots, "" if nothing: a URL that is not fs:// is not
// concerned; an fs:// URL's path, cleaned (so ".." cannot escape), must be
// one of roots or below one. roots are validated absolute paths
// (CleanFSRoots).
func FSDestinationProblem(u string, roots []string) string {
	p, ok := strings.CutPrefix(u, fsScheme)
	if !ok {
		return ""
	}
	if !filepath.IsAbs(p) {
		return "an fs:// URL must be an absolute path, e.g. fs:///backups"
	}
	if len(roots) == 0 {
		return "fs:// destinations are not allowed: the administrator configured no backup fs roots (--backup-fs-roots)"
	}
	p = filepath.Clean(p)
	for _, r := range roots {
		if r = filepath.Clean(r); p == r || r == "/" || strings.HasPrefix(p, r+"/") {
			return ""
		}
	}
	return fmt.Sprintf("an fs:// destination must be inside one of the backup fs roots the administrator allowed: %s", strings.Join(roots, ", "))
}

// CrossNamespaceProblem returns what is wrong with the VMCluster reference
// of b, "" if nothing: a ClusterBackup may only back up a VMCluster in its
// own namespace.
func (b *ClusterBackup) CrossNamespaceProblem() string {
	if ns := b.Spec.VMCluster.Namespace; ns != "" && ns != b.Namespace {
		return fmt.Sprintf("spec.vmCluster.namespace %s: a ClusterBackup may only back up a VMCluster in its own namespace %s", ns, b.Namespace)
	}
	return ""
}
