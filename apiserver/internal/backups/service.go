package backups

import (
	"context"
	"regexp"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/auth"
	"github.com/tidbcloud/ops-server/apiserver/internal/cachewait"
	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/apiserver/internal/idempotency"
	"github.com/tidbcloud/ops-server/apiserver/internal/listing"
	"github.com/tidbcloud/ops-server/apiserver/internal/lookup"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	"github.com/tidbcloud/ops-server/apiserver/internal/watch"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// Reasons of the backup errors (ErrorInfo.reason).
const (
	ReasonNotFound          = "BACKUP_NOT_FOUND"
	ReasonVMClusterDeleting = "VMCLUSTER_DELETING"
	// ReasonOtherNamespace: the vmcluster's VMCluster is not in the
	// backups namespace, and a ClusterBackup may only back up a VMCluster
	// in its own namespace.
	ReasonOtherNamespace = "VMCLUSTER_IN_OTHER_NAMESPACE"
)

// VMClusters resolves a vmcluster id (UID or name) the way the vmclusters
// API does: a NotFound API error when there is none. *vmclusters.Service
// implements it.
type VMClusters interface {
	Get(ctx context.Context, id string) (vmclusters.VMCluster, error)
}

// Service decides; it reads from the informer cache and writes to the API
// server.
type Service struct {
	// Reader is the informer cache (ClusterBackups of Namespace).
	Reader client.Reader
	// Writer writes to, and reads after a DELETE from, the API server.
	Writer client.Client
	// Namespace of the ClusterBackup objects.
	Namespace  string
	VMClusters VMClusters
	// Defaults are the server's destination and credentials (Namespace is
	// not used).
	Defaults config.BackupsConfig
	// Caller names the authenticated caller of a request (for the
	// initiated-by annotation); nil or "" when unknown.
	Caller func(context.Context) string
	// CacheWait bounds the wait for the cache to see a write, so that a
	// read after a write sees it (default 5s).
	CacheWait time.Duration
	// Watch streams the list's changes (?watch=true); nil: a watch is a
	// 503.
	Watch *watch.Hub
}

func notFound(id string) *apierror.Error {
	if len(id) > 80 {
		id = id[:80] + "..."
	}
	return apierror.NotFound(ReasonNotFound, "backup %q not found", id).WithMetadata("backupId", id)
}

// target resolves the vmcluster of a request.
func (s *Service) target(ctx context.Context, vmclusterID string) (target, error) {
	v, err := s.VMClusters.Get(ctx, vmclusterID)
	if err != nil {
		return target{}, err
	}
	t := targetOf(v)
	if v.Status == vmclusters.StatusDeleting {
		return t, apierror.FailedPrecondition(ReasonVMClusterDeleting, "vmcluster %q is being deleted", t.Name)
	}
	return t, nil
}

// destination applies the server's defaults to the request's destination
// and checks what the request alone could not: that there is a
// destination, that an fs:// one is inside the allowed roots, and that a
// credentials Secret exists with the opt-in label.
func (s *Service) destination(ctx context.Context, req *Request) (Destination, error) {
	var d Destination
	rd := req.Destination
	if rd == nil {
		rd = &DestinationRequest{}
	}
	d.URL = rd.URL
	if d.URL == "" {
		d.URL = s.Defaults.Destination
	}
	if d.URL == "" {
		return d, apierror.InvalidArgument("the backup request has no destination",
			apierror.Violation("destination.url", "is required: this server has no default backup destination (backups.destination, --backup-destination); pass one, e.g. s3://<bucket>/<path>"))
	}
	if msg := opsv1.FSDestinationProblem(d.URL, s.Defaults.FSRoots); msg != "" {
		return d, apierror.InvalidArgument("the backup request is invalid", apierror.Violation("destination.url", "%s", msg))
	}
	fs := opsv1.IsFSBackupDestination(d.URL)
	switch {
	case rd.CredentialsSecret != nil:
		d.CredentialsSecret, d.CredentialsSecretKey = *rd.CredentialsSecret, rd.CredentialsSecretKey
		if d.CredentialsSecret != "" && fs {
			return d, apierror.InvalidArgument("the backup request is invalid",
				apierror.Violation("destination.credentials_secret", "is not used with an fs:// destination"))
		}
	case !fs:
		// The default credentials go with object stores only.
		d.CredentialsSecret, d.CredentialsSecretKey = s.Defaults.CredentialsSecret, s.Defaults.CredentialsSecretKey
	}
	if d.CredentialsSecret != "" {
		if err := s.checkSecret(ctx, "destination.credentials_secret", d.CredentialsSecret); err != nil {
			return d, err
		}
	}
	return d, nil
}

// checkSecret checks that a Secret of the backups namespace may be named by
// a backup: it exists and carries opsv1.BackupCredentialsLabel. An
// unlabelled Secret gets the very answer of a missing one (a 400 on field),
// so the API tells nothing about Secrets that were not opted in. It is
// read from the API server: the apiserver caches no Secret.
func (s *Service) checkSecret(ctx context.Context, field, name string) error {
	sec := &corev1.Secret{}
	err := s.Writer.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: name}, sec)
	switch {
	case apierrors.IsNotFound(err) || err == nil && !opsv1.IsBackupCredentials(sec.Labels):
		return apierror.InvalidArgument("the backup cannot use the Secret",
			apierror.Violation(field, "Secret %q not found in namespace %s, or not labelled %s=%q", name, s.Namespace, opsv1.BackupCredentialsLabel, opsv1.BackupCredentialsLabelValue))
	case err != nil:
		return apierror.FromKubernetes(err)
	}
	return nil
}

// sameNamespace refuses a vmcluster whose VMCluster is outside the backups
// namespace: a ClusterBackup may only back up a VMCluster in its own
// namespace (the operator and the chart's admission policy refuse the
// others), so the REST API never creates one.
func (s *Service) sameNamespace(t target) error {
	if t.Namespace != s.Namespace {
		return apierror.FailedPrecondition(ReasonOtherNamespace,
			"vmcluster %q runs in namespace %s, but backups are created in %s (backups.namespace): a backup may only target a vmcluster in its own namespace", t.Name, t.Namespace, s.Namespace)
	}
	return nil
}

// Create creates a backup of a vmcluster. With an idempotency key the
// object name is derived from the key, so a retry finds the backup its
// first attempt created: the same request returns it (created false), a
// different one is a 409.
func (s *Service) Create(ctx context.Context, vmclusterID string, req *Request, key string) (Backup, bool, error) {
	t, err := s.target(ctx, vmclusterID)
	if err != nil {
		return Backup{}, false, err
	}
	if err := s.sameNamespace(t); err != nil {
		return Backup{}, false, err
	}
	dest, err := s.destination(ctx, req)
	if err != nil {
		return Backup{}, false, err
	}
	obj := &opsv1.ClusterBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Labels: objectLabels(t), Annotations: map[string]string{}},
		Spec:       toSpec(t, dest, req),
	}
	idempotency.SetName(obj, "backup-", t.Name, key)
	auth.StampCaller(ctx, s.Caller, obj)
	got, replayed, err := idempotency.Create(ctx, s.Writer, obj, key, func(existing *opsv1.ClusterBackup) bool {
		return existing.Labels[opsv1.LabelVMClusterID] == obj.Labels[opsv1.LabelVMClusterID] &&
			equality.Semantic.DeepEqual(specForCompare(existing.Spec), specForCompare(obj.Spec))
	}, idempotency.Reused(key, "backup", "backup"))
	if err != nil {
		return Backup{}, false, err
	}
	if replayed {
		return toBackup(got), false, nil
	}
	auth.RecordTarget(ctx, objectRef(obj), "CreatedThroughAPI", "Created")
	logr.FromContextOrDiscard(ctx).Info("Created backup", "clusterBackup", klog.KObj(obj), "uid", obj.UID, "vmcluster", t.Name)
	uid := obj.UID
	cachewait.For(ctx, s.Reader, client.ObjectKeyFromObject(obj), s.CacheWait, func(c *opsv1.ClusterBackup) bool { return c != nil && c.UID == uid })
	return toBackup(obj), true, nil
}

// objectRef names a ClusterBackup for the audit line and the Event
// recorded on it.
func objectRef(o *opsv1.ClusterBackup) corev1.ObjectReference {
	return corev1.ObjectReference{
		APIVersion: opsv1.GroupVersion.String(), Kind: opsv1.ClusterBackupKind,
		Namespace: o.Namespace, Name: o.Name, UID: o.UID, ResourceVersion: o.ResourceVersion,
	}
}

// Get returns a backup of a vmcluster by name or id (UID).
func (s *Service) Get(ctx context.Context, vmclusterID, backupID string) (Backup, error) {
	t, err := s.resolve(ctx, vmclusterID)
	if err != nil {
		return Backup{}, err
	}
	obj, err := s.find(ctx, t, backupID)
	if err != nil {
		return Backup{}, err
	}
	return toBackup(obj), nil
}

// resolve is target for reads: a vmcluster being deleted can still be
// read, and so can the backups of one that is gone (docs/backups.md,
// "After the vmcluster is deleted"): then the id is taken as the
// vmcluster's name (or, if it has the form of one, its former id) and the
// backups are those labelled with it; a vmcluster with no backups left is
// still not found.
func (s *Service) resolve(ctx context.Context, vmclusterID string) (target, error) {
	t, err := s.target(ctx, vmclusterID)
	e, ok := apierror.As(err)
	switch {
	case ok && e.Reason == ReasonVMClusterDeleting:
		return t, nil
	case ok && e.Reason == vmclusters.ReasonNotFound:
		gone, found, lerr := s.goneTarget(ctx, vmclusterID)
		if lerr != nil {
			return target{}, lerr
		}
		if found {
			return gone, nil
		}
	}
	return t, err
}

// goneTarget is the target of the backups of a vmcluster that no longer
// exists, if any backup of it is left.
func (s *Service) goneTarget(ctx context.Context, vmclusterID string) (target, bool, error) {
	t := target{Gone: true}
	switch {
	case uuidRE.MatchString(vmclusterID):
		// A UUID is a valid name too; names never look like one in
		// practice, and the id is what the backups are labelled with.
		t.ID = vmclusterID
	case len(vmclusters.ValidateName(vmclusterID)) == 0:
		t.Name = vmclusterID
	default:
		return t, false, nil
	}
	items, err := s.list(ctx, t)
	if err != nil {
		return t, false, err
	}
	return t, len(items) > 0, nil
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// selector selects the backups of t: by the vmcluster's id, or for a
// vmcluster that is gone and named by name, by its name (every vmcluster
// that ever had that name).
func (t target) selector() map[string]string {
	if t.Gone && t.ID == "" {
		return map[string]string{vmclusters.LabelVMCluster: t.Name}
	}
	return map[string]string{opsv1.LabelVMClusterID: t.ID}
}

// key identifies t in page tokens.
func (t target) key() string {
	if t.Gone && t.ID == "" {
		return "name:" + t.Name
	}
	return t.ID
}

// owns reports whether obj is a backup of t.
func (t target) owns(obj *opsv1.ClusterBackup) bool {
	for k, v := range t.selector() {
		if obj.Labels[k] != v {
			return false
		}
	}
	return true
}

// find returns the backup named, or with the UID, id, if it belongs to
// the vmcluster t.
func (s *Service) find(ctx context.Context, t target, id string) (*opsv1.ClusterBackup, error) {
	return lookup.Find(ctx, s.Reader, s.Namespace, id, t.selector(), notFound(id), func() ([]opsv1.ClusterBackup, error) {
		return s.list(ctx, t)
	})
}

func (s *Service) list(ctx context.Context, t target) ([]opsv1.ClusterBackup, error) {
	list := &opsv1.ClusterBackupList{}
	if err := s.Reader.List(ctx, list, client.InNamespace(s.Namespace), client.MatchingLabels(t.selector())); err != nil {
		return nil, apierror.FromKubernetes(err)
	}
	return list.Items, nil
}

// List returns one page of the backups of a vmcluster, newest first
// (creation time, then name).
func (s *Service) List(ctx context.Context, vmclusterID string, req ListRequest) (ListResponse, error) {
	t, err := s.resolve(ctx, vmclusterID)
	if err != nil {
		return ListResponse{}, err
	}
	if err := req.After.Check(t.key(), ""); err != nil {
		return ListResponse{}, err
	}
	items, err := s.list(ctx, t)
	if err != nil {
		return ListResponse{}, err
	}
	compare, after := listing.NewestFirst(listing.KeyOf[*opsv1.ClusterBackup], req.After.Key())
	page, more := listing.Page(listing.Pointers(items), compare, after, req.PageSize)
	out := ListResponse{Backups: make([]Backup, 0, len(page))}
	for _, o := range page {
		out.Backups = append(out.Backups, toBackup(o))
	}
	if more {
		last := page[len(page)-1]
		out.NextPageToken = listing.Cursor{Created: last.CreationTimestamp.Unix(), Name: last.Name, VMCluster: t.key()}.Token()
	}
	return out, nil
}

// Delete deletes a backup. The operator's finalizer deletes what is left
// of the snapshots and, with deletionPolicy Delete, the data; until it is
// done the object stays, with Deleting. Deleting a backup already being
// deleted is accepted again.
func (s *Service) Delete(ctx context.Context, vmclusterID, backupID string) (DeleteResponse, error) {
	t, err := s.resolve(ctx, vmclusterID)
	if err != nil {
		return DeleteResponse{}, err
	}
	obj, err := s.find(ctx, t, backupID)
	if err != nil {
		return DeleteResponse{}, err
	}
	resp := DeleteResponse{ID: string(obj.UID), Name: toBackup(obj).Name, Result: ResultDeleted}
	if obj.DeletionTimestamp == nil {
		// UID only: the operator patches the status all the time, so a
		// resourceVersion precondition would fail for no reason.
		err := s.Writer.Delete(ctx, obj, client.Preconditions{UID: &obj.UID})
		if err != nil && !apierrors.IsNotFound(err) {
			return DeleteResponse{}, apierror.FromKubernetes(err)
		}
		auth.RecordTarget(ctx, objectRef(obj), "DeletedThroughAPI", "Deletion requested")
		logr.FromContextOrDiscard(ctx).Info("Deleted backup", "clusterBackup", klog.KObj(obj), "uid", obj.UID)
	}
	live := &opsv1.ClusterBackup{}
	err = s.Writer.Get(ctx, client.ObjectKeyFromObject(obj), live)
	switch {
	case err == nil && live.UID == obj.UID:
		b := toBackup(live)
		resp.Result, resp.Backup = ResultDeleting, &b
	case err != nil && !apierrors.IsNotFound(err):
		return DeleteResponse{}, apierror.FromKubernetes(err)
	}
	uid := obj.UID
	cachewait.For(ctx, s.Reader, client.ObjectKeyFromObject(obj), s.CacheWait, func(c *opsv1.ClusterBackup) bool {
		return c == nil || c.UID != uid || c.DeletionTimestamp != nil
	})
	return resp, nil
}
