package backup

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/outcome"
)

// Runner runs vmbackup for one replica: the JobRunner as a Kubernetes Job
// on the replica's node, the LocalRunner as a local process (tests and the
// local stack). Both are keyed by the upload's ID (the replica's jobName in
// status), which the reconciler records before it calls Start: Start is
// idempotent per ID, and a restarted operator observes an upload with
// Status rather than starting it again.
type Runner interface {
	// Start starts the upload unless one with the same ID exists. An error
	// wrapped with Permanent fails the replica; any other is retried.
	Start(ctx context.Context, u Upload) error
	// Status reports the upload's state; UploadNotFound when it was never
	// started (or was removed).
	Status(ctx context.Context, ref UploadRef) (UploadStatus, error)
	// Delete stops the upload if it runs and removes what the runner keeps
	// of it. Removing one that does not exist is not an error.
	Delete(ctx context.Context, ref UploadRef) error
}

// SharedFilesystem is implemented by runners that run vmbackup where the
// operator can see the files (the LocalRunner): for fs:// destinations the
// reconciler then checks vmbackup's completion markers, measures the
// backup and, with deletionPolicy Delete, removes it.
type SharedFilesystem interface {
	SharesFilesystem() bool
}

// UploadRef names an upload: the namespace it runs in (the VMCluster's)
// and its ID.
type UploadRef struct {
	Namespace string
	ID        string
}

// Upload is one run of vmbackup for one replica.
type Upload struct {
	UploadRef
	// Backup is the ClusterBackup the upload belongs to (labels, owner).
	Backup *opsv1.ClusterBackup
	// Pod is the vmstorage pod, as observed now.
	Pod *corev1.Pod
	// SnapshotName is the instant snapshot to upload.
	SnapshotName string
	// Destination is the replica's -dst.
	Destination string
	// Origin is the previous backup of the same replica, for server-side
	// copy (-origin); empty for none.
	Origin string
	// Credentials is spec.destination.credentialsSecretRef; nil for the
	// ambient identity.
	Credentials *opsv1.SecretKeyReference
}

// UploadState is the state of an upload as its runner sees it.
type UploadState string

const (
	// UploadNotFound: never started, or removed.
	UploadNotFound UploadState = "NotFound"
	// UploadRunning: started, not finished.
	UploadRunning UploadState = "Running"
	// UploadSucceeded: vmbackup exited 0.
	UploadSucceeded UploadState = "Succeeded"
	// UploadFailed: vmbackup failed (after the runner's retries).
	UploadFailed UploadState = "Failed"
)

// UploadStatus is what a runner knows about an upload.
type UploadStatus struct {
	State UploadState
	// Message is why it failed: vmbackup's own error when it could be
	// read, sanitised.
	Message string
	// Bytes is the size of the backup vmbackup reported ("backed up N
	// bytes"), 0 when unknown.
	Bytes int64
}

// Permanent marks err as not worth retrying: the replica fails with it
// (the one error policy, package outcome; every other error is retried).
func Permanent(err error) error { return outcome.Terminal(err) }

// IsPermanent reports whether err fails what it happened in (package
// outcome).
func IsPermanent(err error) bool { return outcome.IsTerminal(err) }

// vmbackupArgs are the arguments of one vmbackup run. The metrics listener
// is bound to loopback (nothing scrapes a short-lived vmbackup); an empty
// listenAddr starts none.
func vmbackupArgs(snapshot, storageDataPath, dst, origin, credsFile, listenAddr string) []string {
	args := []string{
		"-snapshotName=" + snapshot,
		"-storageDataPath=" + storageDataPath,
		"-dst=" + dst,
		"-httpListenAddr=" + listenAddr,
	}
	if origin != "" {
		args = append(args, "-origin="+origin)
	}
	if credsFile != "" {
		args = append(args, "-credsFilePath="+credsFile)
	}
	return args
}

// backedUpRe matches vmbackup's last line of a successful backup (v1.100):
// "backup from ... is complete; backed up 1234 bytes in 0.1 seconds; ...".
var backedUpRe = regexp.MustCompile(`is complete; backed up ([0-9]+) bytes`)

// parseBackedUpBytes returns the size vmbackup reported for the backup in
// its log, or -1.
func parseBackedUpBytes(log string) int64 {
	m := backedUpRe.FindAllStringSubmatch(log, -1)
	if len(m) == 0 {
		return -1
	}
	n, err := strconv.ParseInt(m[len(m)-1][1], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// vmbackupError returns the reason vmbackup gave for failing, from the
// tail of its log: the message of the last fatal (or, failing that, error
// or panic) line, in either of vmbackup's log formats (tab-separated
// "<time>\tfatal\t<caller>\t<message>", or JSON). Empty when none.
func vmbackupError(log string) string {
	var last, lastErr string
	for _, line := range strings.Split(log, "\n") {
		level, msg, ok := parseVMLogLine(line)
		if !ok {
			continue
		}
		switch level {
		case "fatal", "panic":
			last = msg
		case "error":
			lastErr = msg
		}
	}
	if last == "" {
		last = lastErr
	}
	return sanitize(last)
}

var jsonLevelRe = regexp.MustCompile(`"level":"([a-z]+)".*"msg":"((?:[^"\\]|\\.)*)"`)

func parseVMLogLine(line string) (level, msg string, ok bool) {
	line = strings.TrimSpace(line)
	if strings.HasPrefix(line, "{") {
		m := jsonLevelRe.FindStringSubmatch(line)
		if m == nil {
			return "", "", false
		}
		s, err := strconv.Unquote(`"` + m[2] + `"`)
		if err != nil {
			s = m[2]
		}
		return m[1], s, true
	}
	f := strings.SplitN(line, "\t", 4)
	switch {
	case len(f) == 4: // time, level, caller, message
		return f[1], f[3], true
	case len(f) == 3: // -loggerDisableTimestamps
		return f[0], f[2], true
	}
	return "", "", false
}

// urlRe finds URLs in free text.
var urlRe = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>]+`)

// sanitize strips user info, query strings and fragments from every URL in
// msg (vmbackup and the HTTP libraries it uses print URLs, and a presigned
// URL's query is a credential) and bounds its length.
func sanitize(msg string) string {
	msg = urlRe.ReplaceAllStringFunc(msg, func(raw string) string {
		// Punctuation that ends a sentence is not part of the URL.
		trimmed := strings.TrimRight(raw, ":,.;)")
		trail := raw[len(trimmed):]
		u, err := url.Parse(trimmed)
		if err != nil {
			return "<URL>" + trail
		}
		if u.User == nil && u.RawQuery == "" && u.Fragment == "" {
			return raw
		}
		u.User, u.RawQuery, u.Fragment, u.ForceQuery = nil, "", "", false
		return u.String() + trail
	})
	return truncate(strings.TrimSpace(msg), 1024)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// uploadError is the message recorded for a failed upload.
func uploadError(st UploadStatus) string {
	if st.Message == "" {
		return "vmbackup failed"
	}
	return fmt.Sprintf("vmbackup failed: %s", st.Message)
}
