package vmclusters

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/server"
)

// fakeOps records what reaches the service.
type fakeOps struct {
	mu      sync.Mutex
	creates []CreateRequest
	updates []UpdateRequest
	lists   []ListRequest
	ids     []string
}

func (f *fakeOps) Create(_ context.Context, req CreateRequest) (VMCluster, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.creates = append(f.creates, req)
	return VMCluster{Name: CollectionPrefix + req.Name, ID: "u-1", Status: StatusCreating, Endpoints: map[string]string{}, Values: req.Values}, nil
}

func (f *fakeOps) Get(_ context.Context, id string) (VMCluster, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ids = append(f.ids, id)
	if id == "c1" {
		return VMCluster{Name: "vmclusters/c1", ID: "u-1", Status: StatusRunning, Endpoints: map[string]string{}}, nil
	}
	return VMCluster{}, notFound(id)
}

func (f *fakeOps) List(_ context.Context, req ListRequest) (ListResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists = append(f.lists, req)
	return ListResponse{}, nil
}

func (f *fakeOps) Update(_ context.Context, id string, req UpdateRequest) (VMCluster, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ids = append(f.ids, id)
	f.updates = append(f.updates, req)
	return VMCluster{Name: "vmclusters/" + id, ID: "u-1", Status: StatusUpdating, Endpoints: map[string]string{}, Values: req.Values}, nil
}

func (f *fakeOps) Delete(_ context.Context, id string, _ Precondition) (VMCluster, error) {
	return VMCluster{}, notFound(id)
}

func (f *fakeOps) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.creates) + len(f.updates) + len(f.lists)
}

const testBodyLimit = 4096

func newTestHandler(t testing.TB) (http.Handler, *fakeOps) {
	t.Helper()
	ops := &fakeOps{}
	e, err := server.New(server.Options{MaxBodyBytes: testBodyLimit}, &Handler{Ops: ops})
	if err != nil {
		t.Fatal(err)
	}
	return e, ops
}

func do(h http.Handler, method, path string, body io.Reader) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, body)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func errorBody(t testing.TB, rec *httptest.ResponseRecorder) apierror.Body {
	t.Helper()
	var b apierror.Body
	if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
		t.Fatalf("error body is not JSON: %v: %s", err, rec.Body.String())
	}
	return b
}

func violationsOf(b apierror.Body) []apierror.FieldViolation {
	for _, d := range b.Error.Details {
		if d.Type == apierror.TypeBadRequest {
			return d.FieldViolations
		}
	}
	return nil
}

func TestHandlerCreate(t *testing.T) {
	g := NewWithT(t)
	h, ops := newTestHandler(t)

	rec := do(h, http.MethodPost, BasePath, strings.NewReader(`{"name":"c1","values":{"x":1}}`))
	g.Expect(rec.Code).To(Equal(http.StatusAccepted), rec.Body.String())
	var v map[string]any
	g.Expect(json.Unmarshal(rec.Body.Bytes(), &v)).To(Succeed())
	g.Expect(v).To(HaveKeyWithValue("name", "vmclusters/c1"))
	g.Expect(v).To(HaveKeyWithValue("status", "CREATING"))
	g.Expect(v).To(HaveKeyWithValue("values", map[string]any{"x": float64(1)}))
	g.Expect(ops.creates).To(HaveLen(1))

	rec = do(h, http.MethodPost, BasePath, strings.NewReader(`{"name":"Bad_Name","values":[],"zzz":1}`))
	g.Expect(rec.Code).To(Equal(http.StatusBadRequest))
	b := errorBody(t, rec)
	g.Expect(b.Error.Code).To(Equal(400))
	g.Expect(b.Error.Status).To(Equal("INVALID_ARGUMENT"))
	g.Expect(b.Error.Details[0].Type).To(Equal(apierror.TypeErrorInfo))
	g.Expect(b.Error.Details[0].Domain).To(Equal(apierror.Domain))
	var fs []string
	for _, fv := range violationsOf(b) {
		fs = append(fs, fv.Field)
		g.Expect(fv.Description).NotTo(BeEmpty())
	}
	g.Expect(fs).To(ConsistOf("name", "values", "zzz"))
	g.Expect(ops.creates).To(HaveLen(1), "a rejected request never reaches the service")
}

func TestHandlerBodyLimit(t *testing.T) {
	g := NewWithT(t)
	h, ops := newTestHandler(t)
	big := `{"name":"c1","values":{"x":"` + strings.Repeat("a", testBodyLimit) + `"}}`

	// Declared length over the limit.
	rec := do(h, http.MethodPost, BasePath, strings.NewReader(big))
	g.Expect(rec.Code).To(Equal(http.StatusBadRequest))
	g.Expect(violationsOf(errorBody(t, rec))).To(ConsistOf(HaveField("Field", "body")))

	// Unknown length (chunked): the read is cut at the limit.
	req := httptest.NewRequest(http.MethodPut, BasePath+"/c1", io.MultiReader(strings.NewReader(big)))
	req.ContentLength = -1
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	g.Expect(rec.Code).To(Equal(http.StatusBadRequest))
	g.Expect(violationsOf(errorBody(t, rec))).To(ConsistOf(HaveField("Field", "body")))
	g.Expect(ops.calls()).To(BeZero())
}

func TestHandlerReadAndList(t *testing.T) {
	g := NewWithT(t)
	h, ops := newTestHandler(t)

	rec := do(h, http.MethodGet, BasePath+"/c1", nil)
	g.Expect(rec.Code).To(Equal(http.StatusOK))

	rec = do(h, http.MethodGet, BasePath+"/nope", nil)
	g.Expect(rec.Code).To(Equal(http.StatusNotFound))
	b := errorBody(t, rec)
	g.Expect(b.Error.Status).To(Equal("NOT_FOUND"))
	g.Expect(b.Error.Message).To(ContainSubstring(`"nope"`))

	rec = do(h, http.MethodDelete, BasePath+"/nope", nil)
	g.Expect(rec.Code).To(Equal(http.StatusNotFound))

	rec = do(h, http.MethodGet, BasePath+"?page_size=2&status=RUNNING", nil)
	g.Expect(rec.Code).To(Equal(http.StatusOK))
	g.Expect(rec.Body.String()).To(MatchJSON(`{"vmclusters":[]}`))
	g.Expect(ops.lists).To(Equal([]ListRequest{{PageSize: 2, Status: StatusRunning}}))

	rec = do(h, http.MethodGet, BasePath+"?page_token=garbage&page_size=5000", nil)
	g.Expect(rec.Code).To(Equal(http.StatusBadRequest))
	g.Expect(violationsOf(errorBody(t, rec))).To(ConsistOf(HaveField("Field", "page_token"), HaveField("Field", "page_size")))
	g.Expect(ops.lists).To(HaveLen(1))
}

// fuzzHandler drives a body through the real handler chain and checks the
// contract: never a panic; a rejection is a 400 with at least one field
// violation and never reaches the service; an acceptance reaches it with
// a valid request.
func fuzzHandler(f *testing.F, method, path string, check func(t *testing.T, ops *fakeOps)) {
	f.Fuzz(func(t *testing.T, body []byte) {
		h, ops := newTestHandler(t)
		rec := do(h, method, path, bytes.NewReader(body))
		switch rec.Code {
		case http.StatusAccepted:
			check(t, ops)
		case http.StatusBadRequest:
			b := errorBody(t, rec)
			if b.Error.Status != apierror.StatusInvalidArgument || len(violationsOf(b)) == 0 {
				t.Fatalf("400 without field violations: %s", rec.Body.String())
			}
			for _, v := range violationsOf(b) {
				if v.Field == "" || v.Description == "" {
					t.Fatalf("empty field violation: %s", rec.Body.String())
				}
			}
			if ops.calls() != 0 {
				t.Fatalf("a rejected request reached the service")
			}
		default:
			t.Fatalf("unexpected status %d: %s", rec.Code, rec.Body.String())
		}
	})
}

func addSeeds(f *testing.F) {
	for _, s := range []string{
		`{"name":"c1","values":{"a":{"b":[1,2,{"c":null}]}}}`,
		`{"name":"vmclusters/c1","helm_release_info":{"version":"1.2.3-rc.1+b1"}}`,
		`{"values":{"x":1},"helm_release_info":{"version":"0.2.0","chart":"vmcluster"},"id":"u","status":"RUNNING"}`,
		`{"name":"C1"}`, `{"name":1e3}`, `{"values":"x"}`, `[]`, `null`, `"s"`, ``, `{`, `{"a":1}{}`,
		`{"name":"` + strings.Repeat("a", 60) + `"}`, "{\"name\":\"c\xff\"}", `{"name":"c1","values":{}, "name":"c2"}`,
		`{"helm_release_info":null,"values":{}}`, `{"name":"c1","values":{"k":1.0e400}}`,
	} {
		f.Add([]byte(s))
	}
}

func FuzzCreateRequest(f *testing.F) {
	addSeeds(f)
	fuzzHandler(f, http.MethodPost, BasePath, func(t *testing.T, ops *fakeOps) {
		if len(ops.creates) != 1 {
			t.Fatalf("accepted create did not reach the service once")
		}
		req := ops.creates[0]
		if msgs := ValidateName(req.Name); len(msgs) > 0 {
			t.Fatalf("accepted invalid name %q: %v", req.Name, msgs)
		}
		var m map[string]any
		if err := json.Unmarshal(req.Values, &m); err != nil || m == nil {
			t.Fatalf("accepted values that are not an object: %s", req.Values)
		}
		if req.Version != "" && ValidateVersion(req.Version) != "" {
			t.Fatalf("accepted invalid version %q", req.Version)
		}
	})
}

func FuzzUpdateRequest(f *testing.F) {
	addSeeds(f)
	fuzzHandler(f, http.MethodPut, BasePath+"/c1", func(t *testing.T, ops *fakeOps) {
		if len(ops.updates) != 1 {
			t.Fatalf("accepted update did not reach the service once")
		}
		var m map[string]any
		if err := json.Unmarshal(ops.updates[0].Values, &m); err != nil || m == nil {
			t.Fatalf("accepted values that are not an object: %s", ops.updates[0].Values)
		}
	})
}
