package components

import (
	"context"
	"fmt"
	"net/http"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/auth"
	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/apiserver/internal/listing"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
)

// Reasons of the component errors (ErrorInfo.reason).
const (
	ReasonNotFound         = "COMPONENT_NOT_FOUND"
	ReasonAlreadyExists    = "COMPONENT_ALREADY_EXISTS"
	ReasonDeleting         = "COMPONENT_DELETING"
	ReasonNotInCatalog     = "CHART_NOT_IN_CATALOG"
	ReasonNamespaceMissing = "NAMESPACE_NOT_FOUND"
)

// Service implements the components operations on the vmclusters store
// (the same cache, index and writes; a KubeStore with SourceLabels set to
// Labels).
type Service struct {
	Store   vmclusters.Store
	Catalog Catalog
	// Namespace holds the HelmReleases and HelmRepositories.
	Namespace string
	Flux      config.FluxConfig
	// Now is the clock (injected in tests).
	Now func() time.Time
	// Caller names the authenticated caller of a request (for the
	// initiated-by annotation); nil: none is recorded.
	Caller func(context.Context) string
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func notFound(id string) *apierror.Error {
	return apierror.NotFound(ReasonNotFound, "component %q not found", truncate(id, 80)).WithMetadata("componentId", truncate(id, 80))
}

// translator is the vmclusters translator of one catalog entry.
func (s *Service) translator(e Entry) vmclusters.Translator {
	return vmclusters.Translator{Namespace: s.Namespace, Chart: e.Source, Flux: s.Flux}
}

// entryOf is the catalog entry of an existing component's chart; false if
// the chart left the catalog since.
func (s *Service) entryOf(hr *helmv2.HelmRelease) (Entry, bool) {
	if hr.Spec.Chart == nil {
		return Entry{}, false
	}
	e, ok := s.Catalog.Entries[hr.Spec.Chart.Spec.Chart]
	return e, ok
}

// checkRequest checks chart, version, namespace and values of a create.
func (s *Service) checkRequest(req *CreateRequest) (Entry, error) {
	e, v := s.Catalog.Lookup(req.Chart)
	if v != nil {
		return Entry{}, apierror.InvalidArgument("the chart is not in the catalog", *v).WithReason(ReasonNotInCatalog)
	}
	var vs violations
	if msg := e.Source.CheckVersion(req.Version); msg != "" {
		vs.add("version", "%s", msg)
	}
	if req.Namespace == "" {
		req.Namespace = s.Namespace
	}
	if msg := e.NamespaceProblem(req.Namespace, s.Namespace); msg != "" {
		vs.add("namespace", "%s", msg)
	}
	if err := vs.err(); err != nil {
		return Entry{}, err
	}
	if fvs := e.Source.CheckValues(req.Version, req.Values); len(fvs) > 0 {
		return Entry{}, apierror.InvalidArgument("the values do not match the chart's values schema", fvs...).WithReason(vmclusters.ReasonInvalidValues)
	}
	return e, nil
}

// Create creates the HelmRelease and its source. An identical repeat (with
// or without the same Idempotency-Key) answers with the existing
// component; a different body for an existing name is a 409.
func (s *Service) Create(ctx context.Context, req CreateRequest) (Component, error) {
	e, err := s.checkRequest(&req)
	if err != nil {
		return Component{}, err
	}
	hr := Release(s.translator(e), req, s.Namespace, s.now())
	auth.StampCaller(ctx, s.Caller, hr)
	err = s.Store.CreateRelease(ctx, hr)
	if apierrors.IsAlreadyExists(err) {
		return s.createExisting(ctx, e, req)
	}
	if apierrors.IsNotFound(err) {
		return Component{}, (&apierror.Error{Code: http.StatusInternalServerError, Status: apierror.StatusInternal,
			Reason: ReasonNamespaceMissing, Message: fmt.Sprintf("the namespace %q does not exist; check the ops-apiserver configuration", hr.Namespace)}).WithCause(err)
	}
	if err != nil {
		return Component{}, fmt.Errorf("creating HelmRelease %s: %w", klog.KObj(hr), err)
	}
	auth.RecordTarget(ctx, vmclusters.ReleaseRef(hr), "CreatedThroughAPI", "Created")
	logr.FromContextOrDiscard(ctx).Info("Created component", "helmRelease", klog.KObj(hr), "uid", hr.UID,
		"chart", req.Chart, "chartVersion", hr.Spec.Chart.Spec.Version, "targetNamespace", req.Namespace)
	if err := s.Store.ApplySource(ctx, Source(s.translator(e), hr, s.now())); err != nil {
		return Component{}, fmt.Errorf("applying the HelmRepository of %s: %w", klog.KObj(hr), err)
	}
	uid := hr.UID
	s.Store.WaitForCache(ctx, hr.Name, func(c *helmv2.HelmRelease) bool { return c != nil && c.UID == uid })
	return View(hr, true), nil
}

func (s *Service) createExisting(ctx context.Context, e Entry, req CreateRequest) (Component, error) {
	existing, err := s.Store.GetLive(ctx, req.Name)
	if apierrors.IsNotFound(err) {
		return Component{}, apierror.Aborted(apierror.ReasonConflict, "component %q was deleted while it was being created; retry the request", req.Name)
	}
	if err != nil {
		return Component{}, fmt.Errorf("reading existing HelmRelease %s: %w", req.Name, err)
	}
	switch {
	case !IsManaged(existing):
		return Component{}, apierror.AlreadyExists(vmclusters.ReasonNotManaged,
			"a HelmRelease named %q exists and is not an ops-server component (a vmcluster, or not managed by ops-server)", req.Name)
	case existing.DeletionTimestamp != nil:
		return Component{}, apierror.AlreadyExists(ReasonDeleting,
			"component %q is being deleted; create it again once it is gone", req.Name)
	case !SameAsRequest(s.translator(e), existing, req, s.Namespace):
		return Component{}, apierror.AlreadyExists(ReasonAlreadyExists,
			"component %q already exists with a different configuration", req.Name).
			WithMetadata("id", string(existing.UID))
	}
	if err := s.Store.ApplySource(ctx, Source(s.translator(e), existing, s.now())); err != nil {
		return Component{}, fmt.Errorf("applying the HelmRepository of %s: %w", klog.KObj(existing), err)
	}
	logr.FromContextOrDiscard(ctx).Info("Create repeated for an existing identical component", "helmRelease", klog.KObj(existing))
	return View(existing, true), nil
}

// resolve finds a component by id or name (Releases.Resolve).
func (s *Service) resolve(ctx context.Context, id string) (*helmv2.HelmRelease, error) {
	return s.releases().Resolve(ctx, id)
}

// Get returns one component with its values.
func (s *Service) Get(ctx context.Context, id string) (Component, error) {
	hr, err := s.resolve(ctx, id)
	if err != nil {
		return Component{}, err
	}
	return View(hr, true), nil
}

// List returns a page of components, by name, filtered by status.
func (s *Service) List(ctx context.Context, req vmclusters.ListRequest) (ListResponse, error) {
	hrs, err := s.Store.List(ctx)
	if err != nil {
		return ListResponse{}, fmt.Errorf("listing HelmReleases: %w", err)
	}
	matched := make([]*helmv2.HelmRelease, 0, len(hrs))
	for _, hr := range hrs {
		if !IsManaged(hr) {
			continue
		}
		if req.Status != "" && vmclusters.StatusOf(hr).Status != req.Status {
			continue
		}
		matched = append(matched, hr)
	}
	compare, after := listing.ByName(func(hr *helmv2.HelmRelease) string { return hr.Name }, req.After)
	selected, more := listing.Page(matched, compare, after, req.PageSize)
	next := ""
	if more {
		next = vmclusters.EncodePageToken(selected[len(selected)-1].Name, req.Status)
	}
	page := make([]Component, 0, len(selected))
	for _, hr := range selected {
		page = append(page, View(hr, false))
	}
	return ListResponse{Components: page, NextPageToken: next}, nil
}

// releases writes the service's HelmReleases.
func (s *Service) releases() vmclusters.Releases {
	return vmclusters.Releases{Store: s.Store, Kind: "component", Managed: IsManaged,
		NotFound: func(id string) error { return notFound(id) }}
}

// Update replaces the values of a component and optionally moves it to
// another chart version of its catalog entry.
func (s *Service) Update(ctx context.Context, id string, req UpdateRequest) (Component, error) {
	hr, err := s.resolve(ctx, id)
	if err != nil {
		return Component{}, err
	}
	if err := checkIdentity(hr, req); err != nil {
		return Component{}, err
	}
	e, ok := s.entryOf(hr)
	if !ok {
		return Component{}, apierror.FailedPrecondition(ReasonNotInCatalog,
			"the chart of component %q is no longer in the catalog: it can be deleted, not changed", hr.Name)
	}
	if msg := e.Source.CheckVersion(req.Version); msg != "" {
		return Component{}, apierror.InvalidArgument("the request is invalid", apierror.Violation("version", "%s", msg))
	}
	patched, err := s.releases().Patch(ctx, hr, id, req.Precondition, func(hr *helmv2.HelmRelease) ([]byte, error) {
		if hr.DeletionTimestamp != nil {
			return nil, apierror.FailedPrecondition(ReasonDeleting, "component %q is being deleted", hr.Name)
		}
		version := req.Version
		if version == "" {
			version = hr.Spec.Chart.Spec.Version
		}
		if fvs := e.Source.CheckValues(version, req.Values); len(fvs) > 0 {
			return nil, apierror.InvalidArgument("the values do not match the chart's values schema", fvs...).WithReason(vmclusters.ReasonInvalidValues)
		}
		patch, err := s.translator(e).UpdatePatch(hr, req.Values, req.Version, false, s.now())
		if err != nil {
			return nil, apierror.Internal(err)
		}
		return patch, nil
	}, nil)
	if err != nil {
		return Component{}, err
	}
	if err := s.Store.ApplySource(ctx, Source(s.translator(e), patched, s.now())); err != nil {
		return Component{}, fmt.Errorf("applying the HelmRepository of %s: %w", klog.KObj(hr), err)
	}
	logr.FromContextOrDiscard(ctx).Info("Updated component", "helmRelease", klog.KObj(hr),
		"generation", patched.Generation, "chartVersion", patched.Spec.Chart.Spec.Version)
	s.releases().WaitForGeneration(ctx, patched)
	return View(patched, true), nil
}

// checkIdentity rejects a PUT body whose echoed identity fields differ
// from the target's.
func checkIdentity(hr *helmv2.HelmRelease, req UpdateRequest) error {
	var vs violations
	check := func(field string, got *string, want string) {
		if got != nil && *got != want {
			vs.add(field, "cannot be changed (is %q)", want)
		}
	}
	check("name", req.Name, hr.Name)
	check("id", req.ID, string(hr.UID))
	check("namespace", req.Namespace, hr.GetReleaseNamespace())
	if hr.Spec.Chart != nil {
		check("chart", req.Chart, hr.Spec.Chart.Spec.Chart)
	}
	if len(vs) > 0 {
		return apierror.InvalidArgument("the request changes fields that cannot be changed", vs...).WithReason(vmclusters.ReasonImmutable)
	}
	return nil
}

// Delete deletes the HelmRelease (helm-controller uninstalls the release)
// and its source. Deleting a component already being deleted is accepted
// again.
func (s *Service) Delete(ctx context.Context, id string, pre vmclusters.Precondition) (Component, error) {
	hr, err := s.resolve(ctx, id)
	if err != nil {
		return Component{}, err
	}
	if hr, err = s.releases().Delete(ctx, hr, id, pre, nil); err != nil {
		return Component{}, err
	}
	v := View(hr, true)
	v.Status, v.StatusReason, v.StatusMessage = vmclusters.StatusDeleting, "Deleting", "the Helm release is being uninstalled"
	return v, nil
}
