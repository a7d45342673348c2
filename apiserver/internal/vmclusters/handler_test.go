package vmclusters

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/server"
)

// handlerStore is the Kubernetes behind a real Service in the handler
// tests: it holds the vmcluster c1 and records every write and list that
// reaches it, so a test sees what a request changed.
type handlerStore struct {
	*fakeStore
	creates []*helmv2.HelmRelease
	lists   int
}

func (s *handlerStore) CreateRelease(_ context.Context, hr *helmv2.HelmRelease) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	hr.UID, hr.Generation, hr.ResourceVersion = "u-2", 1, "1"
	s.creates = append(s.creates, hr.DeepCopy())
	return nil
}

func (s *handlerStore) List(context.Context) ([]*helmv2.HelmRelease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists++
	return nil, nil
}

// writes counts the writes that reached Kubernetes.
func (s *handlerStore) writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.creates) + len(s.patches) + len(s.deletes)
}

// patchedValues are the values of the last patch's /spec/values.
func (s *handlerStore) patchedValues(t testing.TB) json.RawMessage {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var ops []jsonPatchOp
	if err := json.Unmarshal([]byte(s.patches[len(s.patches)-1]), &ops); err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if op.Path == "/spec/values" {
			b, _ := json.Marshal(op.Value)
			return b
		}
	}
	t.Fatalf("the patch sets no values: %s", s.patches[len(s.patches)-1])
	return nil
}

const testBodyLimit = 4096

// newTestHandler serves a real Service on a handlerStore holding c1.
func newTestHandler(t *testing.T) (http.Handler, *handlerStore) {
	t.Helper()
	svc, st := newLifecycleService(t, `{}`)
	hs := &handlerStore{fakeStore: st}
	svc.Store = hs
	e, err := server.New(server.Options{MaxBodyBytes: testBodyLimit}, &Handler{Svc: svc})
	if err != nil {
		t.Fatal(err)
	}
	return e, hs
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
	h, st := newTestHandler(t)

	rec := do(h, http.MethodPost, BasePath, strings.NewReader(`{"name":"c1","values":{"x":1}}`))
	g.Expect(rec.Code).To(Equal(http.StatusAccepted), rec.Body.String())
	var v map[string]any
	g.Expect(json.Unmarshal(rec.Body.Bytes(), &v)).To(Succeed())
	g.Expect(v).To(HaveKeyWithValue("name", "vmclusters/c1"))
	g.Expect(v).To(HaveKeyWithValue("status", "CREATING"))
	g.Expect(v).To(HaveKeyWithValue("values", map[string]any{"x": float64(1)}))
	g.Expect(st.creates).To(HaveLen(1))
	g.Expect(st.creates[0].Name).To(Equal("c1"))
	g.Expect(st.creates[0].Spec.Values.Raw).To(MatchJSON(`{"x":1}`))

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
	g.Expect(st.writes()).To(Equal(1), "a rejected request writes nothing")
}

func TestHandlerBodyLimit(t *testing.T) {
	g := NewWithT(t)
	h, st := newTestHandler(t)
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
	g.Expect(st.writes()).To(BeZero())
}

func TestHandlerReadAndList(t *testing.T) {
	g := NewWithT(t)
	h, st := newTestHandler(t)

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
	g.Expect(st.lists).To(Equal(1))

	rec = do(h, http.MethodGet, BasePath+"?page_token=garbage&page_size=5000", nil)
	g.Expect(rec.Code).To(Equal(http.StatusBadRequest))
	g.Expect(violationsOf(errorBody(t, rec))).To(ConsistOf(HaveField("Field", "page_token"), HaveField("Field", "page_size")))
	g.Expect(st.lists).To(Equal(1), "a rejected list never reaches Kubernetes")
}

// fuzzHandler drives a body through the real handler chain and checks the
// contract: never a panic; a rejection is a 400 with at least one field
// violation and writes nothing; an acceptance writes a valid object.
func fuzzHandler(f *testing.F, method, path string, check func(t *testing.T, st *handlerStore)) {
	f.Fuzz(func(t *testing.T, body []byte) {
		h, st := newTestHandler(t)
		rec := do(h, method, path, bytes.NewReader(body))
		switch rec.Code {
		case http.StatusAccepted:
			check(t, st)
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
			if st.writes() != 0 {
				t.Fatalf("a rejected request wrote to Kubernetes")
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
	fuzzHandler(f, http.MethodPost, BasePath, func(t *testing.T, st *handlerStore) {
		if len(st.creates) != 1 {
			t.Fatalf("accepted create did not create one HelmRelease")
		}
		hr := st.creates[0]
		if msgs := ValidateName(hr.Name); len(msgs) > 0 {
			t.Fatalf("accepted invalid name %q: %v", hr.Name, msgs)
		}
		var m map[string]any
		if err := json.Unmarshal(hr.Spec.Values.Raw, &m); err != nil || m == nil {
			t.Fatalf("accepted values that are not an object: %s", hr.Spec.Values.Raw)
		}
		if v := hr.Spec.Chart.Spec.Version; ValidateVersion(v) != "" {
			t.Fatalf("accepted invalid version %q", v)
		}
	})
}

func FuzzUpdateRequest(f *testing.F) {
	addSeeds(f)
	fuzzHandler(f, http.MethodPut, BasePath+"/c1", func(t *testing.T, st *handlerStore) {
		if len(st.patches) != 1 {
			t.Fatalf("accepted update did not patch the HelmRelease once")
		}
		var m map[string]any
		if values := st.patchedValues(t); json.Unmarshal(values, &m) != nil || m == nil {
			t.Fatalf("accepted values that are not an object: %s", values)
		}
	})
}
