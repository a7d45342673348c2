package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// Labels and annotations on the upload Jobs.
const (
	LabelName           = "app.kubernetes.io/name"
	LabelManagedBy      = "app.kubernetes.io/managed-by"
	LabelClusterBackup  = "ops.observability.tidbcloud.com/clusterbackup-uid"
	LabelVMStoragePod   = "ops.observability.tidbcloud.com/vmstorage-pod"
	AnnotationBackup    = "ops.observability.tidbcloud.com/clusterbackup"
	AnnotationSnapshot  = "ops.observability.tidbcloud.com/snapshot"
	vmbackupContainer   = "vmbackup"
	dataVolumeName      = "vmstorage-data"
	destVolumeName      = "backup-destination"
	credsVolumeName     = "credentials"
	credsMountPath      = "/etc/vmbackup/credentials"
	credsFileName       = "credentials"
	vmbackupListenAddr  = "127.0.0.1:8420"
	jobNameLabel        = "batch.kubernetes.io/job-name"
	vmstorageContainer  = "vmstorage"
	storageDataPathFlag = "storageDataPath"
)

// JobOptions configure the upload Jobs.
type JobOptions struct {
	// Image is the vmbackup image, e.g. victoriametrics/vmbackup:v1.100.0.
	Image string
	// ImagePullPolicy of the vmbackup container; empty: the cluster default.
	ImagePullPolicy corev1.PullPolicy
	// ServiceAccountName runs the Job's pod under this service account,
	// e.g. one bound to a cloud identity (IRSA, workload identity); empty:
	// the namespace's default.
	ServiceAccountName string
	// BackoffLimit is how often a failed vmbackup is retried (a retry
	// resumes: vmbackup uploads only the parts missing at the destination).
	BackoffLimit int32
	// ActiveDeadline bounds the Job's run time; 0: unbounded.
	ActiveDeadline time.Duration
	// Resources of the vmbackup container.
	Resources corev1.ResourceRequirements
}

// DefaultJobOptions are the production defaults.
func DefaultJobOptions() JobOptions {
	return JobOptions{
		Image:          "victoriametrics/vmbackup:v1.100.0",
		BackoffLimit:   2,
		ActiveDeadline: 12 * time.Hour,
	}
}

// BuildJob returns the Job that uploads one replica's snapshot: vmbackup on
// the replica's node (required node affinity on the Node's name, the pod's
// tolerations), with the replica's data volume mounted read-only at the
// path vmstorage mounts it, run as vmstorage runs (the pod's and the
// container's security context, so it can read vmstorage's files).
//
// The data volume is the volume mounted at vmstorage's -storageDataPath: a
// PersistentVolumeClaim (or generic ephemeral volume) is mounted by claim
// name — a ReadWriteOnce claim can be mounted by a second pod on the same
// node; a hostPath as the same hostPath. An emptyDir cannot be reached from
// another pod, which is an error.
//
// An fs:// destination is a path on the node: the Job mounts it as a
// hostPath (DirectoryOrCreate). Credentials come from the Secret: with a
// key, as vmbackup's -credsFilePath file; without, every key as an
// environment variable.
func BuildJob(u Upload, o JobOptions) (*batchv1.Job, error) {
	if u.Pod == nil {
		return nil, errors.New("no vmstorage pod")
	}
	if u.Backup == nil {
		return nil, errors.New("no ClusterBackup")
	}
	if o.Image == "" {
		return nil, errors.New("no vmbackup image configured")
	}
	var owner *metav1.OwnerReference
	if u.Backup.Namespace == u.Namespace && u.Backup.UID != "" {
		// Garbage-collected with the ClusterBackup (a Job in another
		// namespace is removed by the ClusterBackup's finalizer).
		owner = &metav1.OwnerReference{
			APIVersion: opsv1.GroupVersion.String(), Kind: opsv1.ClusterBackupKind,
			Name: u.Backup.Name, UID: u.Backup.UID, Controller: ptr.To(true),
		}
	}
	hostPath := ""
	if p, ok := fsPath(u.Backup.Spec.Destination.URL); ok {
		hostPath = p
	}
	return BuildReplicaJob(ReplicaJob{
		Name: u.ID, Namespace: u.Namespace, Pod: u.Pod, Container: vmbackupContainer,
		Args: func(dataPath, credsFile string) []string {
			return vmbackupArgs(u.SnapshotName, dataPath, u.Destination, u.Origin, credsFile, vmbackupListenAddr)
		},
		ReadOnlyData: true, FSHostPath: hostPath, FSHostPathType: corev1.HostPathDirectoryOrCreate, Credentials: u.Credentials,
		Labels: map[string]string{
			LabelName:          "vmbackup",
			LabelManagedBy:     FieldOwner,
			LabelClusterBackup: string(u.Backup.UID),
			LabelVMStoragePod:  truncate(u.Pod.Name, 63),
		},
		Annotations: map[string]string{
			AnnotationBackup:   u.Backup.Namespace + "/" + u.Backup.Name,
			AnnotationSnapshot: u.SnapshotName,
		},
		Owner: owner,
	}, o)
}

// ReplicaJob is a Job that runs one VictoriaMetrics tool (vmbackup,
// vmrestore) against one vmstorage replica's data volume; BuildReplicaJob
// builds it.
type ReplicaJob struct {
	Name, Namespace string
	// Pod is the vmstorage pod whose node, tolerations, security context
	// and data volume the Job takes.
	Pod *corev1.Pod
	// Container is the name of the Job's one container.
	Container string
	// Args returns the container's arguments, given vmstorage's
	// -storageDataPath and the credentials file ("" for none).
	Args func(dataPath, credsFile string) []string
	// ReadOnlyData mounts the data volume read-only (vmbackup); vmrestore
	// writes it.
	ReadOnlyData bool
	// FSHostPath, when not empty, is a node directory (an fs:// backup)
	// mounted at the same path, as a hostPath of FSHostPathType.
	FSHostPath     string
	FSHostPathType corev1.HostPathType
	// Credentials is the destination's Secret; nil for the ambient
	// identity.
	Credentials *opsv1.SecretKeyReference
	Labels      map[string]string
	Annotations map[string]string
	// Owner, when not nil, is the Job's controller reference.
	Owner *metav1.OwnerReference
}

// BuildReplicaJob returns the Job of j (see BuildJob for the volume, node
// and credential rules), with the image, pull policy, service account,
// retries, deadline and resources of o.
func BuildReplicaJob(j ReplicaJob, o JobOptions) (*batchv1.Job, error) {
	pod := j.Pod
	if pod == nil {
		return nil, errors.New("no vmstorage pod")
	}
	if pod.Spec.NodeName == "" {
		return nil, fmt.Errorf("pod %s is not scheduled to a node", pod.Name)
	}
	if o.Image == "" {
		return nil, fmt.Errorf("no %s image configured", j.Container)
	}
	ctr, dataPath, mount, vol, err := dataVolume(pod)
	if err != nil {
		return nil, err
	}
	if !j.ReadOnlyData && vol.PersistentVolumeClaim != nil {
		vol.PersistentVolumeClaim.ReadOnly = false
	}

	volumes := []corev1.Volume{vol}
	mounts := []corev1.VolumeMount{{Name: dataVolumeName, MountPath: mount.MountPath, SubPath: mount.SubPath, ReadOnly: j.ReadOnlyData}}
	if j.FSHostPath != "" {
		volumes = append(volumes, corev1.Volume{Name: destVolumeName, VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: j.FSHostPath, Type: ptr.To(j.FSHostPathType)},
		}})
		mounts = append(mounts, corev1.VolumeMount{Name: destVolumeName, MountPath: j.FSHostPath, ReadOnly: !j.ReadOnlyData})
	}
	var envFrom []corev1.EnvFromSource
	credsFile := ""
	if c := j.Credentials; c != nil {
		if c.Key != "" {
			volumes = append(volumes, corev1.Volume{Name: credsVolumeName, VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{
					SecretName: c.Name,
					Items:      []corev1.KeyToPath{{Key: c.Key, Path: credsFileName}},
				},
			}})
			mounts = append(mounts, corev1.VolumeMount{Name: credsVolumeName, MountPath: credsMountPath, ReadOnly: true})
			credsFile = path.Join(credsMountPath, credsFileName)
		} else {
			envFrom = append(envFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: c.Name},
			}})
		}
	}

	job := &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        j.Name,
			Namespace:   j.Namespace,
			Labels:      j.Labels,
			Annotations: j.Annotations,
		},
		Spec: batchv1.JobSpec{
			Parallelism:  ptr.To[int32](1),
			Completions:  ptr.To[int32](1),
			BackoffLimit: ptr.To(o.BackoffLimit),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: j.Labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					ServiceAccountName:           o.ServiceAccountName,
					AutomountServiceAccountToken: ptr.To(false),
					Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
							NodeSelectorTerms: []corev1.NodeSelectorTerm{{
								MatchFields: []corev1.NodeSelectorRequirement{{
									Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{pod.Spec.NodeName},
								}},
							}},
						},
					}},
					Tolerations:      slices.Clone(pod.Spec.Tolerations),
					ImagePullSecrets: slices.Clone(pod.Spec.ImagePullSecrets),
					SecurityContext:  pod.Spec.SecurityContext.DeepCopy(),
					Volumes:          volumes,
					Containers: []corev1.Container{{
						Name:                     j.Container,
						Image:                    o.Image,
						ImagePullPolicy:          o.ImagePullPolicy,
						Args:                     j.Args(dataPath, credsFile),
						EnvFrom:                  envFrom,
						VolumeMounts:             mounts,
						Resources:                *o.Resources.DeepCopy(),
						SecurityContext:          ctr.SecurityContext.DeepCopy(),
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					}},
				},
			},
		},
	}
	if o.ActiveDeadline > 0 {
		job.Spec.ActiveDeadlineSeconds = ptr.To(int64(o.ActiveDeadline / time.Second))
	}
	if j.Owner != nil {
		job.OwnerReferences = []metav1.OwnerReference{*j.Owner}
	}
	return job, nil
}

// dataVolume finds vmstorage's container, its -storageDataPath, the mount
// that holds that path and the Job's copy of the volume behind it.
func dataVolume(pod *corev1.Pod) (*corev1.Container, string, corev1.VolumeMount, corev1.Volume, error) {
	var none corev1.VolumeMount
	var noVol corev1.Volume
	ctr := vmstorageContainerOf(pod)
	if ctr == nil {
		return nil, "", none, noVol, fmt.Errorf("pod %s has no vmstorage container", pod.Name)
	}
	dataPath := flagValue(ctr.Args, storageDataPathFlag)
	if dataPath == "" {
		dataPath = flagValue(ctr.Command, storageDataPathFlag)
	}
	if dataPath == "" {
		return nil, "", none, noVol, fmt.Errorf("container %s of pod %s has no -%s", ctr.Name, pod.Name, storageDataPathFlag)
	}
	// A relative path is the container's working directory's: the
	// VictoriaMetrics operator's default is -storageDataPath=vmstorage-data
	// with the volume mounted at vmstorage-data (the image's working
	// directory is /). The Job's container gets both as absolute paths.
	workDir := ctr.WorkingDir
	if !path.IsAbs(workDir) {
		workDir = "/"
	}
	abs := func(p string) string {
		if path.IsAbs(p) {
			return path.Clean(p)
		}
		return path.Join(workDir, p)
	}
	dataPath = abs(dataPath)
	var mount *corev1.VolumeMount
	for i := range ctr.VolumeMounts {
		m := &ctr.VolumeMounts[i]
		mp := abs(m.MountPath)
		if (dataPath == mp || strings.HasPrefix(dataPath, strings.TrimRight(mp, "/")+"/")) && (mount == nil || len(mp) > len(abs(mount.MountPath))) {
			mount = m
		}
	}
	if mount == nil {
		return nil, "", none, noVol, fmt.Errorf("no volume of pod %s is mounted at -%s=%s", pod.Name, storageDataPathFlag, dataPath)
	}
	var src *corev1.Volume
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == mount.Name {
			src = &pod.Spec.Volumes[i]
		}
	}
	if src == nil {
		return nil, "", none, noVol, fmt.Errorf("pod %s mounts volume %s, which it does not define", pod.Name, mount.Name)
	}
	vol := corev1.Volume{Name: dataVolumeName}
	switch {
	case src.PersistentVolumeClaim != nil:
		vol.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: src.PersistentVolumeClaim.ClaimName, ReadOnly: true}
	case src.Ephemeral != nil:
		// A generic ephemeral volume is a claim named <pod>-<volume>.
		vol.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pod.Name + "-" + src.Name, ReadOnly: true}
	case src.HostPath != nil:
		vol.HostPath = src.HostPath.DeepCopy()
	case src.EmptyDir != nil:
		return nil, "", none, noVol, fmt.Errorf("the data volume %s of pod %s is an emptyDir, which a backup Job cannot mount; give vmstorage persistent storage", src.Name, pod.Name)
	default:
		return nil, "", none, noVol, fmt.Errorf("the data volume %s of pod %s is of a kind a backup Job cannot mount (want a PersistentVolumeClaim or hostPath)", src.Name, pod.Name)
	}
	m := *mount
	m.MountPath = abs(m.MountPath)
	return ctr, dataPath, m, vol, nil
}

func vmstorageContainerOf(pod *corev1.Pod) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == vmstorageContainer {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if flagValue(c.Args, storageDataPathFlag) != "" || flagValue(c.Command, storageDataPathFlag) != "" {
			return c
		}
	}
	return nil
}

// flagValue returns the value of a Go flag in args: -name=v, --name=v, or
// -name v.
func flagValue(args []string, name string) string {
	for i, a := range args {
		for _, p := range []string{"-" + name, "--" + name} {
			if v, ok := strings.CutPrefix(a, p+"="); ok {
				return v
			}
			if a == p && i+1 < len(args) {
				return args[i+1]
			}
		}
	}
	return ""
}

// LogReader returns at most limit bytes of the end of a container's log.
type LogReader func(ctx context.Context, namespace, pod, container string, limit int64) (string, error)

// PodLogReader reads pod logs through the Kubernetes API (pods/log).
func PodLogReader(cs kubernetes.Interface) LogReader {
	return func(ctx context.Context, namespace, pod, container string, limit int64) (string, error) {
		raw, err := cs.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{
			Container: container, TailLines: ptr.To[int64](200), LimitBytes: ptr.To(limit),
		}).DoRaw(ctx)
		if err != nil {
			return "", fmt.Errorf("reading the log of pod %s/%s: %w", namespace, pod, err)
		}
		return string(raw), nil
	}
}

// JobRunner runs each upload as a Job (see BuildJob) and reads its state
// from the Job's conditions; a failed Job's reason from its pod's
// termination message (vmbackup's log tail, FallbackToLogsOnError), and a
// succeeded Job's size from vmbackup's last log line.
type JobRunner struct {
	// Client creates and deletes Jobs.
	Client client.Client
	// Reader reads Jobs and pods (the manager's API reader: fresh objects,
	// no cache of every Job and pod in the cluster).
	Reader client.Reader
	// Logs reads a succeeded pod's log for the backup size; nil: no size.
	Logs    LogReader
	Options JobOptions
	// Container is the Job container whose termination is read for a
	// failure's reason; empty: vmbackup's.
	Container string
}

func (r *JobRunner) container() string {
	if r.Container == "" {
		return vmbackupContainer
	}
	return r.Container
}

var _ Runner = (*JobRunner)(nil)

// Start creates the Job; an existing Job of that name is the same upload.
func (r *JobRunner) Start(ctx context.Context, u Upload) error {
	job, err := BuildJob(u, r.Options)
	if err != nil {
		return Permanent(err)
	}
	err = r.Client.Create(ctx, job, client.FieldOwner(FieldOwner))
	switch {
	case err == nil, apierrors.IsAlreadyExists(err):
		return nil
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsBadRequest(err):
		return Permanent(fmt.Errorf("creating Job %s/%s: %w", job.Namespace, job.Name, err))
	}
	return fmt.Errorf("creating Job %s/%s: %w", job.Namespace, job.Name, err)
}

// Status maps the Job's conditions: Complete → Succeeded, Failed → Failed,
// else Running.
func (r *JobRunner) Status(ctx context.Context, ref UploadRef) (UploadStatus, error) {
	job := &batchv1.Job{}
	if err := r.Reader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.ID}, job); err != nil {
		if apierrors.IsNotFound(err) {
			return UploadStatus{State: UploadNotFound}, nil
		}
		return UploadStatus{}, fmt.Errorf("getting Job %s/%s: %w", ref.Namespace, ref.ID, err)
	}
	switch {
	case jobCondition(job, batchv1.JobComplete):
		st := UploadStatus{State: UploadSucceeded}
		if pod := r.latestPod(ctx, job, true); pod != nil && r.Logs != nil {
			if log, err := r.Logs(ctx, pod.Namespace, pod.Name, r.container(), 64<<10); err == nil {
				st.Bytes = max(parseBackedUpBytes(log), 0)
			}
		}
		return st, nil
	case jobCondition(job, batchv1.JobFailed):
		return UploadStatus{State: UploadFailed, Message: r.failureMessage(ctx, job)}, nil
	}
	return UploadStatus{State: UploadRunning}, nil
}

// Delete deletes the Job and its pods.
func (r *JobRunner) Delete(ctx context.Context, ref UploadRef) error {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.ID}}
	if err := r.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Job %s/%s: %w", ref.Namespace, ref.ID, err)
	}
	return nil
}

func jobCondition(job *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// latestPod returns the newest pod of the Job whose vmbackup container
// terminated with success (exit 0) or failure.
func (r *JobRunner) latestPod(ctx context.Context, job *batchv1.Job, success bool) *corev1.Pod {
	pods := &corev1.PodList{}
	if err := r.Reader.List(ctx, pods, client.InNamespace(job.Namespace), client.MatchingLabels{jobNameLabel: job.Name}); err != nil {
		return nil
	}
	var best *corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		t := terminated(p, r.container())
		if t == nil || (t.ExitCode == 0) != success {
			continue
		}
		if best == nil || best.CreationTimestamp.Before(&p.CreationTimestamp) {
			best = p
		}
	}
	return best
}

func terminated(p *corev1.Pod, container string) *corev1.ContainerStateTerminated {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == container && cs.State.Terminated != nil {
			return cs.State.Terminated
		}
	}
	return nil
}

// failureMessage is vmbackup's own error from the last failed pod, else
// the Job's Failed condition.
func (r *JobRunner) failureMessage(ctx context.Context, job *batchv1.Job) string {
	var cond string
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			cond = strings.TrimSpace(c.Reason + ": " + c.Message)
		}
	}
	if pod := r.latestPod(ctx, job, false); pod != nil {
		t := terminated(pod, r.container())
		if msg := vmbackupError(t.Message); msg != "" {
			return msg
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, "container %s of pod %s exited with code %d", r.container(), pod.Name, t.ExitCode)
		if t.Reason != "" {
			fmt.Fprintf(&b, " (%s)", t.Reason)
		}
		if cond != "" {
			fmt.Fprintf(&b, "; Job %s", cond)
		}
		return sanitize(b.String())
	}
	if cond == "" {
		cond = "failed"
	}
	return sanitize("Job " + job.Name + " " + cond)
}
