package vmclusters

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/auth"
	"github.com/tidbcloud/ops-server/apiserver/internal/listing"
	"github.com/tidbcloud/ops-server/apiserver/internal/server"
	"github.com/tidbcloud/ops-server/apiserver/internal/watch"
)

// Store is what the service needs from Kubernetes. Reads come from the
// informer cache (which only holds HelmReleases managed by ops-server);
// GetLive reads from the API server. Errors are Kubernetes API errors,
// wrapped.
type Store interface {
	// Get returns the managed HelmRelease name (NotFound if none).
	Get(ctx context.Context, name string) (*helmv2.HelmRelease, error)
	// GetByUID returns the managed HelmRelease with this UID (NotFound if
	// none).
	GetByUID(ctx context.Context, uid string) (*helmv2.HelmRelease, error)
	// List returns every managed HelmRelease, sorted by name. The items
	// (and the slice) may be the cache's own: callers read them and never
	// modify them.
	List(ctx context.Context) ([]*helmv2.HelmRelease, error)
	// GetLive reads the HelmRelease name from the API server, managed or
	// not.
	GetLive(ctx context.Context, name string) (*helmv2.HelmRelease, error)
	// CreateRelease creates hr and updates it from the response.
	CreateRelease(ctx context.Context, hr *helmv2.HelmRelease) error
	// PatchRelease applies an RFC 6902 JSON patch and updates hr from the
	// response.
	PatchRelease(ctx context.Context, hr *helmv2.HelmRelease, patch []byte) error
	// DeleteRelease deletes hr (if its UID, and with checkVersion its
	// resourceVersion, still match).
	DeleteRelease(ctx context.Context, hr *helmv2.HelmRelease, checkVersion bool) error
	// ApplySource creates or updates repo with server-side apply.
	ApplySource(ctx context.Context, repo *sourcev1.HelmRepository) error
	// DeleteSources deletes the managed HelmRepositories of a vmcluster.
	DeleteSources(ctx context.Context, name string) error
	// WaitForCache waits (bounded) until the cached HelmRelease name
	// satisfies done (called with nil when absent), so that a read after a
	// write sees the write.
	WaitForCache(ctx context.Context, name string, done func(*helmv2.HelmRelease) bool)
}

// Service implements the vmclusters operations.
type Service struct {
	Store      Store
	Translator Translator
	// Views keeps the views Get and List answer per release version; nil:
	// each request translates its releases.
	Views *Views
	// Work finds the backups and upgrades a DELETE must not break; nil:
	// none are looked for.
	Work Work
	// Now is the clock (injected in tests).
	Now func() time.Time
	// Seeder checks and creates the restore of a vmcluster created with
	// restore_from; nil: restore_from is refused.
	Seeder Seeder
	// Watch streams the list's changes (?watch=true); nil: a watch is a
	// 503.
	Watch *watch.Hub
	// Caller names the authenticated caller of a request (for the
	// initiated-by annotation); nil: none is recorded.
	Caller func(context.Context) string
}

// ReleaseRef names a HelmRelease for audit lines and Events.
func ReleaseRef(hr *helmv2.HelmRelease) corev1.ObjectReference {
	return corev1.ObjectReference{
		APIVersion: helmv2.GroupVersion.String(), Kind: helmv2.HelmReleaseKind,
		Namespace: hr.Namespace, Name: hr.Name, UID: hr.UID, ResourceVersion: hr.ResourceVersion,
	}
}

// Seeder is the restores API as a create with restore_from needs it.
type Seeder interface {
	// CheckSeed refuses (a 4xx naming restore_from.backup) a backup the
	// new vmcluster name with replicas vmstorage replicas cannot be
	// restored from, before anything is created.
	CheckSeed(ctx context.Context, name string, replicas int, backup string) error
	// EnsureSeed creates the ClusterRestore that seeds the vmcluster of
	// hr from backup (an existing one with the same spec is fine).
	EnsureSeed(ctx context.Context, hr *helmv2.HelmRelease, backup string) error
	// EnsureHold writes the hold ConfigMap of the new vmcluster name
	// (opsv1.SeedHoldConfigMap: replicas keys pre-held for its seeding
	// ClusterRestore) before its HelmRelease exists, so no vmstorage Pod
	// starts before its volume was restored.
	EnsureHold(ctx context.Context, name string, replicas int) error
	// SeedPending reports whether the hold ConfigMap of vmcluster name
	// still holds a replica for its seeding ClusterRestore (the restore
	// has not finished: a repeated create may ensure it again).
	SeedPending(ctx context.Context, name string) (bool, error)
}

// storageReplicas is vmstorage.replicaCount of values over the chart
// version's defaults.
func (s *Service) storageReplicas(version string, values []byte) int {
	count := func(m map[string]any) (int, bool) {
		vs, _ := m["vmstorage"].(map[string]any)
		switch n := vs["replicaCount"].(type) {
		case json.Number:
			i, err := n.Int64()
			return int(i), err == nil
		case float64:
			return int(n), true
		case int:
			return n, true
		case int64:
			return int(n), true
		}
		return 0, false
	}
	dec := json.NewDecoder(bytes.NewReader(values))
	dec.UseNumber()
	var v map[string]any
	if dec.Decode(&v) == nil {
		if n, ok := count(v); ok {
			return n
		}
	}
	if version == "" {
		version = s.Translator.Chart.DefaultVersion
	}
	if n, ok := count(s.Translator.Chart.DefaultsFor(version)); ok {
		return n
	}
	return 1
}

// Reasons of the vmcluster errors (ErrorInfo.reason).
const (
	ReasonNotFound         = "VMCLUSTER_NOT_FOUND"
	ReasonAlreadyExists    = "VMCLUSTER_ALREADY_EXISTS"
	ReasonDeleting         = "VMCLUSTER_DELETING"
	ReasonImmutable        = "FIELD_IMMUTABLE"
	ReasonNotManaged       = "NOT_MANAGED_BY_OPS_SERVER"
	ReasonNamespaceMissing = "NAMESPACE_NOT_FOUND"
	ReasonInvalidValues    = "INVALID_VALUES"
)

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func notFound(id string) *apierror.Error {
	return apierror.NotFound(ReasonNotFound, "vmcluster %q not found", truncate(id, 80)).WithMetadata("vmclusterId", truncate(id, 80))
}

// invalidValues is the 400 of values the chart refuses.
func invalidValues(vs []apierror.FieldViolation) *apierror.Error {
	return apierror.InvalidArgument("the values do not match the chart's values schema", vs...).WithReason(ReasonInvalidValues)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// Create creates the HelmRelease and its source. An identical repeat
// answers with the existing vmcluster; a different body for an existing
// name is a 409.
func (s *Service) Create(ctx context.Context, req CreateRequest) (VMCluster, error) {
	log := logr.FromContextOrDiscard(ctx)
	if msg := s.Translator.Chart.CheckVersion(req.Version); msg != "" {
		return VMCluster{}, apierror.InvalidArgument("the request is invalid", apierror.Violation("helm_release_info.version", "%s", msg))
	}
	if vs := s.Translator.Chart.CheckValues(req.Version, req.Values); len(vs) > 0 {
		return VMCluster{}, invalidValues(vs)
	}
	if req.RestoreFrom != nil {
		if s.Seeder == nil {
			return VMCluster{}, apierror.InvalidArgument("the request is invalid", apierror.Violation("restore_from", "restoring is not available on this server"))
		}
		replicas := s.storageReplicas(req.Version, req.Values)
		if err := s.Seeder.CheckSeed(ctx, req.Name, replicas, req.RestoreFrom.Backup); err != nil {
			return VMCluster{}, err
		}
		// Hold every vmstorage replica before the release exists (a
		// repeat for an existing release leaves its ConfigMap alone:
		// its restore may have released the replicas already).
		_, err := s.Store.GetLive(ctx, req.Name)
		switch {
		case apierrors.IsNotFound(err):
			if err := s.Seeder.EnsureHold(ctx, req.Name, replicas); err != nil {
				return VMCluster{}, err
			}
		case err != nil:
			return VMCluster{}, fmt.Errorf("reading HelmRelease %s: %w", req.Name, err)
		}
	}
	hr := s.Translator.Release(req, s.now())
	auth.StampCaller(ctx, s.Caller, hr)
	err := s.Store.CreateRelease(ctx, hr)
	if apierrors.IsAlreadyExists(err) {
		return s.createExisting(ctx, req)
	}
	if apierrors.IsNotFound(err) {
		// The only thing a create can miss is the namespace: a deployment
		// problem, not the caller's.
		return VMCluster{}, (&apierror.Error{Code: http.StatusInternalServerError, Status: apierror.StatusInternal,
			Reason: ReasonNamespaceMissing, Message: fmt.Sprintf("the vmcluster namespace %q does not exist; check the ops-apiserver configuration", hr.Namespace)}).WithCause(err)
	}
	if err != nil {
		return VMCluster{}, fmt.Errorf("creating HelmRelease %s: %w", klog.KObj(hr), err)
	}
	auth.RecordTarget(ctx, ReleaseRef(hr), "CreatedThroughAPI", "Created")
	log.Info("Created vmcluster", "helmRelease", klog.KObj(hr), "uid", hr.UID, "chartVersion", hr.Spec.Chart.Spec.Version)
	if req.RestoreFrom != nil {
		// The release is held until this restore exists and ran; a crash
		// before it is repaired by an identical retry (createExisting).
		if err := s.Seeder.EnsureSeed(ctx, hr, req.RestoreFrom.Backup); err != nil {
			return VMCluster{}, err
		}
	}
	if err := s.Store.ApplySource(ctx, s.Translator.Source(hr, s.now())); err != nil {
		// The release exists; an identical retry of the request ensures
		// the source again.
		return VMCluster{}, fmt.Errorf("applying the HelmRepository of %s: %w", klog.KObj(hr), err)
	}
	uid := hr.UID
	s.Store.WaitForCache(ctx, hr.Name, func(c *helmv2.HelmRelease) bool { return c != nil && c.UID == uid })
	return s.Translator.View(hr, true), nil
}

func (s *Service) createExisting(ctx context.Context, req CreateRequest) (VMCluster, error) {
	existing, err := s.Store.GetLive(ctx, req.Name)
	if apierrors.IsNotFound(err) {
		return VMCluster{}, apierror.Aborted(apierror.ReasonConflict, "vmcluster %q was deleted while it was being created; retry the request", req.Name)
	}
	if err != nil {
		return VMCluster{}, fmt.Errorf("reading existing HelmRelease %s: %w", req.Name, err)
	}
	switch {
	case !IsManaged(existing):
		return VMCluster{}, apierror.AlreadyExists(ReasonNotManaged,
			"a HelmRelease named %q exists and is not managed by ops-server", req.Name)
	case existing.DeletionTimestamp != nil:
		return VMCluster{}, apierror.AlreadyExists(ReasonDeleting,
			"vmcluster %q is being deleted; create it again once it is gone", req.Name)
	case !s.Translator.SameAsRequest(existing, req):
		return VMCluster{}, apierror.AlreadyExists(ReasonAlreadyExists,
			"vmcluster %q already exists with a different configuration", req.Name).
			WithMetadata("id", string(existing.UID))
	}
	// An identical repeat: make sure the source exists too (the first
	// attempt may have failed after creating the release).
	if err := s.Store.ApplySource(ctx, s.Translator.Source(existing, s.now())); err != nil {
		return VMCluster{}, fmt.Errorf("applying the HelmRepository of %s: %w", klog.KObj(existing), err)
	}
	// And the seeding restore, while a replica is still held for it
	// (once the holds are released the restore ran: never restore again).
	if req.RestoreFrom != nil {
		pending, err := s.Seeder.SeedPending(ctx, existing.Name)
		if err != nil {
			return VMCluster{}, err
		}
		if pending {
			if err := s.Seeder.EnsureSeed(ctx, existing, req.RestoreFrom.Backup); err != nil {
				return VMCluster{}, err
			}
		}
	}
	logr.FromContextOrDiscard(ctx).Info("Create repeated for an existing identical vmcluster", "helmRelease", klog.KObj(existing))
	return s.Translator.View(existing, true), nil
}

// resolve finds a vmcluster by id or name (Releases.Resolve).
func (s *Service) resolve(ctx context.Context, id string) (*helmv2.HelmRelease, error) {
	return s.releases().Resolve(ctx, id)
}

// Get returns one vmcluster with its values.
func (s *Service) Get(ctx context.Context, id string) (VMCluster, error) {
	e, err := s.GetEncoded(ctx, id)
	if err != nil {
		return VMCluster{}, err
	}
	return e.View, nil
}

// GetEncoded is Get with the view's JSON encoding (shared: callers must
// not modify either).
func (s *Service) GetEncoded(ctx context.Context, id string) (*server.Encoded[VMCluster], error) {
	hr, err := s.resolve(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.encoded(hr, true), nil
}

// List returns a page of vmclusters, by name, filtered by status.
func (s *Service) List(ctx context.Context, req ListRequest) (ListResponse, error) {
	items, next, err := s.ListEncoded(ctx, req)
	if err != nil {
		return ListResponse{}, err
	}
	return listResponse(items, next), nil
}

// listResponse is the ListResponse of a page's views and its next page
// token.
func listResponse(items []*server.Encoded[VMCluster], next string) ListResponse {
	page := make([]VMCluster, 0, len(items))
	for _, e := range items {
		page = append(page, e.View)
	}
	return ListResponse{VMClusters: page, NextPageToken: next}
}

// ListEncoded is List as the page's views with their encodings, in order
// (shared: callers must not modify them), and the next page's token.
func (s *Service) ListEncoded(ctx context.Context, req ListRequest) ([]*server.Encoded[VMCluster], string, error) {
	hrs, err := s.Store.List(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("listing HelmReleases: %w", err)
	}
	// The releases come sorted by name: the page starts at the token's
	// name (binary search) and only its releases are filtered and
	// translated. Filtering, copying or translating every release on every
	// request made a list's cost grow with the fleet.
	_, after := listing.ByName(func(hr *helmv2.HelmRelease) string { return hr.Name }, req.After)
	keep := func(hr *helmv2.HelmRelease) bool {
		return IsManaged(hr) && (req.Status == "" || StatusOf(hr).Status == req.Status)
	}
	selected, more := listing.PageSorted(hrs, after, keep, req.PageSize)
	next := ""
	if more {
		next = EncodePageToken(selected[len(selected)-1].Name, req.Status)
	}
	items := make([]*server.Encoded[VMCluster], 0, len(selected))
	for _, hr := range selected {
		items = append(items, s.encoded(hr, false))
	}
	return items, next, nil
}

// releases writes the service's HelmReleases.
func (s *Service) releases() Releases {
	return Releases{Store: s.Store, Kind: "vmcluster", Managed: IsManaged,
		NotFound: func(id string) error { return notFound(id) }}
}

// Update replaces the values of a vmcluster and optionally moves it to
// another chart version (a Helm upgrade by Flux). The etag precondition
// and the data-loss guards are checked on the object the patch carries
// the resourceVersion of, so they hold for the write; on a conflict the
// object is read again and checked again.
func (s *Service) Update(ctx context.Context, id string, req UpdateRequest) (VMCluster, error) {
	hr, err := s.resolve(ctx, id)
	if err != nil {
		return VMCluster{}, err
	}
	if err := s.checkIdentity(hr, req); err != nil {
		return VMCluster{}, err
	}
	if msg := s.Translator.Chart.CheckVersion(req.Version); msg != "" {
		return VMCluster{}, apierror.InvalidArgument("the request is invalid", apierror.Violation("helm_release_info.version", "%s", msg))
	}
	patched, err := s.releases().Patch(ctx, hr, id, req.Precondition, func(hr *helmv2.HelmRelease) ([]byte, error) {
		if err := s.checkUpdate(hr, req); err != nil {
			return nil, err
		}
		patch, err := s.Translator.UpdatePatch(hr, req.Values, req.Version, req.AllowDataLoss, s.now())
		if err != nil {
			return nil, apierror.Internal(err)
		}
		return patch, nil
	}, admissionRefusal)
	if err != nil {
		return VMCluster{}, err
	}
	// Ask the source to look again too, so a chart version published
	// since its last check is found now.
	if err := s.Store.ApplySource(ctx, s.Translator.Source(patched, s.now())); err != nil {
		return VMCluster{}, fmt.Errorf("applying the HelmRepository of %s: %w", klog.KObj(hr), err)
	}
	logr.FromContextOrDiscard(ctx).Info("Updated vmcluster", "helmRelease", klog.KObj(hr),
		"generation", patched.Generation, "chartVersion", patched.Spec.Chart.Spec.Version, "allowDataLoss", req.AllowDataLoss)
	s.releases().WaitForGeneration(ctx, patched)
	return s.Translator.View(patched, true), nil
}

// admissionRefusal answers an admission policy of the cluster refusing
// what the service's guards allowed (nil for any other Invalid error).
func admissionRefusal(err error) error {
	if !strings.Contains(err.Error(), "ValidatingAdmissionPolicy") {
		return nil
	}
	return apierror.FailedPrecondition(ReasonDataLoss,
		"the cluster's admission policy refused the change: %s", admissionMessage(err)).WithCause(err)
}

// admissionMessage is the policy's own message out of an admission
// denial (the part after "denied request: "), bounded.
func admissionMessage(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "denied request: "); i >= 0 {
		msg = msg[i+len("denied request: "):]
	}
	return truncate(msg, 400)
}

// checkUpdate decides whether req may be applied to hr: not while it is
// being deleted, only to a release with a chart template, and not when
// it would lose data without allow_data_loss.
func (s *Service) checkUpdate(hr *helmv2.HelmRelease, req UpdateRequest) error {
	if hr.DeletionTimestamp != nil {
		return apierror.FailedPrecondition(ReasonDeleting, "vmcluster %q is being deleted", hr.Name)
	}
	if hr.Spec.Chart == nil {
		return apierror.FailedPrecondition(ReasonNotManaged, "vmcluster %q has no chart template; it was not created by ops-server", hr.Name)
	}
	// The chart's schema first: the data-loss guards compare valid values.
	version := req.Version
	if version == "" {
		version = hr.Spec.Chart.Spec.Version
	}
	if vs := s.Translator.Chart.CheckValues(version, req.Values); len(vs) > 0 {
		return invalidValues(vs)
	}
	var current []byte
	if hr.Spec.Values != nil {
		current = hr.Spec.Values.Raw
	}
	oldValues, err := DecodeValues(current)
	if err != nil {
		// Values the API server accepted but that are no JSON object:
		// nothing to compare with, and nothing ops-server wrote.
		return apierror.FailedPrecondition(ReasonNotManaged, "vmcluster %q has values that are not a JSON object", hr.Name)
	}
	newValues, err := DecodeValues(req.Values)
	if err != nil {
		return apierror.Internal(fmt.Errorf("decoding validated values: %w", err))
	}
	oldVersion, newVersion := hr.Spec.Chart.Spec.Version, req.Version
	if newVersion == "" {
		newVersion = oldVersion
	}
	violations := CheckDataLoss(
		Effective{Values: oldValues, Defaults: s.Translator.Chart.DefaultsFor(oldVersion)},
		Effective{Values: newValues, Defaults: s.Translator.Chart.DefaultsFor(newVersion)},
		req.AllowDataLoss)
	if len(violations) > 0 {
		return apierror.InvalidArgument("the change would lose data or cannot be carried out on the existing volumes", violations...).
			WithReason(ReasonDataLoss)
	}
	return nil
}

// checkNotInUse refuses to delete a vmcluster whose VMCluster (named
// after the release, in the release namespace) a backup or a vmstorage
// rollout is working on.
func (s *Service) checkNotInUse(ctx context.Context, hr *helmv2.HelmRelease) error {
	if s.Work == nil {
		return nil
	}
	blockers, err := s.Work.Blockers(ctx, hr.GetReleaseNamespace(), hr.GetReleaseName())
	if err != nil {
		return fmt.Errorf("looking for work in progress on vmcluster %s: %w", hr.Name, err)
	}
	if len(blockers) == 0 {
		return nil
	}
	names := make([]string, 0, len(blockers))
	for _, b := range blockers {
		names = append(names, b.String())
	}
	first := blockers[0]
	return apierror.Aborted(ReasonInUse,
		"vmcluster %q cannot be deleted while work on it is in progress: %s; wait until it is finished or cancel it, then retry",
		hr.Name, strings.Join(names, ", ")).
		WithMetadata("blockerKind", first.Kind).
		WithMetadata("blockerNamespace", first.Namespace).
		WithMetadata("blockerName", first.Name)
}

// checkIdentity rejects a PUT body whose echoed identity fields differ
// from the target's.
func (s *Service) checkIdentity(hr *helmv2.HelmRelease, req UpdateRequest) error {
	var violations []apierror.FieldViolation
	check := func(field string, got *string, want string) {
		if got != nil && *got != want {
			violations = append(violations, apierror.Violation(field, "cannot be changed (is %q)", want))
		}
	}
	check("name", req.Name, hr.Name)
	check("id", req.ID, string(hr.UID))
	check("helm_release_info.release_name", req.ReleaseName, hr.GetReleaseName())
	check("helm_release_info.release_namespace", req.ReleaseNamespace, hr.GetReleaseNamespace())
	if hr.Spec.Chart != nil {
		check("helm_release_info.chart", req.Chart, hr.Spec.Chart.Spec.Chart)
	}
	if len(violations) > 0 {
		return apierror.InvalidArgument("the request changes fields that cannot be changed", violations...).WithReason(ReasonImmutable)
	}
	return nil
}

// Delete deletes the HelmRelease (helm-controller uninstalls the release,
// then removes its finalizer) and its source. Deleting a vmcluster that
// is already being deleted is accepted again. A vmcluster that a backup or
// an upgrade's vmstorage rollout is working on is not deleted (409 naming
// them). With an etag precondition the delete carries the resourceVersion
// the etag was checked on, retried on a conflict while the etag matches.
func (s *Service) Delete(ctx context.Context, id string, pre Precondition) (VMCluster, error) {
	hr, err := s.resolve(ctx, id)
	if err != nil {
		return VMCluster{}, err
	}
	if hr, err = s.releases().Delete(ctx, hr, id, pre, s.checkNotInUse); err != nil {
		return VMCluster{}, err
	}
	v := s.Translator.View(hr, true)
	v.Status, v.StatusReason, v.StatusMessage = StatusDeleting, "Deleting", "the Helm release is being uninstalled"
	v.Endpoints = map[string]string{}
	return v, nil
}
