package apicontract

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"sigs.k8s.io/yaml"
)

// ErrorSchemaRef is the schema every error response uses (AIP-193).
const ErrorSchemaRef = "#/components/schemas/Error"

var pathParamRE = regexp.MustCompile(`\{([^}/]+)\}`)

// Lint applies the house rules kin-openapi's validation does not know to
// a document already loaded with LoadDocument; raw is its text (to find
// every $ref). It returns one message per violation, sorted:
//
//   - every operation has an operationId, a summary, a tag and a 2xx
//     response;
//   - every authenticated operation (not `security: []`) documents 401,
//     403, 429, 500, 503 and 504 (the request timeout), and 404 when its
//     path has parameters;
//   - every 4xx and 5xx response has an application/json body of the
//     Error schema;
//   - every path parameter of a path template is declared (on the path
//     or the operation) and every declared path parameter is in the
//     template;
//   - every object schema a 2xx JSON response can contain that has
//     properties also says which of them are always there (`required`,
//     possibly empty: `required: []` is not allowed by OpenAPI 3.0, so an
//     object whose every field is optional says so with
//     `x-all-optional: true`);
//   - every component (schema, parameter, response, header, security
//     scheme) is used.
func Lint(doc *openapi3.T, raw []byte) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }

	for _, path := range doc.Paths.InMatchingOrder() {
		item := doc.Paths.Value(path)
		inTemplate := map[string]bool{}
		for _, m := range pathParamRE.FindAllStringSubmatch(path, -1) {
			inTemplate[m[1]] = true
		}
		for method, op := range item.Operations() {
			where := method + " " + path
			if op.OperationID == "" {
				add("%s: no operationId", where)
			}
			if strings.TrimSpace(op.Summary) == "" {
				add("%s: no summary", where)
			}
			if len(op.Tags) == 0 {
				add("%s: no tag", where)
			}
			declared := map[string]bool{}
			for _, params := range []openapi3.Parameters{item.Parameters, op.Parameters} {
				for _, p := range params {
					if p.Value != nil && p.Value.In == openapi3.ParameterInPath {
						declared[p.Value.Name] = true
					}
				}
			}
			for name := range inTemplate {
				if !declared[name] {
					add("%s: path parameter %q is not declared", where, name)
				}
			}
			for name := range declared {
				if !inTemplate[name] {
					add("%s: path parameter %q is not in the path", where, name)
				}
			}
			if op.Security == nil || len(*op.Security) > 0 { // authenticated
				for _, code := range []string{"401", "403", "429", "500", "503", "504"} {
					if op.Responses.Status(mustAtoi(code)) == nil {
						add("%s: an authenticated operation must document %s", where, code)
					}
				}
				if len(inTemplate) > 0 && op.Responses.Status(404) == nil {
					add("%s: an operation on a path with parameters must document 404", where)
				}
			}
			has2xx := false
			for code, ref := range op.Responses.Map() {
				n, err := strconv.Atoi(code)
				if err != nil {
					add("%s: response %q is not a status code", where, code)
					continue
				}
				if n >= 200 && n < 300 {
					has2xx = true
					if ref.Value != nil {
						if mt := ref.Value.Content.Get("application/json"); mt != nil && mt.Schema != nil {
							lintRequired(mt.Schema, where+" "+code, map[*openapi3.Schema]bool{}, add)
						}
					}
				}
				if n >= 400 {
					lintErrorResponse(ref, where+" "+code, add)
				}
			}
			if !has2xx {
				add("%s: no 2xx response", where)
			}
		}
	}
	for _, u := range unusedComponents(doc, raw) {
		add("component %s is never used", u)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func mustAtoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return n
}

func lintErrorResponse(ref *openapi3.ResponseRef, where string, add func(string, ...any)) {
	if ref.Value == nil {
		add("%s: unresolved response", where)
		return
	}
	mt := ref.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil {
		add("%s: an error response needs an application/json body", where)
		return
	}
	if mt.Schema.Ref != ErrorSchemaRef {
		add("%s: an error response's schema must be %s, not %q", where, ErrorSchemaRef, mt.Schema.Ref)
	}
	if ref.Value.Description == nil || strings.TrimSpace(*ref.Value.Description) == "" {
		add("%s: an error response needs a description", where)
	}
}

// lintRequired walks a response schema: every object with properties
// lists its required ones (or says none are).
func lintRequired(ref *openapi3.SchemaRef, where string, seen map[*openapi3.Schema]bool, add func(string, ...any)) {
	if ref == nil || ref.Value == nil || seen[ref.Value] {
		return
	}
	s := ref.Value
	seen[s] = true
	name := where
	if ref.Ref != "" {
		name = ref.Ref
	}
	if len(s.Properties) > 0 && len(s.Required) == 0 && s.Extensions["x-all-optional"] != true {
		add("%s: object schema with properties but no required list (or x-all-optional: true)", name)
	}
	for _, r := range s.Required {
		if _, ok := s.Properties[r]; !ok && len(s.Properties) > 0 {
			add("%s: required %q is not a property", name, r)
		}
	}
	keys := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		lintRequired(s.Properties[k], where+"."+k, seen, add)
	}
	lintRequired(s.Items, where+"[]", seen, add)
	for _, sub := range [][]*openapi3.SchemaRef{s.AllOf, s.AnyOf, s.OneOf} {
		for _, r := range sub {
			lintRequired(r, where, seen, add)
		}
	}
	if s.AdditionalProperties.Schema != nil {
		lintRequired(s.AdditionalProperties.Schema, where+".*", seen, add)
	}
}

// unusedComponents: components no $ref of the document points at, and
// security schemes no security requirement names.
func unusedComponents(doc *openapi3.T, raw []byte) []string {
	refs := map[string]bool{}
	var generic any
	if err := yaml.Unmarshal(raw, &generic); err == nil {
		collectRefs(generic, refs)
	}
	var out []string
	if doc.Components == nil {
		return nil
	}
	check := func(kind string, names []string) {
		for _, n := range names {
			if !refs["#/components/"+kind+"/"+n] {
				out = append(out, kind+"/"+n)
			}
		}
	}
	check("schemas", keys(doc.Components.Schemas))
	check("parameters", keys(doc.Components.Parameters))
	check("responses", keys(doc.Components.Responses))
	check("headers", keys(doc.Components.Headers))
	check("requestBodies", keys(doc.Components.RequestBodies))
	check("examples", keys(doc.Components.Examples))

	usedSchemes := map[string]bool{}
	reqs := append(openapi3.SecurityRequirements{}, doc.Security...)
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if op.Security != nil {
				reqs = append(reqs, *op.Security...)
			}
		}
	}
	for _, r := range reqs {
		for name := range r {
			usedSchemes[name] = true
		}
	}
	for _, n := range keys(doc.Components.SecuritySchemes) {
		if !usedSchemes[n] {
			out = append(out, "securitySchemes/"+n)
		}
	}
	sort.Strings(out)
	return out
}

func collectRefs(v any, refs map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if s, ok := val.(string); ok && k == "$ref" {
				refs[s] = true
				continue
			}
			collectRefs(val, refs)
		}
	case []any:
		for _, e := range x {
			collectRefs(e, refs)
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
