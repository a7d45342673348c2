package backups

import (
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// target is the vmcluster a backup is for, and the VMCluster object its
// chart creates: named after the release, in the release namespace.
type target struct {
	// ID and Name are the vmcluster's.
	ID, Name string
	// Namespace and Release name the VMCluster object.
	Namespace, Release string
	// Gone is a vmcluster that no longer exists, known by ID or by Name
	// only, whose backups are still read.
	Gone bool
}

func targetOf(v vmclusters.VMCluster) target {
	return target{
		ID:        v.ID,
		Name:      strings.TrimPrefix(v.Name, vmclusters.CollectionPrefix),
		Namespace: v.HelmReleaseInfo.ReleaseNamespace,
		Release:   v.HelmReleaseInfo.ReleaseName,
	}
}

// objectLabels are the labels of a ClusterBackup of t.
func objectLabels(t target) map[string]string {
	l := vmclusters.Labels(t.Name)
	l[opsv1.LabelVMClusterID] = t.ID
	return l
}

// toSpec builds the CR spec of a backup of t to dest, defaults applied.
func toSpec(t target, dest Destination, req *Request) opsv1.ClusterBackupSpec {
	spec := opsv1.ClusterBackupSpec{
		VMCluster:      opsv1.VMClusterReference{Namespace: t.Namespace, Name: t.Release},
		Destination:    opsv1.BackupDestination{URL: dest.URL},
		DeletionPolicy: opsv1.DeletionPolicyRetain,
	}
	if dest.CredentialsSecret != "" {
		spec.Destination.CredentialsSecretRef = &opsv1.SecretKeyReference{Name: dest.CredentialsSecret, Key: dest.CredentialsSecretKey}
	}
	if req.Concurrency != nil {
		c := int32(*req.Concurrency)
		spec.Concurrency = &c
	}
	if req.DeletionPolicy != "" {
		spec.DeletionPolicy = opsv1.DeletionPolicy(req.DeletionPolicy)
	}
	return spec
}

// specForCompare drops what may change after creation (deletionPolicy),
// for the idempotency check.
func specForCompare(s opsv1.ClusterBackupSpec) opsv1.ClusterBackupSpec {
	s.DeletionPolicy = ""
	return s
}

// toBackup is the API view of an object.
func toBackup(o *opsv1.ClusterBackup) Backup {
	vm := o.Labels[vmclusters.LabelVMCluster]
	ns, name := o.VMClusterKey()
	b := Backup{
		Name:           vmclusters.CollectionPrefix + vm + "/" + CollectionID + "/" + o.Name,
		ID:             string(o.UID),
		VMCluster:      vmclusters.CollectionPrefix + vm,
		VMClusterID:    o.Labels[opsv1.LabelVMClusterID],
		Target:         ObjectRef{Namespace: ns, Name: name},
		Phase:          string(o.Status.Phase),
		Progress:       o.Status.Progress,
		Destination:    Destination{URL: o.Spec.Destination.URL},
		Concurrency:    o.Spec.Concurrency,
		DeletionPolicy: string(o.Spec.DeletionPolicy),
		Deleting:       o.DeletionTimestamp != nil,
		Replicas:       []Replica{},
		InitiatedBy:    o.Annotations[opsv1.AnnotationInitiatedBy],
		CreateTime:     formatTime(&o.CreationTimestamp),
		StartTime:      formatTime(o.Status.StartTime),
		CompletionTime: formatTime(o.Status.CompletionTime),
	}
	if b.Phase == "" {
		b.Phase = string(opsv1.BackupPhasePending)
	}
	if b.DeletionPolicy == "" {
		b.DeletionPolicy = string(opsv1.DeletionPolicyRetain)
	}
	if ref := o.Spec.Destination.CredentialsSecretRef; ref != nil {
		b.Destination.CredentialsSecret, b.Destination.CredentialsSecretKey = ref.Name, ref.Key
	}
	if c := apimeta.FindStatusCondition(o.Status.Conditions, opsv1.ReadyCondition); c != nil {
		b.Message = c.Message
	}
	for _, r := range o.Status.Replicas {
		b.Replicas = append(b.Replicas, Replica{
			Pod: r.Pod, Node: r.Node, Snapshot: r.SnapshotName, Destination: r.Destination,
			Phase: string(r.State), Bytes: r.Bytes, Error: r.Error,
			StartTime: formatTime(r.StartTime), CompletionTime: formatTime(r.CompletionTime),
		})
	}
	return b
}

func formatTime(t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
