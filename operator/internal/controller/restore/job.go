package restore

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/controller/backup"
)

// Labels and annotations on the vmrestore Jobs.
const (
	// LabelClusterRestore is the restoring ClusterRestore's UID.
	LabelClusterRestore = "ops.observability.tidbcloud.com/clusterrestore-uid"
	// AnnotationRestore is "<namespace>/<name>" of the ClusterRestore.
	AnnotationRestore = "ops.observability.tidbcloud.com/clusterrestore"
	// VMRestoreContainer is the Job's container.
	VMRestoreContainer = "vmrestore"
)

// DefaultJobOptions are the vmrestore Jobs' defaults: backup's, with the
// vmrestore image of the same release.
func DefaultJobOptions() backup.JobOptions {
	o := backup.DefaultJobOptions()
	o.Image = "victoriametrics/vmrestore:v1.100.0"
	return o
}

// BuildJob returns the Job that restores one replica: vmrestore on the
// replica's node with its data volume mounted read-write at the path
// vmstorage mounts it (backup.BuildReplicaJob: node affinity, tolerations,
// security context, the volume by claim), named ref.ID — the run ID the
// restore records before it creates the Job, so a restarted operator finds
// the Job instead of creating a second. An fs:// source is the node
// directory of that replica's backup, mounted read-only as a hostPath that
// must exist.
func BuildJob(ref backup.UploadRef, rs *opsv1.ClusterRestore, pod *corev1.Pod, source string, creds *opsv1.SecretKeyReference, o backup.JobOptions) (*batchv1.Job, error) {
	if rs == nil || pod == nil {
		return nil, errors.New("no ClusterRestore or no vmstorage pod")
	}
	hostPath := ""
	if p, ok := strings.CutPrefix(source, "fs://"); ok {
		if !path.IsAbs(p) {
			return nil, fmt.Errorf("source %s is not an absolute fs:// path", source)
		}
		hostPath = path.Clean(p)
	}
	labels := map[string]string{
		backup.LabelName:         VMRestoreContainer,
		backup.LabelManagedBy:    backup.FieldOwner,
		LabelClusterRestore:      string(rs.UID),
		backup.LabelVMStoragePod: truncate(pod.Name, 63),
	}
	var owner *metav1.OwnerReference
	if rs.UID != "" && rs.Namespace == ref.Namespace {
		owner = &metav1.OwnerReference{APIVersion: opsv1.GroupVersion.String(), Kind: "ClusterRestore",
			Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}
	}
	return backup.BuildReplicaJob(backup.ReplicaJob{
		Name: ref.ID, Namespace: ref.Namespace, Pod: pod, Container: VMRestoreContainer,
		Args: func(dataPath, credsFile string) []string {
			args := VMRestoreArgs(source, dataPath)
			if credsFile != "" {
				args = append(args, "-credsFilePath="+credsFile)
			}
			return args
		},
		FSHostPath: hostPath, FSHostPathType: corev1.HostPathDirectory, Credentials: creds,
		Labels:      labels,
		Annotations: map[string]string{AnnotationRestore: rs.Namespace + "/" + rs.Name},
		Owner:       owner,
	}, o)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// JobRunner runs each replica's vmrestore as a Job (BuildJob); Status and
// Delete are backup's JobRunner's, reading the vmrestore container.
type JobRunner struct {
	Client  client.Client
	Reader  client.Reader
	Options backup.JobOptions
}

var _ Runner = (*JobRunner)(nil)

func (r *JobRunner) jobs() *backup.JobRunner {
	return &backup.JobRunner{Client: r.Client, Reader: r.Reader, Options: r.Options, Container: VMRestoreContainer}
}

// Start creates the Job; an existing Job of that name is the same run.
func (r *JobRunner) Start(ctx context.Context, ref backup.UploadRef, rs *opsv1.ClusterRestore, pod *corev1.Pod, source string, creds *opsv1.SecretKeyReference) error {
	job, err := BuildJob(ref, rs, pod, source, creds, r.Options)
	if err != nil {
		return backup.Permanent(err)
	}
	err = r.Client.Create(ctx, job, client.FieldOwner(backup.FieldOwner))
	switch {
	case err == nil, apierrors.IsAlreadyExists(err):
		return nil
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsBadRequest(err):
		return backup.Permanent(fmt.Errorf("creating Job %s/%s: %w", job.Namespace, job.Name, err))
	}
	return fmt.Errorf("creating Job %s/%s: %w", job.Namespace, job.Name, err)
}

// Status maps the Job's conditions (backup.JobRunner.Status).
func (r *JobRunner) Status(ctx context.Context, ref backup.UploadRef) (backup.UploadStatus, error) {
	st, err := r.jobs().Status(ctx, ref)
	st.Bytes = 0
	return st, err
}

// Delete deletes the Job and its pods.
func (r *JobRunner) Delete(ctx context.Context, ref backup.UploadRef) error {
	return r.jobs().Delete(ctx, ref)
}
