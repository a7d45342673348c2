package app

import (
	"os"
	"path/filepath"
	"regexp"
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

// TestPermissionsDocumented fails when the permission table of
// docs/auth.md and the routes disagree: every guarded route has exactly
// one row with its resource and verb, and every row is a route.
func TestPermissionsDocumented(t *testing.T) {
	g := NewWithT(t)
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "auth.md"))
	g.Expect(err).NotTo(HaveOccurred())
	row := regexp.MustCompile("(?m)^\\| `(GET|POST|PUT|DELETE) ([^`]+)` \\| `([^`]+)` \\| `([^`]+)` \\| `([^`]+)` \\| (viewer|operator|admin) \\|$")
	documented := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		path := regexp.MustCompile(`\{([^}]+)\}`).ReplaceAllString(m[2], ":$1")
		key := m[1] + " " + path
		g.Expect(documented).NotTo(HaveKey(key), "%s has two rows", key)
		documented[key] = m[3] + " " + m[4] + " " + m[5]
	}
	routes := map[string]string{}
	for _, api := range APIs(nil, nil) {
		for _, r := range api.Routes() {
			if !r.Public {
				routes[r.Method+" "+r.Path] = r.Name + " " + r.Resource + " " + r.Verb
			}
		}
	}
	g.Expect(documented).To(Equal(routes), "docs/auth.md's permission table and the routes differ")
}
