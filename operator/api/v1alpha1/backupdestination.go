package v1alpha1

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The rules below are the ClusterBackup CRD's rules for a backup
// destination (BackupDestination.URL, SecretKeyReference.Key: the
// kubebuilder markers of clusterbackup_types.go), written in Go so that
// ops-apiserver refuses a bad request naming the field before anything is
// written, and checks its own configuration (--backup-destination) the
// same way. A change to a marker there is a change here.

// MaxBackupDestinationLength bounds a backup destination URL (the CRD's
// MaxLength of spec.destination.url).
const MaxBackupDestinationLength = 1024

// backupSchemes are the destination URL schemes (vmbackup's -dst).
var backupSchemes = []string{"s3", "gs", "azblob", "fs"}

var (
	// bucketURLRE is the CRD's rule for object-store URLs: a bucket or
	// container name, then an optional path.
	bucketURLRE = regexp.MustCompile(`^[a-zA-Z0-9][-a-zA-Z0-9._]*(/.*)?$`)
	// secretKeyRE is the CRD's rule for a Secret key.
	secretKeyRE = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)
)

// BackupDestinationProblem returns what is wrong with a backup destination
// URL, empty if nothing: the ClusterBackup CRD's rules for
// spec.destination.url. The message never repeats the URL (it could hold
// a credential pasted by mistake).
func BackupDestinationProblem(u string) string {
	if u == "" {
		return "is required"
	}
	if len(u) > MaxBackupDestinationLength {
		return fmt.Sprintf("must be at most %d characters", MaxBackupDestinationLength)
	}
	if strings.ContainsAny(u, "?#") || strings.IndexFunc(u, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return "must not contain whitespace, control characters, a query string (?) or a fragment (#)"
	}
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok || !slices.Contains(backupSchemes, scheme) {
		return "scheme must be s3://, gs://, azblob:// or fs://"
	}
	if scheme == "fs" {
		if len(rest) < 2 || rest[0] != '/' {
			return "an fs:// URL must be an absolute path, e.g. fs:///backups"
		}
		return ""
	}
	if !bucketURLRE.MatchString(rest) {
		return fmt.Sprintf("must name a bucket or container, e.g. %s://<bucket>/<path>", scheme)
	}
	return ""
}

// IsFSBackupDestination reports whether u is a local file system
// destination, which takes no credentials (the CRD's rule on
// BackupDestination.CredentialsSecretRef).
func IsFSBackupDestination(u string) bool { return strings.HasPrefix(u, fsScheme) }

// SecretKeyProblem returns what is wrong with the key of a Secret, empty if
// nothing: the CRD's rule for SecretKeyReference.Key.
func SecretKeyProblem(k string) string {
	if len(k) > validation.DNS1123SubdomainMaxLength || !secretKeyRE.MatchString(k) {
		return "must be 1 to 253 letters, digits, '-', '_' or '.'"
	}
	return ""
}
