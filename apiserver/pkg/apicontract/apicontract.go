// Package apicontract checks HTTP traffic against the REST API's OpenAPI
// document (apiserver/internal/openapi/openapi.yaml, served at
// /openapi.yaml and copied to docs/openapi.yaml) with kin-openapi's
// openapi3filter.
//
// Tests wrap their HTTP client's transport with Contract.Transport (or call
// Contract.Check on a request and response they already hold), so every
// request and response they exchange with ops-apiserver is validated and a
// mismatch fails the test that produced it:
//
//   - a response whose status the operation does not document, whose
//     Content-Type it does not list, or whose JSON or YAML body does not
//     match the schema (required fields, types, enums, patterns, limits)
//     is a mismatch;
//   - a request the document forbids (unknown route, bad parameter or body)
//     is a mismatch only when the server accepted it (status below 400):
//     tests send invalid requests on purpose, and the server refusing one
//     is what the document promises;
//   - streamed bodies (server-sent events, plain text such as Pod logs)
//     are not read ahead of the caller: their status, headers and
//     Content-Type are checked, not their bytes.
//
// The package is outside internal/ so the e2e module can use it.
package apicontract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/tidbcloud/ops-server/apiserver/internal/openapi"
)

// maxBody bounds how much of a request or response body is read for
// validation.
const maxBody = 32 << 20

// Contract is a loaded, validated OpenAPI document and its router.
type Contract struct {
	doc    *openapi3.T
	router routers.Router
}

var (
	defaultOnce     sync.Once
	defaultContract *Contract
	defaultErr      error
)

// New is the contract of the document embedded in ops-apiserver,
// loaded once per process.
func New() (*Contract, error) {
	defaultOnce.Do(func() { defaultContract, defaultErr = Load(openapi.Document) })
	return defaultContract, defaultErr
}

// Document is the embedded OpenAPI document (YAML).
func Document() []byte { return openapi.Document }

// Load parses and validates an OpenAPI 3 document (YAML or JSON).
func Load(data []byte) (*Contract, error) {
	doc, err := LoadDocument(data)
	if err != nil {
		return nil, err
	}
	r, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("routing the OpenAPI document: %w", err)
	}
	return &Contract{doc: doc, router: r}, nil
}

// LoadDocument parses an OpenAPI 3 document and validates it strictly
// (kin-openapi's own checks: references resolve, schemas, examples and
// defaults are valid, operationIds are unique, path parameters declared).
func LoadDocument(data []byte) (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("loading the OpenAPI document: %w", err)
	}
	if err := doc.Validate(context.Background(),
		openapi3.EnableExamplesValidation(),
		openapi3.EnableSchemaDefaultsValidation(),
		openapi3.EnableSchemaPatternValidation(),
	); err != nil {
		return nil, fmt.Errorf("the OpenAPI document is invalid: %w", err)
	}
	return doc, nil
}

// Spec is the parsed document.
func (c *Contract) Spec() *openapi3.T { return c.doc }

func options() *openapi3filter.Options {
	o := &openapi3filter.Options{
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
		IncludeResponseStatus: true,
		MultiError:            true,
		SkipSettingDefaults:   true,
	}
	return o
}

// Check validates one exchange: the request (with its body, which Check
// does not read from req) and the response's status, header and body. It
// returns nil when both match the document, else an error naming every
// mismatch found. A request the document forbids is only a mismatch when
// the server accepted it (status < 400). A nil respBody with streamed set
// checks everything but the body.
func (c *Contract) Check(req *http.Request, reqBody []byte, status int, header http.Header, respBody []byte, streamed bool) error {
	ctx := req.Context()
	// The router and the validators read the request's URL, header and
	// body: give them a copy whose body is the bytes the server received.
	r := req.Clone(ctx)
	r.Body = io.NopCloser(bytes.NewReader(reqBody))
	r.ContentLength = int64(len(reqBody))
	if r.Header.Get("Content-Type") == "" && len(reqBody) == 0 {
		// A bodiless request: openapi3filter then checks requestBody.required only.
		r.Body = http.NoBody
	}

	route, pathParams, err := c.router.FindRoute(r)
	if err != nil {
		if status == http.StatusNotFound || status == http.StatusMethodNotAllowed {
			return nil // an undocumented route, refused as such
		}
		return fmt.Errorf("no operation of the document matches (%v), yet the server answered %d", err, status)
	}
	in := &openapi3filter.RequestValidationInput{
		Request:    r,
		PathParams: pathParams,
		Route:      route,
		Options:    options(),
	}
	var errs []error
	if err := openapi3filter.ValidateRequest(ctx, in); err != nil && status < 400 {
		errs = append(errs, fmt.Errorf("the server accepted a request the document forbids: %w", err))
	}

	respIn := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 status,
		Header:                 header,
		Options:                options(),
	}
	respIn.SetBodyBytes(respBody)
	if streamed {
		respIn.Options.ExcludeResponseBody = true
		if err := checkContentType(route.Operation, status, header); err != nil {
			errs = append(errs, err)
		}
	}
	if err := openapi3filter.ValidateResponse(ctx, respIn); err != nil {
		errs = append(errs, fmt.Errorf("response: %w", err))
	}
	return errors.Join(errs...)
}

// checkContentType: the response's media type is one the operation
// documents for this status (for bodies not read).
func checkContentType(op *openapi3.Operation, status int, header http.Header) error {
	ref := op.Responses.Status(status)
	if ref == nil {
		ref = op.Responses.Default()
	}
	if ref == nil || ref.Value == nil || len(ref.Value.Content) == 0 {
		return nil // ValidateResponse reports an undocumented status
	}
	ct := header.Get("Content-Type")
	if ref.Value.Content.Get(ct) == nil {
		return fmt.Errorf("response Content-Type %q is not documented for %d", ct, status)
	}
	return nil
}

// streamedMediaType: bodies the transport does not read ahead of the
// caller. JSON and YAML bodies are read whole and validated.
func streamedMediaType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return ct != ""
	}
	switch {
	case mt == "application/json", strings.HasSuffix(mt, "+json"),
		mt == "application/yaml", mt == "application/x-yaml":
		return false
	}
	return true
}

// Reporter receives mismatches; *testing.T and *testing.B satisfy it.
type Reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// Transport wraps next (http.DefaultTransport when nil) so that every
// exchange through it is checked with Check; a mismatch is reported to t
// with the method, the path, the status and the validator's message. The
// response the caller reads is unchanged.
func (c *Contract) Transport(t Reporter, next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &transport{c: c, t: t, next: next}
}

// Client is a copy of base (http.DefaultClient when nil) whose transport
// checks every exchange (Transport).
func (c *Contract) Client(t Reporter, base *http.Client) *http.Client {
	if base == nil {
		base = http.DefaultClient
	}
	cp := *base
	cp.Transport = c.Transport(t, base.Transport)
	return &cp
}

type transport struct {
	c    *Contract
	t    Reporter
	next http.RoundTripper
}

func (tr *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(io.LimitReader(req.Body, maxBody))
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("apicontract: reading the request body: %w", err)
		}
		reqBody = b
		// RoundTrippers must not change the caller's request: send a copy.
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	resp, err := tr.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	var respBody []byte
	streamed := streamedMediaType(resp.Header.Get("Content-Type"))
	if !streamed {
		b, rerr := io.ReadAll(io.LimitReader(resp.Body, maxBody))
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), errReader{rerr}))
		if rerr != nil {
			return resp, nil // the caller sees the read error; nothing to validate
		}
		respBody = b
	}
	if err := tr.c.Check(req, reqBody, resp.StatusCode, resp.Header, respBody, streamed); err != nil {
		tr.t.Helper()
		tr.t.Errorf("OpenAPI contract: %s %s -> %d: %v", req.Method, req.URL.RequestURI(), resp.StatusCode, err)
	}
	return resp, nil
}

// errReader returns err (io.EOF when nil) once the buffered body is read.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}
