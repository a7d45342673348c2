// Package openapi serves the OpenAPI 3 document of the whole REST API.
//
// openapi.yaml in this directory is the source of truth (go:embed cannot
// reach outside the module); docs/openapi.yaml is a copy kept equal by
// `go generate` and checked by a test.
package openapi

//go:generate cp openapi.yaml ../../../docs/openapi.yaml

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/labstack/echo/v4"
	"sigs.k8s.io/yaml"

	"github.com/tidbcloud/ops-server/apiserver/internal/server"
)

// Document is the OpenAPI document (YAML).
//
//go:embed openapi.yaml
var Document []byte

// Path is where the document is served.
const Path = "/openapi.yaml"

// API serves the document.
type API struct{}

// Routes implements server.API.
func (API) Routes() []server.Route {
	return []server.Route{{
		Method: http.MethodGet, Path: Path, Name: "openapi", Public: true,
		Handler: func(c echo.Context) error {
			return c.Blob(http.StatusOK, "application/yaml", Document)
		},
	}}
}

var methods = map[string]bool{
	"get": true, "put": true, "post": true, "delete": true, "patch": true, "head": true, "options": true, "trace": true,
}

var paramRE = regexp.MustCompile(`\{([^}/]+)\}`)

// Operations maps each operation of the document, as "METHOD /path" with
// path parameters in echo's form (":name"), to its operationId.
func Operations(doc []byte) (map[string]string, error) {
	var d struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := yaml.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("parsing OpenAPI document: %w", err)
	}
	if !strings.HasPrefix(d.OpenAPI, "3.") {
		return nil, fmt.Errorf("not an OpenAPI 3 document (openapi: %q)", d.OpenAPI)
	}
	out := map[string]string{}
	for p, item := range d.Paths {
		echoPath := paramRE.ReplaceAllString(p, ":$1")
		for m, raw := range item {
			if !methods[m] {
				continue
			}
			var op struct {
				OperationID string `json:"operationId"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				return nil, fmt.Errorf("operation %s %s: %w", m, p, err)
			}
			out[strings.ToUpper(m)+" "+echoPath] = op.OperationID
		}
	}
	return out, nil
}
