package restore

import (
	"context"
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/controller/backup"
)

// Runner runs vmrestore for one replica, keyed like the backup's uploads
// (backup.UploadRef: the VMCluster's namespace and the replica's runID):
// Start is idempotent per ID, Status observes a run, Delete stops it.
type Runner interface {
	// Start starts vmrestore of source into the pod's volume for rs
	// (creds: the backup destination's Secret, nil for none).
	Start(ctx context.Context, ref backup.UploadRef, rs *opsv1.ClusterRestore, pod *corev1.Pod, source string, creds *opsv1.SecretKeyReference) error
	Status(ctx context.Context, ref backup.UploadRef) (backup.UploadStatus, error)
	Delete(ctx context.Context, ref backup.UploadRef) error
}

// LocalRunner runs vmrestore as a local process with the backup's
// LocalRunner (its Binary is vmrestore): into the data directory the
// Pod's annotation names, the stand-in for a Job mounting the replica's
// volume in the local stack.
type LocalRunner struct {
	*backup.LocalRunner
}

var _ Runner = LocalRunner{}

// Start runs vmrestore -src=<source> -storageDataPath=<the pod's data
// directory>, once per ref. No metrics listener (as vmbackup: several run
// at once with AllAtOnce, and nothing scrapes them).
func (r LocalRunner) Start(ctx context.Context, ref backup.UploadRef, _ *opsv1.ClusterRestore, pod *corev1.Pod, source string, _ *opsv1.SecretKeyReference) error {
	dataPath, err := r.StorageDataPath(pod)
	if err != nil {
		return backup.Permanent(fmt.Errorf("data directory of pod %s: %w", pod.Name, err))
	}
	return r.StartProcess(ctx, ref, VMRestoreArgs(source, dataPath))
}

// VMRestoreArgs are the arguments of one vmrestore run.
func VMRestoreArgs(source, storageDataPath string) []string {
	return []string{"-src=" + source, "-storageDataPath=" + storageDataPath, "-httpListenAddr="}
}

// NewLocalRunner returns the LocalRunner of local mode: vmrestore (a path,
// or a name looked up in PATH; "vmrestore" when empty) run into the data
// directories the Pods' annotations name inside o.StorageRoot, its state
// under o.StateDir/.restores (a name no namespace can have).
func NewLocalRunner(o backup.LocalModeOptions, vmrestore string) (LocalRunner, error) {
	if vmrestore == "" {
		vmrestore = "vmrestore"
	}
	o.VMBackupBinary = vmrestore
	r, _, err := backup.NewLocalMode(o)
	if err != nil {
		return LocalRunner{}, fmt.Errorf("local restore mode: %w", err)
	}
	r.StateDir = filepath.Join(r.StateDir, ".restores")
	r.LogName = "vmrestore.log"
	return LocalRunner{LocalRunner: r}, nil
}
