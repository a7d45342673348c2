package openapi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// TestDocsCopy keeps docs/openapi.yaml equal to the embedded source of
// truth.
func TestDocsCopy(t *testing.T) {
	g := NewWithT(t)
	docs, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "openapi.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(docs)).To(Equal(string(Document)),
		"docs/openapi.yaml differs from apiserver/internal/openapi/openapi.yaml: edit the latter and run `go generate ./apiserver/internal/openapi`")
}

func TestOperations(t *testing.T) {
	g := NewWithT(t)
	ops, err := Operations(Document)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ops).To(HaveKeyWithValue("GET /api/v1/observability-ops/vmclusters/:vmclusterId", "vmclusters.get"))
	for op, id := range ops {
		g.Expect(id).NotTo(BeEmpty(), "operationId of %s", op)
	}
	_, err = Operations([]byte("swagger: '2.0'\npaths: {}\n"))
	g.Expect(err).To(HaveOccurred())
}

// TestSecurityDocumented: the document says which operations want a
// bearer token (all but the operational ones, which opt out with an empty
// security list) and documents their 401, 403 and 429 answers.
func TestSecurityDocumented(t *testing.T) {
	g := NewWithT(t)
	var d struct {
		Security []map[string][]string                 `json:"security"`
		Paths    map[string]map[string]json.RawMessage `json:"paths"`
	}
	type operation struct {
		OperationID string                 `json:"operationId"`
		Security    *[]map[string][]string `json:"security"`
		Responses   map[string]any         `json:"responses"`
	}
	g.Expect(yaml.Unmarshal(Document, &d)).To(Succeed())
	g.Expect(d.Security).To(ContainElement(HaveKey("bearerAuth")))
	public := map[string]bool{"healthz": true, "readyz": true, "metrics": true, "openapi": true, "version": true, "docs": true, "docs.viewer": true}
	for path, ops := range d.Paths {
		for method, raw := range ops {
			if !methods[method] {
				continue
			}
			var op operation
			g.Expect(json.Unmarshal(raw, &op)).To(Succeed())
			if public[op.OperationID] {
				g.Expect(op.Security).NotTo(BeNil(), "%s %s is public: it needs `security: []`", method, path)
				g.Expect(*op.Security).To(BeEmpty())
				continue
			}
			g.Expect(op.Security).To(BeNil(), "%s %s must use the document's bearerAuth", method, path)
			for _, code := range []string{"401", "403", "429"} {
				g.Expect(op.Responses).To(HaveKey(code), "%s %s (%s) does not document %s", method, path, op.OperationID, code)
			}
		}
	}
}

// TestQueryParameters: every operation of the document has an entry, with
// the query parameters it declares (`$ref`s resolved) and no header or
// path parameter.
func TestQueryParameters(t *testing.T) {
	g := NewWithT(t)
	qp, err := QueryParameters(Document)
	g.Expect(err).NotTo(HaveOccurred())
	ops, err := Operations(Document)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(qp).To(HaveLen(len(ops)))
	for op := range ops {
		g.Expect(qp).To(HaveKey(op))
	}
	g.Expect(qp["GET /ops/api/v1/upgradeOperations"]).To(ConsistOf("k8sClusterName", "status", "pageSize", "pageToken", "watch", "resourceVersion"))
	g.Expect(qp["GET /api/v1/observability-ops/vmclusters/:vmclusterId"]).To(BeEmpty())

	_, err = QueryParameters([]byte("openapi: 3.0.3\npaths:\n  /x:\n    get:\n      parameters:\n        - {$ref: '#/components/parameters/Nope'}\n"))
	g.Expect(err).To(MatchError(ContainSubstring("Nope")))
}
