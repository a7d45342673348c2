package openapi

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
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
