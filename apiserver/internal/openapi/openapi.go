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
	ops, err := parse(doc)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(ops))
	for key, op := range ops {
		out[key] = op.id
	}
	return out, nil
}

// QueryParameters maps each operation of the document, keyed as in
// Operations, to the names of the query parameters it declares (its own
// and its path's, `$ref`s to components/parameters resolved). The server
// refuses any other query parameter (server.Options.QueryParameters):
// the document is the one list of what each route accepts.
func QueryParameters(doc []byte) (map[string][]string, error) {
	ops, err := parse(doc)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]string, len(ops))
	for key, op := range ops {
		out[key] = op.query
	}
	return out, nil
}

// operation is what the server reads of one operation of the document.
type operation struct {
	id    string
	query []string
}

type parameter struct {
	Ref  string `json:"$ref"`
	Name string `json:"name"`
	In   string `json:"in"`
}

// parse walks the document's operations once, keyed "METHOD /echo/path".
func parse(doc []byte) (map[string]operation, error) {
	var d struct {
		OpenAPI    string                                `json:"openapi"`
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Parameters map[string]parameter `json:"parameters"`
		} `json:"components"`
	}
	if err := yaml.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("parsing OpenAPI document: %w", err)
	}
	if !strings.HasPrefix(d.OpenAPI, "3.") {
		return nil, fmt.Errorf("not an OpenAPI 3 document (openapi: %q)", d.OpenAPI)
	}
	// queryNames appends the names of the query parameters of raw (a
	// parameter list) to into.
	queryNames := func(raw json.RawMessage, into []string) ([]string, error) {
		var ps []parameter
		if err := json.Unmarshal(raw, &ps); err != nil {
			return nil, err
		}
		for _, p := range ps {
			if p.Ref != "" {
				name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/")
				r, found := d.Components.Parameters[name]
				if !ok || !found {
					return nil, fmt.Errorf("unresolvable parameter reference %q", p.Ref)
				}
				p = r
			}
			if p.In == "query" {
				into = append(into, p.Name)
			}
		}
		return into, nil
	}
	out := map[string]operation{}
	for p, item := range d.Paths {
		echoPath := paramRE.ReplaceAllString(p, ":$1")
		var shared []string
		if raw, ok := item["parameters"]; ok {
			var err error
			if shared, err = queryNames(raw, nil); err != nil {
				return nil, fmt.Errorf("parameters of %s: %w", p, err)
			}
		}
		for m, raw := range item {
			if !methods[m] {
				continue
			}
			var op struct {
				OperationID string          `json:"operationId"`
				Parameters  json.RawMessage `json:"parameters"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				return nil, fmt.Errorf("operation %s %s: %w", m, p, err)
			}
			query := append([]string{}, shared...)
			if op.Parameters != nil {
				var err error
				if query, err = queryNames(op.Parameters, query); err != nil {
					return nil, fmt.Errorf("operation %s %s: %w", m, p, err)
				}
			}
			out[strings.ToUpper(m)+" "+echoPath] = operation{id: op.OperationID, query: query}
		}
	}
	return out, nil
}
