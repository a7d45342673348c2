package app

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/apiserver/internal/openapi"
	"github.com/tidbcloud/ops-server/apiserver/internal/server"
)

// TestRoutesMatchOpenAPI fails when a registered route is missing from
// the OpenAPI document, when the document names a route that does not
// exist, or when an operationId and the route name differ.
func TestRoutesMatchOpenAPI(t *testing.T) {
	g := NewWithT(t)
	e, err := server.New(server.Options{}, APIs(nil, nil)...)
	g.Expect(err).NotTo(HaveOccurred())

	registered := map[string]string{}
	for _, r := range e.Routes() {
		registered[r.Method+" "+r.Path] = r.Name
	}
	documented, err := openapi.Operations(openapi.Document)
	g.Expect(err).NotTo(HaveOccurred())

	for op := range registered {
		g.Expect(documented).To(HaveKey(op), "route %s is not in the OpenAPI document", op)
	}
	for op := range documented {
		g.Expect(registered).To(HaveKey(op), "the OpenAPI document names %s, which is not a route", op)
	}
	g.Expect(registered).To(Equal(documented), "route names and operationIds must match")
	g.Expect(len(registered)).To(BeNumerically(">=", 9))
}
