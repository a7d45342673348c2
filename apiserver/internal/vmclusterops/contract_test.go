package vmclusterops_test

import (
	"net/http"
	"testing"

	"github.com/tidbcloud/ops-server/apiserver/pkg/apicontract"
)

// contractClient is base (http.DefaultClient when nil) checking every
// request and response against the OpenAPI document: a response that does
// not match it fails t (apiserver/pkg/apicontract).
func contractClient(t *testing.T, base *http.Client) *http.Client {
	t.Helper()
	c, err := apicontract.New()
	if err != nil {
		t.Fatalf("loading the OpenAPI contract: %v", err)
	}
	return c.Client(t, base)
}
