package vmclusterops

import (
	"cmp"
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/auth"
	"github.com/tidbcloud/ops-server/apiserver/internal/cachewait"
	"github.com/tidbcloud/ops-server/apiserver/internal/idempotency"
	"github.com/tidbcloud/ops-server/apiserver/internal/listing"
	"github.com/tidbcloud/ops-server/apiserver/internal/lookup"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// Reasons of the operation errors (ErrorInfo.reason).
const (
	ReasonNotFound          = "OPERATION_NOT_FOUND"
	ReasonActive            = "OPERATION_ACTIVE"
	ReasonFinished          = "OPERATION_FINISHED"
	ReasonVMClusterDeleting = "VMCLUSTER_DELETING"
	ReasonOtherNamespace    = "VMCLUSTER_IN_OTHER_NAMESPACE"
)

// VMClusters resolves a vmcluster id; *vmclusters.Service implements it.
type VMClusters interface {
	Get(ctx context.Context, id string) (vmclusters.VMCluster, error)
}

// Service decides; it reads from the informer cache and writes to the API
// server.
type Service struct {
	// Reader is the informer cache (VMClusterOperations of Namespace).
	Reader client.Reader
	// Writer writes to the API server.
	Writer client.Client
	// Namespace of the VMClusterOperation objects: the vmclusters'
	// namespace (an operation may only target a VMCluster in its own).
	Namespace  string
	VMClusters VMClusters
	// Caller names the authenticated caller (initiated-by annotation).
	Caller func(context.Context) string
	// CacheWait bounds the wait for the cache to see a write (default 5s).
	CacheWait time.Duration
}

func notFound(id string) *apierror.Error {
	if len(id) > 80 {
		id = id[:80] + "..."
	}
	return apierror.NotFound(ReasonNotFound, "operation %q not found", id).WithMetadata("operationId", id)
}

func (s *Service) target(ctx context.Context, vmclusterID string) (target, vmclusters.VMCluster, error) {
	v, err := s.VMClusters.Get(ctx, vmclusterID)
	if err != nil {
		return target{}, v, err
	}
	return targetOf(v), v, nil
}

// replication reads vmstorage.replicaCount (0 when unknown) and
// replicationFactor (1 when unset) from the values Helm applies.
func replication(v vmclusters.VMCluster) (storage, factor int32) {
	var values map[string]any
	if len(v.Values) == 0 || json.Unmarshal(v.Values, &values) != nil {
		return 0, 1
	}
	factor = 1
	if n, ok := int32Of(values["replicationFactor"]); ok && n > 0 {
		factor = n
	}
	if s, ok := values["vmstorage"].(map[string]any); ok {
		if n, ok := int32Of(s["replicaCount"]); ok && n > 0 {
			storage = n
		}
	}
	return storage, factor
}

// Create creates (or with dryRun only renders) an operation on a
// vmcluster. With an idempotency key the object's name derives from it: a
// retry of the same request returns the operation (created false), another
// request with the key is a 409.
func (s *Service) Create(ctx context.Context, vmclusterID string, req *Request, key string, dryRun bool) (any, bool, error) {
	t, v, err := s.target(ctx, vmclusterID)
	if err != nil {
		return nil, false, err
	}
	if v.Status == vmclusters.StatusDeleting {
		return nil, false, apierror.FailedPrecondition(ReasonVMClusterDeleting, "vmcluster %q is being deleted", t.Name)
	}
	if t.Namespace != s.Namespace {
		return nil, false, apierror.FailedPrecondition(ReasonOtherNamespace,
			"vmcluster %q runs in namespace %s, but operations are created in %s: an operation may only target a vmcluster in its own namespace", t.Name, t.Namespace, s.Namespace)
	}
	if h := req.HorizontalScaling; h != nil && h.VMStorage != nil {
		storage, factor := replication(v)
		if p := opsv1.ReplicationRiskProblem(storage, int32(*h.VMStorage), factor, req.AcknowledgeReplicationRisk); p != "" {
			return nil, false, apierror.InvalidArgument("the operation request is refused", apierror.Violation("horizontal_scaling.vmstorage", "%s", p))
		}
	}
	obj := &opsv1.VMClusterOperation{
		TypeMeta:   metav1.TypeMeta{APIVersion: opsv1.GroupVersion.String(), Kind: opsv1.VMClusterOperationKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Labels: objectLabels(t), Annotations: map[string]string{}},
		Spec:       toSpec(t, req),
	}
	idempotency.SetName(obj, "op-", t.Name, key)
	auth.StampCaller(ctx, s.Caller, obj)
	same := func(existing *opsv1.VMClusterOperation) bool {
		return existing.Labels[opsv1.LabelVMClusterID] == obj.Labels[opsv1.LabelVMClusterID] &&
			equality.Semantic.DeepEqual(specForCompare(existing.Spec), specForCompare(obj.Spec))
	}
	conflict := idempotency.Reused(key, "operation", "operation")
	if key != "" {
		// A retry finds its operation before the one-active check (its
		// operation may be the active one) and before a dry run.
		if existing, found, err := idempotency.Replay(ctx, s.Writer, obj, key, same, conflict); found || err != nil {
			return replayed(existing, err)
		}
	}
	if active, err := s.active(ctx, t); err != nil || active != nil {
		if err != nil {
			return nil, false, err
		}
		return nil, false, apierror.Aborted(ReasonActive,
			"vmcluster %q has an active operation, %s (%s, phase %s); one operation at a time per vmcluster: wait for it, or cancel it", t.Name, active.Name, active.Spec.Type, phaseOf(active)).
			WithMetadata("operationId", active.Name)
	}
	if dryRun {
		obj.Status = opsv1.VMClusterOperationStatus{}
		return obj, false, nil
	}
	if existing, again, err := idempotency.Create(ctx, s.Writer, obj, key, same, conflict); again || err != nil {
		return replayed(existing, err)
	}
	auth.RecordTarget(ctx, objectRef(obj), "CreatedThroughAPI", "Created")
	logr.FromContextOrDiscard(ctx).Info("Created VMClusterOperation", "vmclusterOperation", klog.KObj(obj), "uid", obj.UID, "vmcluster", t.Name)
	uid := obj.UID
	cachewait.For(ctx, s.Reader, client.ObjectKeyFromObject(obj), s.CacheWait, func(c *opsv1.VMClusterOperation) bool { return c != nil && c.UID == uid })
	return toOperation(obj), true, nil
}

// replayed is the answer of a create that found its operation (created
// false), or its error.
func replayed(existing *opsv1.VMClusterOperation, err error) (any, bool, error) {
	if err != nil {
		return nil, false, err
	}
	return toOperation(existing), false, nil
}

// specForCompare drops what may change after creation.
func specForCompare(s opsv1.VMClusterOperationSpec) opsv1.VMClusterOperationSpec {
	s.Paused, s.Cancel = false, false
	return s
}

// active returns the non-terminal operation of t, if any.
func (s *Service) active(ctx context.Context, t target) (*opsv1.VMClusterOperation, error) {
	items, err := s.list(ctx, t)
	if err != nil {
		return nil, err
	}
	sort.Slice(items, func(i, j int) bool { return older(&items[i], &items[j]) })
	for i := range items {
		if !items[i].Status.Phase.IsTerminal() && items[i].DeletionTimestamp == nil {
			return &items[i], nil
		}
	}
	return nil, nil
}

func objectRef(o *opsv1.VMClusterOperation) corev1.ObjectReference {
	return corev1.ObjectReference{
		APIVersion: opsv1.GroupVersion.String(), Kind: opsv1.VMClusterOperationKind,
		Namespace: o.Namespace, Name: o.Name, UID: o.UID, ResourceVersion: o.ResourceVersion,
	}
}

func (s *Service) list(ctx context.Context, t target) ([]opsv1.VMClusterOperation, error) {
	list := &opsv1.VMClusterOperationList{}
	if err := s.Reader.List(ctx, list, client.InNamespace(s.Namespace), client.MatchingLabels(t.selector())); err != nil {
		return nil, apierror.FromKubernetes(err)
	}
	return list.Items, nil
}

// find returns the operation named, or with the UID, id, of t.
func (s *Service) find(ctx context.Context, t target, id string) (*opsv1.VMClusterOperation, error) {
	return lookup.Find(ctx, s.Reader, s.Namespace, id, t.selector(), notFound(id), func() ([]opsv1.VMClusterOperation, error) {
		return s.list(ctx, t)
	})
}

// Get returns an operation of a vmcluster by name or id.
func (s *Service) Get(ctx context.Context, vmclusterID, opID string) (Operation, error) {
	t, _, err := s.target(ctx, vmclusterID)
	if err != nil {
		return Operation{}, err
	}
	obj, err := s.find(ctx, t, opID)
	if err != nil {
		return Operation{}, err
	}
	return toOperation(obj), nil
}

// List returns one page of the operations of a vmcluster, newest first,
// filtered by type and phase.
func (s *Service) List(ctx context.Context, vmclusterID string, req ListRequest) (ListResponse, error) {
	t, _, err := s.target(ctx, vmclusterID)
	if err != nil {
		return ListResponse{}, err
	}
	if err := req.After.Check(t.ID, req.filter()); err != nil {
		return ListResponse{}, err
	}
	all, err := s.list(ctx, t)
	if err != nil {
		return ListResponse{}, err
	}
	items := all[:0]
	for _, o := range all {
		if (req.Type == "" || string(o.Spec.Type) == req.Type) && (req.Phase == "" || phaseOf(&o) == req.Phase) {
			items = append(items, o)
		}
	}
	compare, after := listing.By(listing.KeyOf[*opsv1.VMClusterOperation], newestFirst, req.After.Key())
	page, more := listing.Page(listing.Pointers(items), compare, after, req.PageSize)
	out := ListResponse{Operations: make([]Operation, 0, len(page))}
	for _, o := range page {
		out.Operations = append(out.Operations, toOperation(o))
	}
	if more {
		last := page[len(page)-1]
		out.NextPageToken = listing.Cursor{Created: last.CreationTimestamp.Unix(), Name: last.Name, VMCluster: t.ID, Filter: req.filter()}.Token()
	}
	return out, nil
}

// newestFirst is the order of the list: newest first, equal creation
// seconds by name descending (the reverse of older).
func newestFirst(a, b listing.Key) int {
	return cmp.Or(cmp.Compare(b.Created, a.Created), strings.Compare(b.Name, a.Name))
}

// older orders oldest first; equal creation seconds by name.
func older(a, b *opsv1.VMClusterOperation) bool {
	ta, tb := a.CreationTimestamp.Unix(), b.CreationTimestamp.Unix()
	if ta != tb {
		return ta < tb
	}
	return a.Name < b.Name
}

// Pause, Resume and Cancel change spec.paused or spec.cancel of a
// non-terminal operation (a merge patch, so they never fight the
// operator's status writes).
func (s *Service) Pause(ctx context.Context, vmclusterID, opID string) (Operation, error) {
	return s.patchSpec(ctx, vmclusterID, opID, "PausedThroughAPI", `{"spec":{"paused":true}}`)
}

// Resume clears spec.paused.
func (s *Service) Resume(ctx context.Context, vmclusterID, opID string) (Operation, error) {
	return s.patchSpec(ctx, vmclusterID, opID, "ResumedThroughAPI", `{"spec":{"paused":false}}`)
}

// Cancel sets spec.cancel: the operator stops at the next safe point.
func (s *Service) Cancel(ctx context.Context, vmclusterID, opID string) (Operation, error) {
	return s.patchSpec(ctx, vmclusterID, opID, "CancelledThroughAPI", `{"spec":{"cancel":true}}`)
}

func (s *Service) patchSpec(ctx context.Context, vmclusterID, opID, reason, patch string) (Operation, error) {
	t, _, err := s.target(ctx, vmclusterID)
	if err != nil {
		return Operation{}, err
	}
	obj, err := s.find(ctx, t, opID)
	if err != nil {
		return Operation{}, err
	}
	if obj.Status.Phase.IsTerminal() {
		return Operation{}, apierror.FailedPrecondition(ReasonFinished, "operation %s already finished (phase %s)", obj.Name, obj.Status.Phase)
	}
	live := obj.DeepCopy()
	if err := s.Writer.Patch(ctx, live, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return Operation{}, apierror.FromKubernetes(err)
	}
	auth.RecordTarget(ctx, objectRef(live), reason, reason)
	rv := live.ResourceVersion
	cachewait.For(ctx, s.Reader, client.ObjectKeyFromObject(live), s.CacheWait, func(c *opsv1.VMClusterOperation) bool { return c != nil && atLeast(c.ResourceVersion, rv) })
	return toOperation(live), nil
}

// atLeast reports whether resourceVersion a is rv or later. Kubernetes
// resourceVersions are etcd revisions (decimal integers) here: compared as
// numbers ("1000" is after "999"), and as equal strings when either is not
// a number.
func atLeast(a, rv string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(rv, 10, 64)
	if errA != nil || errB != nil {
		return a == rv
	}
	return x >= y
}
