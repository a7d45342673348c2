package vmclusters

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
)

// fakeStore serves one HelmRelease; cached is what the cache returns and
// live what the API server has. conflicts makes that many writes fail
// with a Conflict, each after bumping live (as a Flux status write would,
// or a spec write when bumpGeneration).
type fakeStore struct {
	mu             sync.Mutex
	cached, live   *helmv2.HelmRelease
	conflicts      int
	bumpGeneration bool
	patches        []string
	deletes        []bool
}

func (f *fakeStore) Get(_ context.Context, name string) (*helmv2.HelmRelease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cached == nil || f.cached.Name != name {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "helmreleases"}, name)
	}
	return f.cached.DeepCopy(), nil
}

func (f *fakeStore) GetByUID(ctx context.Context, uid string) (*helmv2.HelmRelease, error) {
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "helmreleases"}, uid)
}

func (f *fakeStore) List(context.Context) ([]*helmv2.HelmRelease, error) { return nil, nil }

func (f *fakeStore) GetLive(_ context.Context, name string) (*helmv2.HelmRelease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.live == nil || f.live.Name != name {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "helmreleases"}, name)
	}
	return f.live.DeepCopy(), nil
}

func (f *fakeStore) CreateRelease(context.Context, *helmv2.HelmRelease) error { return nil }

// conflict reports whether this write fails, changing live as another
// writer would.
func (f *fakeStore) conflict() bool {
	if f.conflicts == 0 {
		return false
	}
	f.conflicts--
	f.live.ResourceVersion += "1"
	if f.bumpGeneration {
		f.live.Generation++
	}
	return true
}

func (f *fakeStore) PatchRelease(_ context.Context, hr *helmv2.HelmRelease, patch []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.patches = append(f.patches, string(patch))
	if f.conflict() {
		return apierrors.NewConflict(schema.GroupResource{Resource: "helmreleases"}, hr.Name, nil)
	}
	var ops []jsonPatchOp
	if err := json.Unmarshal(patch, &ops); err != nil {
		return err
	}
	for _, op := range ops {
		if op.Path == "/metadata/resourceVersion" && op.Value != f.live.ResourceVersion {
			return apierrors.NewConflict(schema.GroupResource{Resource: "helmreleases"}, hr.Name, nil)
		}
	}
	for _, op := range ops {
		if op.Path == "/spec/values" {
			b, _ := json.Marshal(op.Value)
			f.live.Spec.Values = &apiextensionsv1.JSON{Raw: b}
		}
	}
	f.live.Generation++
	f.live.ResourceVersion += "2"
	f.cached = f.live.DeepCopy()
	*hr = *f.live.DeepCopy()
	return nil
}

func (f *fakeStore) DeleteRelease(_ context.Context, hr *helmv2.HelmRelease, checkVersion bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deletes = append(f.deletes, checkVersion)
	if f.conflict() || checkVersion && hr.ResourceVersion != f.live.ResourceVersion {
		return apierrors.NewConflict(schema.GroupResource{Resource: "helmreleases"}, hr.Name, nil)
	}
	f.live = nil
	f.cached = nil
	return nil
}

func (f *fakeStore) ApplySource(context.Context, *sourcev1.HelmRepository) error { return nil }
func (f *fakeStore) DeleteSources(context.Context, string) error                 { return nil }
func (f *fakeStore) WaitForCache(context.Context, string, func(*helmv2.HelmRelease) bool) {
}

type fakeWork []Blocker

func (w fakeWork) Blockers(context.Context, string, string) ([]Blocker, error) { return w, nil }

func newLifecycleService(t *testing.T, values string) (*Service, *fakeStore) {
	t.Helper()
	tr := testTranslator(t, ChartSource{Name: "vmcluster", DefaultVersion: "0.1.0"})
	hr := tr.Release(CreateRequest{Name: "c1", Values: []byte(values)}, now)
	hr.UID, hr.Generation, hr.ResourceVersion = types.UID("u-1"), 1, "100"
	st := &fakeStore{cached: hr.DeepCopy(), live: hr.DeepCopy()}
	return &Service{Store: st, Translator: tr, Now: func() time.Time { return now }}, st
}

func apiErr(t *testing.T, err error) *apierror.Error {
	t.Helper()
	e, ok := apierror.As(err)
	if !ok {
		t.Fatalf("not an API error: %v", err)
	}
	return e
}

func TestUpdateDataLoss(t *testing.T) {
	g := NewWithT(t)
	svc, st := newLifecycleService(t, `{"retentionPeriod":"1y","vmstorage":{"storage":{"size":"50Gi"}}}`)

	_, err := svc.Update(context.Background(), "c1", UpdateRequest{Values: []byte(`{"retentionPeriod":"1d","vmstorage":{"storage":{"size":"50Gi"}}}`)})
	e := apiErr(t, err)
	g.Expect(e.Code).To(Equal(http.StatusBadRequest))
	g.Expect(e.Reason).To(Equal(ReasonDataLoss))
	g.Expect(e.Violations).To(HaveLen(1))
	g.Expect(e.Violations[0].Field).To(Equal("values.retentionPeriod"))
	g.Expect(st.patches).To(BeEmpty(), "nothing is written")

	v, err := svc.Update(context.Background(), "c1", UpdateRequest{Values: []byte(`{"retentionPeriod":"1d","vmstorage":{"storage":{"size":"50Gi"}}}`), AllowDataLoss: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.patches).To(HaveLen(1))
	g.Expect(string(v.Values)).To(ContainSubstring(`"1d"`))
}

func TestUpdateETag(t *testing.T) {
	g := NewWithT(t)
	svc, st := newLifecycleService(t, `{}`)
	etag := ETagOf(st.cached)

	// Flux writes status twice meanwhile: the etag still matches, the
	// write is retried with the new resourceVersion and succeeds.
	st.conflicts = 2
	v, err := svc.Update(context.Background(), "c1", UpdateRequest{Values: []byte(`{"a":1}`), Precondition: Precondition{ETags: []string{etag}}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.patches).To(HaveLen(3))
	g.Expect(v.ETag).NotTo(Equal(etag))

	// The old etag is stale now: 412, nothing written.
	n := len(st.patches)
	_, err = svc.Update(context.Background(), "c1", UpdateRequest{Values: []byte(`{"a":2}`), Precondition: Precondition{ETags: []string{etag}}})
	e := apiErr(t, err)
	g.Expect(e.Code).To(Equal(http.StatusPreconditionFailed))
	g.Expect(e.Reason).To(Equal(ReasonETagMismatch))
	g.Expect(st.patches).To(HaveLen(n))

	// Someone else changes the spec between the check and the write: the
	// retry sees the new generation and answers 412.
	st.conflicts, st.bumpGeneration = 1, true
	_, err = svc.Update(context.Background(), "c1", UpdateRequest{Values: []byte(`{"a":3}`), Precondition: Precondition{ETags: []string{v.ETag}}})
	g.Expect(apiErr(t, err).Code).To(Equal(http.StatusPreconditionFailed))
	g.Expect(st.patches).To(HaveLen(n + 1))
	g.Expect(string(st.live.Spec.Values.Raw)).To(Equal(`{"a":1}`))

	// Without a precondition a conflict is retried too, but not forever.
	st.conflicts, st.bumpGeneration = maxWriteAttempts, false
	_, err = svc.Update(context.Background(), "c1", UpdateRequest{Values: []byte(`{"a":4}`)})
	g.Expect(apiErr(t, err).Code).To(Equal(http.StatusConflict))
}

// TestCacheMissReadsLive: a vmcluster another ops-apiserver replica has
// just created is not in this replica's cache yet; a read or a write by
// name finds it in the API server instead of answering 404, and one that
// exists nowhere is still a 404.
func TestCacheMissReadsLive(t *testing.T) {
	g := NewWithT(t)
	svc, st := newLifecycleService(t, `{}`)
	st.cached = nil // this replica's cache has not seen the create
	etag := ETagOf(st.live)

	v, err := svc.Get(context.Background(), "c1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v.ETag).To(Equal(etag))
	st.cached = nil
	_, err = svc.Update(context.Background(), "c1", UpdateRequest{Values: []byte(`{"a":1}`), Precondition: Precondition{ETags: []string{etag}}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.patches).To(HaveLen(1))

	_, err = svc.Get(context.Background(), "absent")
	g.Expect(apiErr(t, err).Code).To(Equal(http.StatusNotFound))
}

func TestDeleteBlockedAndETag(t *testing.T) {
	g := NewWithT(t)
	svc, st := newLifecycleService(t, `{}`)
	svc.Work = fakeWork{{Kind: "ClusterBackup", Namespace: "ops", Name: "b1", Phase: "Running"}}
	_, err := svc.Delete(context.Background(), "c1", Precondition{})
	e := apiErr(t, err)
	g.Expect(e.Code).To(Equal(http.StatusConflict))
	g.Expect(e.Reason).To(Equal(ReasonInUse))
	g.Expect(e.Message).To(ContainSubstring("ClusterBackup ops/b1 (Running)"))
	g.Expect(e.Metadata).To(HaveKeyWithValue("blockerName", "b1"))
	g.Expect(st.deletes).To(BeEmpty())

	svc.Work = fakeWork{}
	_, err = svc.Delete(context.Background(), "c1", Precondition{ETags: []string{"stale"}})
	g.Expect(apiErr(t, err).Code).To(Equal(http.StatusPreconditionFailed))
	g.Expect(st.deletes).To(BeEmpty())

	st.conflicts = 1
	_, err = svc.Delete(context.Background(), "c1", Precondition{ETags: []string{ETagOf(st.cached)}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.deletes).To(Equal([]bool{true, true}), "the delete carries the resourceVersion and is retried")
	g.Expect(st.live).To(BeNil())
}

func TestHandlerETag(t *testing.T) {
	g := NewWithT(t)
	h, st := newTestHandler(t)
	etag := ETagOf(st.cached)
	send := func(method, path, body, ifMatch string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if ifMatch != "" {
			req.Header.Set("If-Match", ifMatch)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}

	rec := send(http.MethodGet, BasePath+"/c1", "", "")
	g.Expect(rec.Code).To(Equal(http.StatusOK))
	g.Expect(rec.Header().Get("ETag")).To(Equal(HeaderETag(etag)))
	g.Expect(rec.Body.String()).To(ContainSubstring(`"etag":"` + etag + `"`))

	// A body etag that contradicts the header, and a bad type.
	rec = send(http.MethodPut, BasePath+"/c1", `{"values":{},"etag":"def"}`, HeaderETag(etag))
	g.Expect(rec.Code).To(Equal(http.StatusBadRequest))
	g.Expect(violationsOf(errorBody(t, rec))[0].Field).To(Equal("etag"))
	rec = send(http.MethodPut, BasePath+"/c1", `{"values":{},"allow_data_loss":"yes"}`, "")
	g.Expect(rec.Code).To(Equal(http.StatusBadRequest))
	g.Expect(violationsOf(errorBody(t, rec))[0].Field).To(Equal("allow_data_loss"))
	g.Expect(st.writes()).To(BeZero(), "rejected requests write nothing")

	// A stale etag, in the header or the body, is refused by the service.
	rec = send(http.MethodPut, BasePath+"/c1", `{"values":{}}`, `"stale"`)
	g.Expect(rec.Code).To(Equal(http.StatusPreconditionFailed), rec.Body.String())
	rec = send(http.MethodDelete, BasePath+"/c1", "", `W/"stale"`)
	g.Expect(rec.Code).To(Equal(http.StatusPreconditionFailed), rec.Body.String())
	g.Expect(st.writes()).To(BeZero())

	rec = send(http.MethodPut, BasePath+"/c1", `{"values":{},"etag":"`+etag+`","allow_data_loss":true}`, HeaderETag(etag))
	g.Expect(rec.Code).To(Equal(http.StatusAccepted), rec.Body.String())
	updated := ETagOf(st.live)
	g.Expect(updated).NotTo(Equal(etag))
	g.Expect(rec.Header().Get("ETag")).To(Equal(HeaderETag(updated)))
	g.Expect(st.patches).To(HaveLen(1))
	rec = send(http.MethodDelete, BasePath+"/c1", "", `W/"`+updated+`"`)
	g.Expect(rec.Code).To(Equal(http.StatusAccepted), rec.Body.String())
	g.Expect(st.deletes).To(Equal([]bool{true}), "the delete carries the precondition's resourceVersion")

	// POST refuses allow_data_loss (a create loses nothing) and ignores an
	// echoed etag.
	rec = send(http.MethodPost, BasePath, `{"name":"c2","allow_data_loss":true}`, "")
	g.Expect(rec.Code).To(Equal(http.StatusBadRequest))
	g.Expect(violationsOf(errorBody(t, rec))[0].Field).To(Equal("allow_data_loss"))
	rec = send(http.MethodPost, BasePath, `{"name":"c2","etag":"abc"}`, "")
	g.Expect(rec.Code).To(Equal(http.StatusAccepted), rec.Body.String())
}
