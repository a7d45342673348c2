package backup

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// Files vmbackup writes at the destination once a backup is complete (the
// names of lib/backup/backupnames in VictoriaMetrics v1.100).
const (
	BackupCompleteFile = "backup_complete.ignore"
	BackupMetadataFile = "backup_metadata.ignore"
)

// replicaDestination is where one replica is backed up:
// <url>/<vmcluster>/<backup>/<pod>. Every ClusterBackup has its own path,
// so a backup never overwrites another; the previous backup of a replica
// is the -origin of the next for server-side copy.
func replicaDestination(b *opsv1.ClusterBackup, pod string) string {
	_, cluster := b.VMClusterKey()
	return strings.TrimRight(b.Spec.Destination.URL, "/") + "/" + cluster + "/" + b.Name + "/" + pod
}

// jobName is the name of the upload of one replica (the Job's name, the
// LocalRunner's ID): readable, a DNS label (at most 63 characters, so it
// also fits a label value), and unique per ClusterBackup (by UID) and pod.
func jobName(b *opsv1.ClusterBackup, pod string) string {
	sum := sha256.Sum256([]byte(string(b.UID) + "/" + b.Namespace + "/" + b.Name + "/" + pod))
	suffix := hex.EncodeToString(sum[:])[:8]
	base := strings.ReplaceAll(b.Name+"-"+pod, ".", "-")
	if len(base) > 63-1-len(suffix) {
		base = base[:63-1-len(suffix)]
	}
	base = strings.TrimRight(base, "-")
	return base + "-" + suffix
}

// fsPath returns the path of an fs:// URL.
func fsPath(u string) (string, bool) {
	p, ok := strings.CutPrefix(u, "fs://")
	if !ok || !filepath.IsAbs(p) {
		return "", false
	}
	return filepath.Clean(p), true
}

// backupMetadata is vmbackup's backup_metadata.ignore.
type backupMetadata struct {
	CreatedAt   string `json:"created_at"`
	CompletedAt string `json:"completed_at"`
}

// inspectFSBackup checks that the backup at dir is complete (both markers
// vmbackup writes last are there, the metadata names a completion time)
// and returns its size: the sum of its regular files.
func inspectFSBackup(dir string) (int64, error) {
	if _, err := os.Stat(filepath.Join(dir, BackupCompleteFile)); err != nil {
		return 0, fmt.Errorf("backup at %s is not complete: %s is missing", dir, BackupCompleteFile)
	}
	raw, err := readBounded(filepath.Join(dir, BackupMetadataFile), 64<<10)
	if err != nil {
		return 0, fmt.Errorf("backup at %s: reading %s: %w", dir, BackupMetadataFile, err)
	}
	var md backupMetadata
	if err := json.Unmarshal(raw, &md); err != nil || md.CompletedAt == "" {
		return 0, fmt.Errorf("backup at %s: %s has no completion time", dir, BackupMetadataFile)
	}
	var size int64
	err = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			size += fi.Size()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("measuring the backup at %s: %w", dir, err)
	}
	return size, nil
}

func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(buf)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return buf, nil
}

// removeFSBackup deletes what a backup wrote under the fs:// url base for
// one replica. It refuses anything that is not strictly below base.
func removeFSBackup(base, dst string) error {
	root, ok1 := fsPath(base)
	dir, ok2 := fsPath(dst)
	if !ok1 || !ok2 {
		return errors.New("not an fs:// destination")
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("refusing to remove %s: not below %s", dir, root)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	return nil
}

// chooseOrigin returns the destination of the latest successful backup of
// the same replica (by pod name) of the same VMCluster to the same
// destination URL, among others, for vmbackup's -origin; "" when none.
// Same URL means same bucket and same credentials, so the server-side copy
// works.
func chooseOrigin(b *opsv1.ClusterBackup, pod string, others []opsv1.ClusterBackup) string {
	ns, name := b.VMClusterKey()
	var best *opsv1.ReplicaBackup
	for i := range others {
		o := &others[i]
		if o.UID == b.UID || o.Spec.Destination.URL != b.Spec.Destination.URL {
			continue
		}
		if ons, oname := o.VMClusterKey(); ons != ns || oname != name {
			continue
		}
		for j := range o.Status.Replicas {
			r := &o.Status.Replicas[j]
			if r.Pod != pod || r.State != opsv1.ReplicaStateSucceeded || r.Destination == "" || r.CompletionTime == nil {
				continue
			}
			if best == nil || r.CompletionTime.After(best.CompletionTime.Time) {
				best = r
			}
		}
	}
	if best == nil {
		return ""
	}
	return best.Destination
}
