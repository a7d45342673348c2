package upgrades

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/auth"
	"github.com/tidbcloud/ops-server/apiserver/internal/idempotency"
	"github.com/tidbcloud/ops-server/apiserver/internal/listing"
	"github.com/tidbcloud/ops-server/apiserver/internal/objindex"
	"github.com/tidbcloud/ops-server/apiserver/internal/server"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	"github.com/tidbcloud/ops-server/apiserver/internal/watch"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// Service decides; it reads from the informer cache and writes to the API
// server.
type Service struct {
	Reader client.Reader
	Writer client.Client
	// Live reads what the informer cache does not hold (Events, Nodes);
	// nil: Reader.
	Live      client.Reader
	Namespace string
	// Indexed says Reader is an informer cache with the indexes of
	// IndexFields registered; without it gets by id and filtered lists
	// scan the namespace.
	Indexed   bool
	Providers *cloud.Registry
	// Caller names the authenticated caller of a request (for the
	// initiated-by annotation); nil or "" when unknown.
	Caller func(context.Context) string
	// VMClusters resolves the vmcluster a node-group upgrade names as its
	// rollout target; nil refuses every named target.
	VMClusters VMClusters
	// Watch streams the list's changes (?watch=true); nil: a watch is a
	// 503.
	Watch *watch.Hub
	// Index, optional, serves List, Get and find from the informer's own
	// objects once it has synced (a list is a binary search in its
	// snapshot sorted by Order, not a copy of every cached operation);
	// Views keeps the API view of each of its
	// operations, with its JSON encoding, per version (nil: translated
	// and encoded per request).
	Index *objindex.Index[*opsv1.ClusterUpgradeOperation]
	Views *objindex.Memo[*server.Encoded[Operation]]
}

// encoded is toOperation of o and its encoding, kept per version when
// s.Views is set. The result is shared: callers must not modify it.
func (s *Service) encoded(o *opsv1.ClusterUpgradeOperation) *server.Encoded[Operation] {
	return s.Views.Get(o, func() *server.Encoded[Operation] { return server.Encode(toOperation(o)) })
}

// VMClusters resolves a vmcluster id (UID or name) the way the vmclusters
// API does: a NotFound error when there is none. *vmclusters.Service
// implements it.
type VMClusters interface {
	Get(ctx context.Context, id string) (vmclusters.VMCluster, error)
}

// Create creates an operation. With an idempotency key the object name is
// derived from the key, so a retry finds the operation its first attempt
// created: the same request returns it (even while it is the cluster's
// active operation), a different one is a 409. At most one operation per
// cluster is active: while another one is not finished, the answer is a
// 409 naming it (see lock.go).
func (s *Service) Create(ctx context.Context, req *Request, key string) (Operation, bool, error) {
	req, err := s.checkCloud(ctx, req)
	if err != nil {
		return Operation{}, false, err
	}
	if err := s.resolveTargets(ctx, req); err != nil {
		return Operation{}, false, err
	}
	obj := s.build(ctx, req, key)
	same := func(existing *opsv1.ClusterUpgradeOperation) bool {
		return equality.Semantic.DeepEqual(specForCompare(requestedSpec(existing)), specForCompare(requestedSpec(obj)))
	}
	conflict := idempotency.Reused(key, "upgrade", "operation")
	if key != "" {
		// A retry finds its operation before the lock: it may be the
		// cluster's active one.
		if existing, found, err := idempotency.Replay(ctx, s.Writer, obj, key, same, conflict); found || err != nil {
			return replayed(existing, err)
		}
	} else {
		obj.GenerateName, obj.Name = "", randomName()
	}
	lease, err := s.lock(ctx, obj)
	if err != nil {
		return Operation{}, false, err
	}
	if existing, again, err := idempotency.Create(ctx, s.Writer, obj, key, same, conflict); again || err != nil {
		s.unlock(ctx, lease, obj.Name)
		return replayed(existing, err)
	}
	ok, err := s.confirm(ctx, lease)
	if err != nil || !ok {
		// Our claim was taken over while the create was in flight: the
		// other request's operation is the cluster's active one.
		_ = s.Writer.Delete(ctx, obj, client.Preconditions{UID: &obj.UID})
		if err != nil {
			return Operation{}, false, apierror.FromKubernetes(err)
		}
		return Operation{}, false, apierror.Aborted(ReasonUpgradeActive, "another upgrade operation of cluster %s was created concurrently; retry the request", clusterKey(obj))
	}
	auth.RecordTarget(ctx, objectRef(obj), "CreatedThroughAPI", "Created")
	return toOperation(obj), true, nil
}

// replayed is the answer of a create that found the operation an earlier
// request with its idempotency key created (created false), or its error.
func replayed(existing *opsv1.ClusterUpgradeOperation, err error) (Operation, bool, error) {
	if err != nil {
		return Operation{}, false, err
	}
	return toOperation(existing), false, nil
}

// objectRef names an operation for audit lines and Events.
func objectRef(o *opsv1.ClusterUpgradeOperation) corev1.ObjectReference {
	return corev1.ObjectReference{
		APIVersion: opsv1.GroupVersion.String(), Kind: opsv1.ClusterUpgradeOperationKind,
		Namespace: o.Namespace, Name: o.Name, UID: o.UID, ResourceVersion: o.ResourceVersion,
	}
}

func specForCompare(s opsv1.ClusterUpgradeOperationSpec) opsv1.ClusterUpgradeOperationSpec {
	s.Paused, s.Cancel = false, false
	return s
}

// DryRun returns the ClusterUpgradeOperation Create would make, as the
// API server returns it from a server-side dry-run create (its validation
// and defaults applied), cut to what a manifest holds: apiVersion, kind,
// metadata (name, namespace, labels, annotations) and spec. The name is
// concrete, so `kubectl apply -f` of the output creates the operation
// under the name it shows: derived from the idempotency key as Create
// does, or else a fresh random name. A dry run takes no lock and reads no
// earlier request: it writes nothing.
func (s *Service) DryRun(ctx context.Context, req *Request, key string) (Manifest, error) {
	req, err := s.checkCloud(ctx, req)
	if err != nil {
		return Manifest{}, err
	}
	if err := s.resolveTargets(ctx, req); err != nil {
		return Manifest{}, err
	}
	obj := s.build(ctx, req, key)
	if key == "" {
		obj.GenerateName, obj.Name = "", randomName()
	}
	if err := s.Writer.Create(ctx, obj, client.DryRunAll); err != nil {
		return Manifest{}, apierror.FromKubernetes(err)
	}
	return toManifest(obj), nil
}

// checkCloud refuses, at request time, an operation the operator could
// not carry out for lack of configuration: a provider that is not
// configured, or a cluster whose cloud identity (GKE project, AKS
// subscription and resource group, ACK cluster id) is not mapped. It
// returns the request with its target version resolved against the
// versions the cloud offers the cluster, for a provider that needs its own
// full versions (ACK; see resolveTarget). Without a registry (tests of
// validation alone) nothing is checked.
func (s *Service) checkCloud(ctx context.Context, req *Request) (*Request, error) {
	if s.Providers == nil {
		return req, nil
	}
	p, ref, err := s.Providers.Resolve(req.CloudProvider, req.K8sClusterName, req.Region)
	if err != nil {
		return nil, apierror.FromCloudResolve(err)
	}
	return resolveTarget(ctx, p, ref, req)
}

// ReasonVMClusterNotFound is the reason of a request whose rollout target
// does not exist (ops-operator's preflight fails a ClusterUpgradeOperation
// with reason VMClusterNotFound for the same).
const ReasonVMClusterNotFound = "VMCLUSTER_NOT_FOUND"

// resolveTargets resolves, at request time, the vmcluster each node-group
// upgrade names as its rollout target to its VMCluster, and refuses one
// that does not exist or is being deleted, one field violation per
// node-group upgrade. An omitted target (observability/vmcluster, which
// need not be a vmcluster of this API) is checked by ops-operator's
// preflight, before any cloud call.
func (s *Service) resolveTargets(ctx context.Context, req *Request) error {
	var v []apierror.FieldViolation
	for i := range req.NodeGroupUpgrades {
		n := &req.NodeGroupUpgrades[i]
		if n.VMCluster == "" {
			continue
		}
		field := fmt.Sprintf("nodeGroupUpgrades[%d].vmCluster", i)
		if s.VMClusters == nil {
			v = append(v, apierror.Violation(field, "this server does not serve vmclusters; omit vmCluster"))
			continue
		}
		vmc, err := s.VMClusters.Get(ctx, n.VMCluster)
		if e, ok := apierror.As(err); ok && e.Code == http.StatusNotFound {
			v = append(v, apierror.Violation(field, "vmcluster %q does not exist", n.VMCluster))
			continue
		}
		if err != nil {
			return err
		}
		if vmc.Status == vmclusters.StatusDeleting {
			v = append(v, apierror.Violation(field, "vmcluster %q is being deleted", n.VMCluster))
			continue
		}
		n.vmClusterRef = &opsv1.VMClusterReference{Namespace: vmc.HelmReleaseInfo.ReleaseNamespace, Name: vmc.HelmReleaseInfo.ReleaseName}
	}
	if len(v) > 0 {
		return apierror.InvalidArgument("the rollout target of the upgrade request does not exist", v...).WithReason(ReasonVMClusterNotFound)
	}
	return nil
}

func (s *Service) build(ctx context.Context, req *Request, key string) *opsv1.ClusterUpgradeOperation {
	obj := &opsv1.ClusterUpgradeOperation{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   s.Namespace,
			Labels:      map[string]string{LabelCluster: opsv1.ClusterNameLabelValue(req.K8sClusterName)},
			Annotations: map[string]string{},
		},
		Spec: toSpec(req),
	}
	if req.requestedVersion != "" {
		obj.Annotations[AnnotationRequestedVersion] = req.requestedVersion
	}
	if key != "" {
		obj.Name = idempotency.Name("upgrade-", key)
		idempotency.Annotate(obj, key)
	} else {
		obj.GenerateName = "upgrade-"
	}
	auth.StampCaller(ctx, s.Caller, obj)
	return obj
}

// Get returns an operation by name or id (UID).
func (s *Service) Get(ctx context.Context, id string) (Operation, error) {
	e, err := s.GetEncoded(ctx, id)
	if err != nil {
		return Operation{}, err
	}
	return e.View, nil
}

// GetEncoded is Get with the view's JSON encoding (shared: callers must
// not modify either).
func (s *Service) GetEncoded(ctx context.Context, id string) (*server.Encoded[Operation], error) {
	obj, err := s.find(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.encoded(obj), nil
}

func (s *Service) find(ctx context.Context, id string) (*opsv1.ClusterUpgradeOperation, error) {
	if id == "" || len(id) > 253 {
		return nil, notFound(id)
	}
	if s.Index != nil && s.Index.Synced() {
		if o, ok := s.Index.Get(id); ok {
			return o.DeepCopy(), nil
		}
		if o, ok := s.Index.GetByUID(id); ok {
			return o.DeepCopy(), nil
		}
	}
	obj := &opsv1.ClusterUpgradeOperation{}
	err := s.Reader.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: id}, obj)
	if err == nil {
		return obj, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, apierror.FromKubernetes(err)
	}
	list := &opsv1.ClusterUpgradeOperationList{}
	// The shared cached objects, read only: only the match is copied.
	opts := []client.ListOption{client.InNamespace(s.Namespace), client.UnsafeDisableDeepCopy}
	if s.Indexed {
		opts = append(opts, client.MatchingFields{uidIndex: id})
	}
	if err := s.Reader.List(ctx, list, opts...); err != nil {
		return nil, apierror.FromKubernetes(err)
	}
	for i := range list.Items {
		if string(list.Items[i].UID) == id {
			return list.Items[i].DeepCopy(), nil
		}
	}
	return nil, notFound(id)
}

func notFound(id string) error {
	return apierror.NotFound(apierror.ReasonNotFound, "upgrade operation %q not found", id)
}

// ListRequest is a validated list query.
type ListRequest struct {
	K8sClusterName string
	Status         string
	PageSize       int
	After          cursor
	// Watch streams changes instead of answering a page.
	Watch bool
}

type cursor struct {
	Created int64  `json:"c"`
	Name    string `json:"n"`
	Cluster string `json:"k,omitempty"`
	Status  string `json:"s,omitempty"`
}

var phases = []string{"Pending", "Scheduled", "Running", "Paused", "AwaitingApproval", "Succeeded", "Failed", "Cancelling", "Cancelled"}

// ParseList validates the list query.
func ParseList(q url.Values) (ListRequest, *apierror.Error) {
	var v []apierror.FieldViolation
	r := ListRequest{K8sClusterName: q.Get("k8sClusterName"), Status: q.Get("status"), PageSize: listing.DefaultPageSize}
	w, wv := watch.ParseWatch(q)
	if wv != nil {
		v = append(v, *wv)
	}
	r.Watch = w
	v = append(v, listing.CamelCase.WatchViolations(q, w)...)
	if r.Status != "" && !oneOf(r.Status, phases) {
		v = append(v, apierror.Violation("status", "must be one of %v", phases))
	}
	size, pv := listing.CamelCase.Parse(q, func(tok string) error {
		c, ok := decodeCursor(tok)
		r.After = c
		if !ok || c.Cluster != r.K8sClusterName || c.Status != r.Status {
			return listing.ErrInvalid
		}
		return nil
	})
	r.PageSize = size
	v = append(v, pv...)
	if len(v) > 0 {
		return r, apierror.InvalidArgument("invalid list query", v...)
	}
	return r, nil
}

func encodeCursor(c cursor) string { return listing.Encode(c) }

func decodeCursor(tok string) (cursor, bool) {
	var c cursor
	if listing.Decode(tok, &c) != nil || c.Name == "" {
		return c, false
	}
	return c, true
}

// List returns one page, newest first (creation time, then name).
func (s *Service) List(ctx context.Context, req ListRequest) (ListResponse, error) {
	items, next, err := s.ListEncoded(ctx, req)
	if err != nil {
		return ListResponse{}, err
	}
	return listResponse(items, next), nil
}

// listResponse is the ListResponse of a page's views and its next page
// token.
func listResponse(items []*server.Encoded[Operation], next string) ListResponse {
	out := ListResponse{UpgradeOperations: make([]Operation, 0, len(items)), NextPageToken: next}
	for _, e := range items {
		out.UpgradeOperations = append(out.UpgradeOperations, e.View)
	}
	return out
}

// ListEncoded is List as the page's views with their encodings, in order
// (shared: callers must not modify them), and the next page's token.
func (s *Service) ListEncoded(ctx context.Context, req ListRequest) ([]*server.Encoded[Operation], string, error) {
	var from *listing.Key
	if req.After.Name != "" {
		from = &listing.Key{Created: req.After.Created, Name: req.After.Name}
	}
	compare, after := listing.NewestFirst(listing.KeyOf[*opsv1.ClusterUpgradeOperation], from)
	keep := func(o *opsv1.ClusterUpgradeOperation) bool { return matches(o, req) }
	var page []*opsv1.ClusterUpgradeOperation
	var more bool
	if s.Index != nil && s.Index.Synced() {
		// Sorted newest first already (Order): the page is a binary
		// search and the page's operations.
		page, more = listing.PageSorted(s.Index.Sorted(), after, keep, req.PageSize)
	} else {
		all, err := s.listShared(ctx, req.K8sClusterName)
		if err != nil {
			return nil, "", err
		}
		items := all[:0]
		for _, o := range all {
			if keep(o) {
				items = append(items, o)
			}
		}
		page, more = listing.Page(items, compare, after, req.PageSize)
	}
	items := make([]*server.Encoded[Operation], 0, len(page))
	for _, o := range page {
		items = append(items, s.encoded(o))
	}
	next := ""
	if more {
		last := page[len(page)-1]
		next = encodeCursor(cursor{Created: last.CreationTimestamp.Unix(), Name: last.Name, Cluster: req.K8sClusterName, Status: req.Status})
	}
	return items, next, nil
}

// Order is the order of the list, newest first (listing.Key.Compare): the
// order of Index's snapshot.
func Order(a, b *opsv1.ClusterUpgradeOperation) int {
	return listing.KeyOf(a).Compare(listing.KeyOf(b))
}

// listShared returns the operations of the namespace (of one cluster
// name, if cluster is set, or more) from Reader without copies: callers
// read them and never modify them (without Index: tests, and a list
// before the index has synced).
func (s *Service) listShared(ctx context.Context, cluster string) ([]*opsv1.ClusterUpgradeOperation, error) {
	list := &opsv1.ClusterUpgradeOperationList{}
	opts := []client.ListOption{client.InNamespace(s.Namespace), client.UnsafeDisableDeepCopy}
	if s.Indexed && cluster != "" {
		opts = append(opts, client.MatchingFields{clusterIndex: cluster})
	}
	if err := s.Reader.List(ctx, list, opts...); err != nil {
		return nil, apierror.FromKubernetes(err)
	}
	out := make([]*opsv1.ClusterUpgradeOperation, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// Pause sets spec.paused. Pausing a paused operation answers 200 with it
// (a retried PUT gets the answer of the first); 409 only when the
// operation has finished or is being cancelled.
func (s *Service) Pause(ctx context.Context, id string) (Operation, error) {
	return s.setPaused(ctx, id, true)
}

// Resume clears spec.paused, with the same rules as Pause: resuming an
// operation that is not paused answers 200 with it.
func (s *Service) Resume(ctx context.Context, id string) (Operation, error) {
	return s.setPaused(ctx, id, false)
}

// maxWriteAttempts bounds the retries of a pause, resume or cancel whose write
// conflicted with the operator's (it patches the operation constantly).
const maxWriteAttempts = 5

func (s *Service) setPaused(ctx context.Context, id string, paused bool) (Operation, error) {
	obj, err := s.find(ctx, id)
	if err != nil {
		return Operation{}, err
	}
	for attempt := 1; ; attempt++ {
		phase := obj.Status.Phase
		switch {
		case phase.IsTerminal():
			return Operation{}, apierror.Aborted("OPERATION_FINISHED", "upgrade operation %s is %s; a finished operation cannot be paused or resumed", obj.Name, phase)
		case obj.Spec.Cancel:
			return Operation{}, apierror.Aborted("OPERATION_CANCELLING", "upgrade operation %s is being cancelled", obj.Name)
		case obj.Spec.Paused == paused:
			// Already as asked: nothing to write.
			return toOperation(obj), nil
		}
		patch := fmt.Sprintf(`{"metadata":{"resourceVersion":%q},"spec":{"paused":%t}}`, obj.ResourceVersion, paused)
		out := obj.DeepCopy()
		err := s.Writer.Patch(ctx, out, client.RawPatch(types.MergePatchType, []byte(patch)))
		if err == nil {
			if paused {
				auth.RecordTarget(ctx, objectRef(out), "PausedThroughAPI", "Paused")
			} else {
				auth.RecordTarget(ctx, objectRef(out), "ResumedThroughAPI", "Resumed")
			}
			return toOperation(out), nil
		}
		if !apierrors.IsConflict(err) || attempt >= maxWriteAttempts {
			return Operation{}, apierror.FromKubernetes(err)
		}
		// The operator changed the operation since it was read: read it
		// again from the API server (the cache may not have the change
		// yet) and decide again.
		fresh := &opsv1.ClusterUpgradeOperation{}
		if err := s.Writer.Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
			if apierrors.IsNotFound(err) {
				return Operation{}, apierror.FromKubernetes(err)
			}
			return Operation{}, fmt.Errorf("reading upgrade operation %s again: %w", obj.Name, err)
		}
		obj = fresh
	}
}

// Delete removes an operation that has not started or has finished, and
// asks a started one to cancel (the operator stops at the next safe point).
// Both writes are preconditioned on the resourceVersion read; when the
// operator changed the operation in between (it patches the operation
// constantly), the operation is read again and the decision made again,
// like setPaused, rather than answering the caller with a conflict.
func (s *Service) Delete(ctx context.Context, id string) (DeleteResponse, error) {
	obj, err := s.find(ctx, id)
	if err != nil {
		return DeleteResponse{}, err
	}
	for attempt := 1; ; attempt++ {
		resp, err := s.deleteOnce(ctx, obj)
		if err == nil || !apierrors.IsConflict(err) || attempt >= maxWriteAttempts {
			if err != nil {
				return DeleteResponse{}, apierror.FromKubernetes(err)
			}
			return resp, nil
		}
		fresh := &opsv1.ClusterUpgradeOperation{}
		if err := s.Writer.Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
			if apierrors.IsNotFound(err) {
				return DeleteResponse{}, apierror.FromKubernetes(err)
			}
			return DeleteResponse{}, fmt.Errorf("reading upgrade operation %s again: %w", obj.Name, err)
		}
		obj = fresh
	}
}

// deleteOnce is one attempt of Delete on obj as read; a conflict is
// returned as the Kubernetes error for Delete to retry.
func (s *Service) deleteOnce(ctx context.Context, obj *opsv1.ClusterUpgradeOperation) (DeleteResponse, error) {
	resp := DeleteResponse{ID: string(obj.UID), Name: obj.Name}
	notStarted := obj.Status.StartTime == nil && obj.Status.Phase != opsv1.UpgradePhaseCancelling
	if obj.Status.Phase.IsTerminal() || notStarted {
		err := s.Writer.Delete(ctx, obj, client.Preconditions{UID: &obj.UID, ResourceVersion: &obj.ResourceVersion})
		if err != nil && !apierrors.IsNotFound(err) {
			return DeleteResponse{}, err
		}
		auth.RecordTarget(ctx, objectRef(obj), "DeletedThroughAPI", "Deleted")
		resp.Result = "Deleted"
		return resp, nil
	}
	out := obj.DeepCopy()
	if !obj.Spec.Cancel {
		patch := fmt.Sprintf(`{"metadata":{"resourceVersion":%q},"spec":{"cancel":true}}`, obj.ResourceVersion)
		if err := s.Writer.Patch(ctx, out, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			return DeleteResponse{}, err
		}
	}
	auth.RecordTarget(ctx, objectRef(out), "CancelledThroughAPI", "Cancellation requested")
	op := toOperation(out)
	resp.Result, resp.Operation = "Cancelling", &op
	return resp, nil
}
