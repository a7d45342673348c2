package apicontract

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
)

// recorder is a Reporter that keeps what it is told.
type recorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}

const (
	versionPath  = "/version"
	vmclusters   = "/api/v1/observability-ops/vmclusters"
	logsPath     = vmclusters + "/vm1/pods/vmstorage-vm1-0/logs"
	goodVersion  = `{"version":"v1","revision":"abc","goVersion":"go1.26.0"}`
	errorBody    = `{"error":{"code":400,"status":"INVALID_ARGUMENT","message":"bad"}}`
	notFoundBody = `{"error":{"code":404,"status":"NOT_FOUND","message":"no such route"}}`
)

// TestTransportCatchesWrongResponses: a fake server answers with what a
// test case says; the transport must report exactly the exchanges that
// do not match the document, and leave the body readable for the caller.
func TestTransportCatchesWrongResponses(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		method      string
		path        string
		reqBody     string
		status      int
		contentType string
		respBody    string
		want        string // "" means no mismatch; else a substring of the report
	}{
		{name: "matching response", method: "GET", path: versionPath, status: 200, contentType: "application/json", respBody: goodVersion},
		{name: "missing required field", method: "GET", path: versionPath, status: 200, contentType: "application/json",
			respBody: `{"version":"v1","revision":"abc"}`, want: `property "goVersion" is missing`},
		{name: "wrong type", method: "GET", path: versionPath, status: 200, contentType: "application/json",
			respBody: `{"version":3,"revision":"abc","goVersion":"go"}`, want: `value must be a string`},
		{name: "undocumented status", method: "GET", path: versionPath, status: 418, contentType: "application/json",
			respBody: goodVersion, want: "status is not supported"},
		{name: "undocumented content type", method: "GET", path: versionPath, status: 200, contentType: "text/html",
			respBody: "<p>hi</p>", want: "text/html"},
		{name: "error body not an AIP-193 error", method: "GET", path: vmclusters + "/vm1", status: 404, contentType: "application/json",
			respBody: `{"message":"not found"}`, want: `property "error" is missing`},
		{name: "invalid request refused", method: "POST", path: vmclusters, reqBody: `{"name":"UPPER"}`, status: 400,
			contentType: "application/json", respBody: errorBody},
		{name: "invalid request accepted", method: "POST", path: vmclusters, reqBody: `{"name":"UPPER"}`, status: 202,
			contentType: "application/json", respBody: `{}`, want: "the server accepted a request the document forbids"},
		{name: "undocumented route refused", method: "GET", path: "/nowhere", status: 404, contentType: "application/json", respBody: notFoundBody},
		{name: "undocumented route answered", method: "GET", path: "/nowhere", status: 200, contentType: "application/json",
			respBody: `{}`, want: "no operation of the document matches"},
		{name: "streamed body with the documented type", method: "GET", path: logsPath + "?follow=true", status: 200,
			contentType: "text/plain; charset=utf-8", respBody: "line 1\nline 2\n"},
		{name: "streamed body with another type", method: "GET", path: logsPath, status: 200,
			contentType: "application/octet-stream", respBody: "\x00\x01", want: "application/octet-stream"},
		{name: "streamed response with an undocumented status", method: "GET", path: logsPath, status: 202,
			contentType: "text/plain", respBody: "x", want: "status is not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var gotBody string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				gotBody = string(b)
				w.Header().Set("Content-Type", tc.contentType)
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.respBody)
			}))
			defer srv.Close()
			rec := &recorder{}
			hc := c.Client(rec, srv.Client())

			var body io.Reader
			if tc.reqBody != "" {
				body = strings.NewReader(tc.reqBody)
			}
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, body)
			g.Expect(err).NotTo(HaveOccurred())
			if body != nil {
				req.Header.Set("Content-Type", "application/json")
			}
			req.Header.Set("Authorization", "Bearer x")
			resp, err := hc.Do(req)
			g.Expect(err).NotTo(HaveOccurred())
			read, err := io.ReadAll(resp.Body)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(resp.Body.Close()).To(Succeed())

			g.Expect(string(read)).To(Equal(tc.respBody), "the caller reads the body unchanged")
			g.Expect(gotBody).To(Equal(tc.reqBody), "the server receives the request body unchanged")
			g.Expect(resp.StatusCode).To(Equal(tc.status))
			if tc.want == "" {
				g.Expect(rec.msgs).To(BeEmpty())
				return
			}
			g.Expect(rec.msgs).To(HaveLen(1))
			g.Expect(rec.msgs[0]).To(ContainSubstring(tc.want))
			u := req.URL.RequestURI()
			g.Expect(rec.msgs[0]).To(ContainSubstring(fmt.Sprintf("%s %s -> %d", tc.method, u, tc.status)),
				"the report names the method, the path and the status")
		})
	}
}

// TestLintCatchesSloppyDocuments: each house rule of Lint fires on a
// document that breaks it.
func TestLintCatchesSloppyDocuments(t *testing.T) {
	const base = `openapi: 3.0.3
info: {title: t, version: v1}
security: [{bearerAuth: []}]
paths:
  /things/{id}:
    get:
      operationId: things.get
      summary: Get a thing.
      tags: [things]
      security: []
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Thing'}
        '404':
          description: No thing with this id.
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Error'}
components:
  securitySchemes:
    bearerAuth: {type: http, scheme: bearer}
  schemas:
    Thing:
      type: object
      required: [name]
      properties:
        name: {type: string}
    Error:
      type: object
      required: [error]
      properties:
        error: {type: object, required: [code], properties: {code: {type: integer}}}
`
	for _, tc := range []struct {
		name string
		edit func(string) string
		want string
	}{
		{name: "clean", edit: func(s string) string { return s }},
		{name: "no operationId", edit: func(s string) string { return strings.Replace(s, "      operationId: things.get\n", "", 1) },
			want: "GET /things/{id}: no operationId"},
		{name: "no summary", edit: func(s string) string { return strings.Replace(s, "      summary: Get a thing.\n", "", 1) },
			want: "no summary"},
		{name: "error response without the error schema", edit: func(s string) string {
			return strings.Replace(s, "schema: {$ref: '#/components/schemas/Error'}", "schema: {type: object}", 1)
		}, want: "GET /things/{id} 404: an error response's schema must be #/components/schemas/Error"},
		{name: "response object without required", edit: func(s string) string {
			return strings.Replace(s, "      required: [name]\n", "", 1)
		}, want: "#/components/schemas/Thing: object schema with properties but no required list"},
		{name: "authenticated operation without its error responses", edit: func(s string) string {
			return strings.Replace(s, "      security: []\n", "", 1)
		}, want: "GET /things/{id}: an authenticated operation must document 401"},
		{name: "unused component", edit: func(s string) string {
			return s + "    Unused: {type: string}\n"
		}, want: "component schemas/Unused is never used"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			raw := []byte(tc.edit(base))
			doc, err := LoadDocument(raw)
			g.Expect(err).NotTo(HaveOccurred())
			problems := Lint(doc, raw)
			if tc.want == "" {
				g.Expect(problems).To(BeEmpty())
				return
			}
			g.Expect(problems).To(ContainElement(ContainSubstring(tc.want)))
		})
	}
}

// TestLoadDocumentIsStrict: kin-openapi's validation runs (a dangling
// reference, an example that breaks its schema).
func TestLoadDocumentIsStrict(t *testing.T) {
	g := NewWithT(t)
	_, err := LoadDocument([]byte(`openapi: 3.0.3
info: {title: t, version: v1}
paths:
  /x:
    get:
      responses:
        '200': {$ref: '#/components/responses/Missing'}
`))
	g.Expect(err).To(HaveOccurred())
	_, err = LoadDocument([]byte(`openapi: 3.0.3
info: {title: t, version: v1}
paths: {}
components:
  schemas:
    N: {type: integer, example: not-a-number}
`))
	g.Expect(err).To(HaveOccurred())
}
