package vmclusters

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/auth"
)

// maxWriteAttempts bounds the retries of a PUT or DELETE whose write
// conflicted with another writer (Flux writes status constantly).
const maxWriteAttempts = 5

// Releases is the write path both resources stored as Flux HelmReleases
// (vmclusters, components) share: the etag check (against the cache,
// then the live object), the JSON patch and the delete retried on a
// conflict, the audit record of each write, and the wait for the cache.
// Each service keeps its own rules; Releases only writes.
type Releases struct {
	Store Store
	// Kind names the resource in messages ("vmcluster", "component").
	Kind string
	// NotFound is the resource's 404 for the id of the request.
	NotFound func(id string) error
	// Managed tells the resource's releases from the other's.
	Managed func(*helmv2.HelmRelease) bool
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// Resolve finds the resource's release by id (the HelmRelease UID) or by
// name. The cache holds every release ops-server manages, of both
// resources: another resource's release is not found. A name not in this
// replica's cache (yet) is read live: another ops-apiserver replica may
// have created it a moment ago, and a client retrying here must find it
// (docs/install.md, "High availability").
func (r Releases) Resolve(ctx context.Context, id string) (*helmv2.HelmRelease, error) {
	if uuidRE.MatchString(id) {
		hr, err := r.Store.GetByUID(ctx, id)
		if err == nil && r.Managed(hr) {
			return hr, nil
		}
		if err == nil {
			return nil, r.NotFound(id)
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("looking up %s by id: %w", r.Kind, err)
		}
	}
	if len(ValidateName(id)) > 0 {
		return nil, r.NotFound(id)
	}
	hr, err := r.Store.Get(ctx, id)
	if apierrors.IsNotFound(err) {
		hr, err = r.Store.GetLive(ctx, id)
	}
	if apierrors.IsNotFound(err) {
		return nil, r.NotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("looking up %s by name: %w", r.Kind, err)
	}
	if !r.Managed(hr) {
		return nil, r.NotFound(id)
	}
	return hr, nil
}

// PreconditionFailed is the 412 of an etag that no longer matches.
func PreconditionFailed(kind, name, current string) *apierror.Error {
	return (&apierror.Error{
		Code:   http.StatusPreconditionFailed,
		Status: apierror.StatusFailedPrecondition,
		Reason: ReasonETagMismatch,
		Message: kind + " " + strconv.Quote(name) + " was changed since the etag was read; " +
			"GET it again, re-apply the change and retry with the new etag",
	}).WithMetadata("etag", current)
}

// Reread reads hr again from the API server; a release deleted or
// recreated meanwhile is not found.
func (r Releases) Reread(ctx context.Context, hr *helmv2.HelmRelease, id string) (*helmv2.HelmRelease, error) {
	live, err := r.Store.GetLive(ctx, hr.Name)
	if apierrors.IsNotFound(err) {
		return nil, r.NotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("reading HelmRelease %s: %w", klog.KObj(hr), err)
	}
	if live.UID != hr.UID || !r.Managed(live) {
		return nil, r.NotFound(id)
	}
	return live, nil
}

// CheckPrecondition checks the request's etag against hr, read from the
// cache; on a mismatch it reads the live object before answering 412, so
// a cache a moment behind a client that just wrote is not a failure. It
// returns the object the check passed on.
func (r Releases) CheckPrecondition(ctx context.Context, hr *helmv2.HelmRelease, pre Precondition) (*helmv2.HelmRelease, error) {
	if pre.Matches(ETagOf(hr)) {
		return hr, nil
	}
	live, err := r.Reread(ctx, hr, hr.Name)
	if err != nil {
		return nil, err
	}
	if !pre.Matches(ETagOf(live)) {
		return nil, PreconditionFailed(r.Kind, hr.Name, ETagOf(live))
	}
	return live, nil
}

// Patch patches hr (found for id) with the JSON patch build returns for
// the object the etag check passed on; build also checks that object (an
// error from it is the answer). A conflict with another writer (usually
// Flux, on status) reads the object again and checks and builds again.
// refused, when set, may answer for an Invalid error first (an admission
// policy's refusal). It returns the patched object.
func (r Releases) Patch(ctx context.Context, hr *helmv2.HelmRelease, id string, pre Precondition,
	build func(*helmv2.HelmRelease) ([]byte, error), refused func(error) error) (*helmv2.HelmRelease, error) {
	for attempt := 1; ; attempt++ {
		var err error
		if hr, err = r.CheckPrecondition(ctx, hr, pre); err != nil {
			return nil, err
		}
		patch, err := build(hr)
		if err != nil {
			return nil, err
		}
		patched := hr.DeepCopy()
		err = r.Store.PatchRelease(ctx, patched, patch)
		if err == nil {
			auth.RecordTarget(ctx, ReleaseRef(patched), "UpdatedThroughAPI", "Updated")
			return patched, nil
		}
		switch {
		case apierrors.IsNotFound(err):
			return nil, r.NotFound(id)
		case apierrors.IsConflict(err) && attempt < maxWriteAttempts:
			if hr, err = r.Reread(ctx, hr, id); err != nil {
				return nil, err
			}
			continue
		case apierrors.IsInvalid(err) && refused != nil:
			if answer := refused(err); answer != nil {
				return nil, answer
			}
			fallthrough
		case apierrors.IsInvalid(err) || apierrors.IsConflict(err):
			// The JSON patch test of the UID failed (the object was
			// recreated) or the object kept changing under us.
			return nil, apierror.Aborted(apierror.ReasonConflict,
				"%s %q changed while it was being updated; retry the request", r.Kind, hr.Name).WithCause(err)
		}
		return nil, fmt.Errorf("patching HelmRelease %s: %w", klog.KObj(hr), err)
	}
}

// WaitForGeneration waits (bounded) until the cache has the patched
// object, so that a read after the write sees it.
func (r Releases) WaitForGeneration(ctx context.Context, patched *helmv2.HelmRelease) {
	gen := patched.Generation
	r.Store.WaitForCache(ctx, patched.Name, func(c *helmv2.HelmRelease) bool { return c != nil && c.Generation >= gen })
}

// Delete deletes hr (found for id; helm-controller uninstalls the
// release, then removes its finalizer) and its sources, and waits for the
// cache to see it. A release already being deleted is accepted again.
// check, when set, may refuse the delete of the object the etag check
// passed on. With an etag precondition the delete carries the
// resourceVersion the etag was checked on, retried on a conflict while
// the etag matches. It returns the object deleted.
func (r Releases) Delete(ctx context.Context, hr *helmv2.HelmRelease, id string, pre Precondition,
	check func(context.Context, *helmv2.HelmRelease) error) (*helmv2.HelmRelease, error) {
	for attempt := 1; ; attempt++ {
		var err error
		if hr, err = r.CheckPrecondition(ctx, hr, pre); err != nil {
			return nil, err
		}
		if hr.DeletionTimestamp != nil {
			break
		}
		if check != nil {
			if err := check(ctx, hr); err != nil {
				return nil, err
			}
		}
		err = r.Store.DeleteRelease(ctx, hr, !pre.IsZero())
		if err == nil {
			auth.RecordTarget(ctx, ReleaseRef(hr), "DeletedThroughAPI", "Deletion requested")
			break
		}
		switch {
		case apierrors.IsNotFound(err):
			return nil, r.NotFound(id)
		case apierrors.IsConflict(err) && !pre.IsZero() && attempt < maxWriteAttempts:
			if hr, err = r.Reread(ctx, hr, id); err != nil {
				return nil, err
			}
			continue
		case apierrors.IsConflict(err):
			return nil, apierror.Aborted(apierror.ReasonConflict,
				"%s %q changed while it was being deleted; retry the request", r.Kind, hr.Name).WithCause(err)
		}
		return nil, fmt.Errorf("deleting HelmRelease %s: %w", klog.KObj(hr), err)
	}
	if err := r.Store.DeleteSources(ctx, hr.Name); err != nil {
		return nil, fmt.Errorf("deleting the HelmRepository of %s: %w", klog.KObj(hr), err)
	}
	logr.FromContextOrDiscard(ctx).Info("Deleted "+r.Kind, "helmRelease", klog.KObj(hr), "uid", hr.UID)
	uid := hr.UID
	r.Store.WaitForCache(ctx, hr.Name, func(c *helmv2.HelmRelease) bool {
		return c == nil || c.UID != uid || c.DeletionTimestamp != nil
	})
	return hr, nil
}
