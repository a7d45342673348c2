package backups

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	"github.com/go-logr/logr"
	"github.com/labstack/echo/v4"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/auth"
	"github.com/tidbcloud/ops-server/apiserver/internal/cachewait"
	"github.com/tidbcloud/ops-server/apiserver/internal/idempotency"
	"github.com/tidbcloud/ops-server/apiserver/internal/jsonbody"
	"github.com/tidbcloud/ops-server/apiserver/internal/listing"
	"github.com/tidbcloud/ops-server/apiserver/internal/lookup"
	"github.com/tidbcloud/ops-server/apiserver/internal/server"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/backupschedule"
)

// The backup schedules API:
// /api/v1/observability-ops/vmclusters/{vmclusterId}/backupSchedules
// (create, list, get, replace, delete) over ClusterBackupSchedule objects
// (docs/backups.md, "Scheduled backups"). It shares the backups API's
// vmcluster resolution, destination defaults and Secret checks.

// SchedulesPath is the collection path of backup schedules, below a
// vmcluster.
const SchedulesPath = vmclusters.BasePath + "/:vmclusterId/backupSchedules"

// SchedulesCollectionID is the collection segment of a schedule's resource
// name.
const SchedulesCollectionID = "backupSchedules"

// ScheduleResource is the permission resource of the schedule routes.
const ScheduleResource = "clusterbackupschedules"

// ReasonScheduleNotFound is the reason of a missing schedule.
const ReasonScheduleNotFound = "BACKUP_SCHEDULE_NOT_FOUND"

// Retention limits, the CRD's.
const (
	maxKeepLast = 1000
	maxKeepDays = 3650
	// maxScheduleLength is the CRD's spec.schedule maxLength.
	maxScheduleLength = 128
)

// ScheduleRequest is a POST or PUT body.
type ScheduleRequest struct {
	// Name of the schedule (POST only; a DNS label of at most 50
	// characters, unique in the backups namespace).
	Name string `json:"name,omitempty"`
	// Schedule is a cron expression in UTC (five fields) or a descriptor.
	Schedule    string              `json:"schedule"`
	Destination *DestinationRequest `json:"destination,omitempty"`
	Concurrency *int64              `json:"concurrency,omitempty"`
	KeepLast    *int64              `json:"keep_last,omitempty"`
	KeepDays    *int64              `json:"keep_days,omitempty"`
	Suspend     bool                `json:"suspend,omitempty"`
}

// BackupSchedule is the REST representation of a ClusterBackupSchedule.
type BackupSchedule struct {
	// Name is "vmclusters/<vmcluster>/backupSchedules/<schedule>".
	Name        string      `json:"name"`
	ID          string      `json:"id"`
	VMCluster   string      `json:"vmcluster"`
	VMClusterID string      `json:"vmcluster_id"`
	Target      ObjectRef   `json:"target"`
	Schedule    string      `json:"schedule"`
	Destination Destination `json:"destination"`
	Concurrency *int32      `json:"concurrency,omitempty"`
	KeepLast    *int32      `json:"keep_last,omitempty"`
	KeepDays    *int32      `json:"keep_days,omitempty"`
	Suspend     bool        `json:"suspend"`
	// State is PENDING (not reconciled yet), ACTIVE, SUSPENDED or INVALID.
	State                string   `json:"state"`
	Message              string   `json:"message,omitempty"`
	LastScheduleTime     string   `json:"last_schedule_time,omitempty"`
	NextScheduleTime     string   `json:"next_schedule_time,omitempty"`
	LastBackup           string   `json:"last_backup,omitempty"`
	LastSuccessfulBackup string   `json:"last_successful_backup,omitempty"`
	LastSuccessfulTime   string   `json:"last_successful_time,omitempty"`
	RetainedBackups      []string `json:"retained_backups"`
	DeletedBackups       int64    `json:"deleted_backups"`
	CreateTime           string   `json:"create_time,omitempty"`
}

// ScheduleListResponse is a page of schedules, by name.
type ScheduleListResponse struct {
	BackupSchedules []BackupSchedule `json:"backup_schedules"`
	NextPageToken   string           `json:"next_page_token,omitempty"`
}

// ScheduleDeleteResponse is the answer to DELETE.
type ScheduleDeleteResponse struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Result string `json:"result"` // Deleted
}

// DecodeSchedule parses and validates a POST (create true) or PUT body.
func DecodeSchedule(body []byte, create bool) (*ScheduleRequest, *apierror.Error) {
	var req ScheduleRequest
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	if err := jsonbody.Decode(body, &req); err != nil {
		return nil, err
	}
	if v := ValidateSchedule(&req, create); len(v) > 0 {
		return nil, apierror.InvalidArgument(fmt.Sprintf("the backup schedule request has %d invalid field(s)", len(v)), v...)
	}
	return &req, nil
}

// ValidateSchedule returns one violation per bad field. The cron rule is
// ops-operator's too (backupschedule.Parse: a ClusterBackupSchedule
// applied with kubectl fails with reason InvalidSpec and the same words);
// the others are the CRD's.
func ValidateSchedule(r *ScheduleRequest, create bool) []apierror.FieldViolation {
	var v []apierror.FieldViolation
	add := func(field, format string, args ...any) { v = append(v, apierror.Violation(field, format, args...)) }
	switch {
	case !create && r.Name != "":
		add("name", "cannot be changed; leave it out of a PUT")
	case create && r.Name == "":
		add("name", "is required")
	case create && (len(r.Name) > opsv1.MaxScheduleNameLength || len(validation.IsDNS1123Label(r.Name)) > 0):
		add("name", "must be at most %d lower case letters, digits and '-', starting and ending with a letter or digit", opsv1.MaxScheduleNameLength)
	}
	if len(r.Schedule) > maxScheduleLength {
		add("schedule", "must be at most %d characters", maxScheduleLength)
	} else if _, err := backupschedule.Parse(r.Schedule); err != nil {
		add("schedule", "%v", err)
	}
	if r.KeepLast == nil && r.KeepDays == nil {
		add("keep_last", "set keep_last, keep_days or both: a schedule without retention would keep every backup for ever")
	}
	if r.KeepLast != nil && (*r.KeepLast < 1 || *r.KeepLast > maxKeepLast) {
		add("keep_last", "must be between 1 and %d", maxKeepLast)
	}
	if r.KeepDays != nil && (*r.KeepDays < 1 || *r.KeepDays > maxKeepDays) {
		add("keep_days", "must be between 1 and %d", maxKeepDays)
	}
	// The destination and concurrency rules are a backup's.
	v = append(v, Validate(&Request{Destination: r.Destination, Concurrency: r.Concurrency})...)
	return v
}

// ScheduleHandler serves the backup schedules API.
type ScheduleHandler struct {
	Svc *Service
}

// Routes implements server.API.
func (h *ScheduleHandler) Routes() []server.Route {
	item := SchedulesPath + "/:scheduleId"
	return []server.Route{
		{Method: http.MethodPost, Path: SchedulesPath, Name: "backupSchedules.create", Handler: h.create, Resource: ScheduleResource, Verb: "create"},
		{Method: http.MethodGet, Path: SchedulesPath, Name: "backupSchedules.list", Handler: h.list, Resource: ScheduleResource, Verb: "list"},
		{Method: http.MethodGet, Path: item, Name: "backupSchedules.get", Handler: h.get, Resource: ScheduleResource, Verb: "get"},
		{Method: http.MethodPut, Path: item, Name: "backupSchedules.update", Handler: h.update, Resource: ScheduleResource, Verb: "update"},
		{Method: http.MethodDelete, Path: item, Name: "backupSchedules.delete", Handler: h.delete, Resource: ScheduleResource, Verb: "delete"},
	}
}

func (h *ScheduleHandler) create(c echo.Context) error {
	req, key, err := server.DecodeCreate(c, func(body []byte) (*ScheduleRequest, *apierror.Error) { return DecodeSchedule(body, true) })
	if err != nil {
		return err
	}
	out, created, err := h.Svc.CreateSchedule(c.Request().Context(), c.Param("vmclusterId"), req, key)
	if err != nil {
		return err
	}
	return server.Created(c, http.StatusAccepted, out, created)
}

func (h *ScheduleHandler) list(c echo.Context) error {
	req, verr := ParseList(c.QueryParams())
	if verr != nil {
		return verr
	}
	out, err := h.Svc.ListSchedules(c.Request().Context(), c.Param("vmclusterId"), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (h *ScheduleHandler) get(c echo.Context) error {
	out, err := h.Svc.GetSchedule(c.Request().Context(), c.Param("vmclusterId"), c.Param("scheduleId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (h *ScheduleHandler) update(c echo.Context) error {
	body, err := server.ReadBody(c)
	if err != nil {
		return err
	}
	req, verr := DecodeSchedule(body, false)
	if verr != nil {
		return verr
	}
	out, err := h.Svc.UpdateSchedule(c.Request().Context(), c.Param("vmclusterId"), c.Param("scheduleId"), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (h *ScheduleHandler) delete(c echo.Context) error {
	out, err := h.Svc.DeleteSchedule(c.Request().Context(), c.Param("vmclusterId"), c.Param("scheduleId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func scheduleNotFound(id string) *apierror.Error {
	if len(id) > 80 {
		id = id[:80] + "..."
	}
	return apierror.NotFound(ReasonScheduleNotFound, "backup schedule %q not found", id).WithMetadata("scheduleId", id)
}

// scheduleSpec is the CR spec of req for t, defaults applied to dest.
func scheduleSpec(t target, dest Destination, req *ScheduleRequest) opsv1.ClusterBackupScheduleSpec {
	b := toSpec(t, dest, &Request{Concurrency: req.Concurrency})
	spec := opsv1.ClusterBackupScheduleSpec{
		Schedule: req.Schedule, VMCluster: b.VMCluster, Destination: b.Destination,
		Concurrency: b.Concurrency, Suspend: req.Suspend,
	}
	if req.KeepLast != nil {
		v := int32(*req.KeepLast)
		spec.KeepLast = &v
	}
	if req.KeepDays != nil {
		v := int32(*req.KeepDays)
		spec.KeepDays = &v
	}
	return spec
}

func scheduleRef(o *opsv1.ClusterBackupSchedule) corev1.ObjectReference {
	return corev1.ObjectReference{
		APIVersion: opsv1.GroupVersion.String(), Kind: opsv1.ClusterBackupScheduleKind,
		Namespace: o.Namespace, Name: o.Name, UID: o.UID, ResourceVersion: o.ResourceVersion,
	}
}

// CreateSchedule creates a backup schedule of a vmcluster. The schedule's
// labels (the vmcluster's) are copied by ops-operator onto every backup it
// creates, so they are listed with the vmcluster's backups.
func (s *Service) CreateSchedule(ctx context.Context, vmclusterID string, req *ScheduleRequest, key string) (BackupSchedule, bool, error) {
	t, err := s.target(ctx, vmclusterID)
	if err != nil {
		return BackupSchedule{}, false, err
	}
	if err := s.sameNamespace(t); err != nil {
		return BackupSchedule{}, false, err
	}
	dest, err := s.destination(ctx, &Request{Destination: req.Destination})
	if err != nil {
		return BackupSchedule{}, false, err
	}
	obj := &opsv1.ClusterBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: req.Name, Labels: objectLabels(t), Annotations: map[string]string{}},
		Spec:       scheduleSpec(t, dest, req),
	}
	idempotency.Annotate(obj, key)
	auth.StampCaller(ctx, s.Caller, obj)
	// The name is the request's: without the key, or with another
	// request, a taken name is a 409 naming it.
	got, replayed, err := idempotency.Create(ctx, s.Writer, obj, key, func(existing *opsv1.ClusterBackupSchedule) bool {
		return existing.Labels[opsv1.LabelVMClusterID] == obj.Labels[opsv1.LabelVMClusterID] && equality.Semantic.DeepEqual(existing.Spec, obj.Spec)
	}, func(client.Object) error {
		return apierror.AlreadyExists(apierror.ReasonAlreadyExists, "a backup schedule named %q already exists in namespace %s", obj.Name, s.Namespace)
	})
	if err != nil {
		return BackupSchedule{}, false, err
	}
	if replayed {
		return toSchedule(got), false, nil
	}
	auth.RecordTarget(ctx, scheduleRef(obj), "CreatedThroughAPI", "Created")
	logr.FromContextOrDiscard(ctx).Info("Created backup schedule", "clusterBackupSchedule", klog.KObj(obj), "vmcluster", t.Name)
	uid := obj.UID
	cachewait.For(ctx, s.Reader, client.ObjectKeyFromObject(obj), s.CacheWait, func(c *opsv1.ClusterBackupSchedule) bool { return c != nil && c.UID == uid })
	return toSchedule(obj), true, nil
}

// findSchedule returns the schedule named, or with the UID, id, if it
// belongs to the vmcluster t.
func (s *Service) findSchedule(ctx context.Context, t target, id string) (*opsv1.ClusterBackupSchedule, error) {
	return lookup.Find(ctx, s.Reader, s.Namespace, id, t.selector(), scheduleNotFound(id), func() ([]opsv1.ClusterBackupSchedule, error) {
		return s.listSchedules(ctx, t)
	})
}

func (s *Service) listSchedules(ctx context.Context, t target) ([]opsv1.ClusterBackupSchedule, error) {
	list := &opsv1.ClusterBackupScheduleList{}
	if err := s.Reader.List(ctx, list, client.InNamespace(s.Namespace), client.MatchingLabels(t.selector())); err != nil {
		return nil, apierror.FromKubernetes(err)
	}
	return list.Items, nil
}

// GetSchedule returns a schedule of a vmcluster by name or id.
func (s *Service) GetSchedule(ctx context.Context, vmclusterID, id string) (BackupSchedule, error) {
	t, err := s.resolve(ctx, vmclusterID)
	if err != nil {
		return BackupSchedule{}, err
	}
	obj, err := s.findSchedule(ctx, t, id)
	if err != nil {
		return BackupSchedule{}, err
	}
	return toSchedule(obj), nil
}

// ListSchedules returns one page of a vmcluster's schedules, by name.
func (s *Service) ListSchedules(ctx context.Context, vmclusterID string, req ListRequest) (ScheduleListResponse, error) {
	t, err := s.resolve(ctx, vmclusterID)
	if err != nil {
		return ScheduleListResponse{}, err
	}
	if err := req.After.Check(t.key(), ""); err != nil {
		return ScheduleListResponse{}, err
	}
	items, err := s.listSchedules(ctx, t)
	if err != nil {
		return ScheduleListResponse{}, err
	}
	from := ""
	if req.After != nil {
		from = req.After.Name
	}
	compare, after := listing.ByName(func(o *opsv1.ClusterBackupSchedule) string { return o.Name }, from)
	page, more := listing.Page(listing.Pointers(items), compare, after, req.PageSize)
	out := ScheduleListResponse{BackupSchedules: make([]BackupSchedule, 0, len(page))}
	for _, o := range page {
		out.BackupSchedules = append(out.BackupSchedules, toSchedule(o))
	}
	if more {
		out.NextPageToken = listing.Cursor{Name: page[len(page)-1].Name, VMCluster: t.key()}.Token()
	}
	return out, nil
}

// UpdateSchedule replaces a schedule's spec (its vmcluster stays).
func (s *Service) UpdateSchedule(ctx context.Context, vmclusterID, id string, req *ScheduleRequest) (BackupSchedule, error) {
	t, err := s.target(ctx, vmclusterID)
	if err != nil {
		return BackupSchedule{}, err
	}
	obj, err := s.findSchedule(ctx, t, id)
	if err != nil {
		return BackupSchedule{}, err
	}
	dest, err := s.destination(ctx, &Request{Destination: req.Destination})
	if err != nil {
		return BackupSchedule{}, err
	}
	updated := obj.DeepCopy()
	updated.Spec = scheduleSpec(t, dest, req)
	updated.Spec.VMCluster = obj.Spec.VMCluster
	// A merge patch with the object's resourceVersion: a concurrent change
	// is a 409, never silently overwritten.
	if err := s.Writer.Patch(ctx, updated, client.MergeFromWithOptions(obj, client.MergeFromWithOptimisticLock{})); err != nil {
		return BackupSchedule{}, apierror.FromKubernetes(err)
	}
	auth.RecordTarget(ctx, scheduleRef(updated), "UpdatedThroughAPI", "Updated")
	gen := updated.Generation
	cachewait.For(ctx, s.Reader, client.ObjectKeyFromObject(updated), s.CacheWait, func(c *opsv1.ClusterBackupSchedule) bool { return c != nil && c.Generation >= gen })
	return toSchedule(updated), nil
}

// DeleteSchedule deletes a schedule. Its backups go with it (owner
// references); their deletionPolicy Retain keeps their data.
func (s *Service) DeleteSchedule(ctx context.Context, vmclusterID, id string) (ScheduleDeleteResponse, error) {
	t, err := s.resolve(ctx, vmclusterID)
	if err != nil {
		return ScheduleDeleteResponse{}, err
	}
	obj, err := s.findSchedule(ctx, t, id)
	if err != nil {
		return ScheduleDeleteResponse{}, err
	}
	if err := s.Writer.Delete(ctx, obj, client.Preconditions{UID: &obj.UID}); err != nil && !apierrors.IsNotFound(err) {
		return ScheduleDeleteResponse{}, apierror.FromKubernetes(err)
	}
	auth.RecordTarget(ctx, scheduleRef(obj), "DeletedThroughAPI", "Deleted")
	uid := obj.UID
	cachewait.For(ctx, s.Reader, client.ObjectKeyFromObject(obj), s.CacheWait, func(c *opsv1.ClusterBackupSchedule) bool { return c == nil || c.UID != uid })
	return ScheduleDeleteResponse{ID: string(obj.UID), Name: toSchedule(obj).Name, Result: ResultDeleted}, nil
}

// toSchedule is the REST view of a ClusterBackupSchedule.
func toSchedule(o *opsv1.ClusterBackupSchedule) BackupSchedule {
	vm := o.Labels[vmclusters.LabelVMCluster]
	ns, name := o.VMClusterKey()
	out := BackupSchedule{
		Name:            vmclusters.CollectionPrefix + vm + "/" + SchedulesCollectionID + "/" + o.Name,
		ID:              string(o.UID),
		VMCluster:       vmclusters.CollectionPrefix + vm,
		VMClusterID:     o.Labels[opsv1.LabelVMClusterID],
		Target:          ObjectRef{Namespace: ns, Name: name},
		Schedule:        o.Spec.Schedule,
		Destination:     Destination{URL: o.Spec.Destination.URL},
		Concurrency:     o.Spec.Concurrency,
		KeepLast:        o.Spec.KeepLast,
		KeepDays:        o.Spec.KeepDays,
		Suspend:         o.Spec.Suspend,
		State:           "PENDING",
		RetainedBackups: append([]string{}, o.Status.Retained...),
		DeletedBackups:  o.Status.DeletedTotal,
		CreateTime:      formatTime(&o.CreationTimestamp),
		LastBackup:      o.Status.LastBackup,

		LastScheduleTime:     formatTime(o.Status.LastScheduleTime),
		NextScheduleTime:     formatTime(o.Status.NextScheduleTime),
		LastSuccessfulBackup: o.Status.LastSuccessfulBackup,
		LastSuccessfulTime:   formatTime(o.Status.LastSuccessfulTime),
	}
	if ref := o.Spec.Destination.CredentialsSecretRef; ref != nil {
		out.Destination.CredentialsSecret, out.Destination.CredentialsSecretKey = ref.Name, ref.Key
	}
	if c := apimeta.FindStatusCondition(o.Status.Conditions, opsv1.ReadyCondition); c != nil && c.ObservedGeneration == o.Generation {
		out.Message = c.Message
		switch {
		case c.Status == metav1.ConditionFalse:
			out.State = "INVALID"
		case o.Spec.Suspend:
			out.State = "SUSPENDED"
		default:
			out.State = "ACTIVE"
		}
	}
	return out
}
