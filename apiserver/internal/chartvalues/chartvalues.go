// Package chartvalues checks the Helm values of a request against the chart
// they will be installed with, before anything is written: the values are
// merged over the chart's defaults the way Helm merges them, validated
// against the chart's values.schema.json with the JSON-schema
// implementation Helm itself uses (santhosh-tekuri/jsonschema/v6, as in
// helm.sh/helm/v4/pkg/chart/common/util), and the chart is rendered once with the
// Helm engine so that a template's own `fail` refuses the request too.
//
// Helm validates the same schema at install, but its answer arrives as a
// FAILED release minutes later and as one block of text; here every
// problem is one field violation named after the value
// ("values.vmselect.service.type"), at request time.
//
// A schema is compiled without any loader: a chart's schema cannot make
// ops-apiserver read a file or a URL.
package chartvalues

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/engine"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
)

// Field is the request field the values are in; violations are named
// below it.
const Field = "values"

// schemaURL is the name the schema is compiled under (as Helm does).
const schemaURL = "file:///values.schema.json"

// renderRelease is the release the chart is rendered as at request time;
// only metadata depends on it.
var renderRelease = common.ReleaseOptions{Name: "validation", Namespace: "validation", Revision: 1, IsInstall: true}

// Validator checks values against one chart version.
type Validator struct {
	chart  *chart.Chart
	schema *jsonschema.Schema // nil: the chart has no values.schema.json
}

// New compiles the schema of c. A chart without a schema gets a
// validator that only renders it.
func New(c *chart.Chart) (*Validator, error) {
	if c == nil {
		return nil, errors.New("no chart")
	}
	v := &Validator{chart: c}
	if len(c.Schema) == 0 {
		return v, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(c.Schema))
	if err != nil {
		return nil, fmt.Errorf("chart %s-%s: reading values.schema.json: %w", c.Name(), c.Metadata.Version, err)
	}
	comp := jsonschema.NewCompiler()
	comp.UseLoader(noLoader{})
	if err := comp.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("chart %s-%s: values.schema.json: %w", c.Name(), c.Metadata.Version, err)
	}
	if v.schema, err = comp.Compile(schemaURL); err != nil {
		return nil, fmt.Errorf("chart %s-%s: compiling values.schema.json: %w", c.Name(), c.Metadata.Version, err)
	}
	return v, nil
}

// noLoader refuses every external reference of a schema.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema references are not followed (%.100s)", url)
}

// Chart is the chart the validator checks against.
func (v *Validator) Chart() *chart.Chart { return v.chart }

// HasSchema reports whether the chart has a values.schema.json.
func (v *Validator) HasSchema() bool { return v.schema != nil }

// Validate checks values (a JSON object) merged over the chart's
// defaults and returns one violation per problem, none if the chart
// accepts them.
func (v *Validator) Validate(values []byte) []apierror.FieldViolation {
	merged, err := v.merge(values, true)
	if err != nil {
		return []apierror.FieldViolation{apierror.Violation(Field, "%s", err)}
	}
	if v.schema != nil {
		if err := v.schema.Validate(map[string]any(merged)); err != nil {
			var ve *jsonschema.ValidationError
			if !errors.As(err, &ve) {
				return []apierror.FieldViolation{apierror.Violation(Field, "cannot be validated against the chart's schema")}
			}
			return dedupe(violations(ve, merged))
		}
	}
	if out := crossField(merged); len(out) > 0 {
		return out
	}
	if _, err := v.render(values, false); err != nil {
		return []apierror.FieldViolation{apierror.Violation(Field, "the chart refuses these values: %s", renderMessage(err))}
	}
	return nil
}

// merge decodes values and merges them over the chart's defaults as Helm
// does (a null removes a default). With numbers, numbers stay as written
// (json.Number), so that 1.0000000000000001 is not an integer.
func (v *Validator) merge(values []byte, numbers bool) (common.Values, error) {
	dec := json.NewDecoder(bytes.NewReader(values))
	if numbers {
		dec.UseNumber()
	}
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, errors.New("must be a JSON object")
	}
	if m == nil {
		m = map[string]any{}
	}
	merged, err := chartutil.CoalesceValues(v.chart, m)
	if err != nil {
		return nil, fmt.Errorf("cannot be merged over the chart's defaults: %v", err)
	}
	return merged, nil
}

// Render renders the chart with values the way helm-controller does
// (values decoded as plain JSON, merged over the defaults, checked
// against the schema by Helm) and returns the rendered manifests by
// template name.
func (v *Validator) Render(values []byte) (map[string]string, error) {
	return v.render(values, true)
}

// render renders the chart; helmSchema also runs Helm's own schema check
// (Validate has run the same schema already).
func (v *Validator) render(values []byte, helmSchema bool) (map[string]string, error) {
	var m map[string]any
	if err := json.Unmarshal(values, &m); err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	rv, err := chartutil.ToRenderValuesWithSchemaValidation(v.chart, m, renderRelease, common.DefaultCapabilities, !helmSchema)
	if err != nil {
		return nil, err
	}
	return engine.Render(v.chart, rv)
}

// executionRE finds the message of a template's `fail` in an engine error.
var executionRE = regexp.MustCompile(`error calling fail: (.*)$|execution error at \([^)]*\): (.*)$`)

func renderMessage(err error) string {
	msg := err.Error()
	if m := executionRE.FindStringSubmatch(msg); m != nil {
		msg = m[1] + m[2]
	}
	return clip(msg, 300)
}

// crossField checks what a JSON schema cannot express: replicationFactor
// at most vmstorage.replicaCount (the vmcluster chart's template fails on
// it too, with a less precise message).
func crossField(merged common.Values) []apierror.FieldViolation {
	rf, ok1 := number(merged["replicationFactor"])
	storage, _ := merged["vmstorage"].(map[string]any)
	rc, ok2 := number(storage["replicaCount"])
	if ok1 && ok2 && rf.Cmp(rc) > 0 {
		return []apierror.FieldViolation{apierror.Violation(Field+".replicationFactor",
			"must be at most vmstorage.replicaCount (%s)", rc.RatString())}
	}
	return nil
}

func number(v any) (*big.Rat, bool) {
	var s string
	switch t := v.(type) {
	case json.Number:
		s = t.String()
	case float64:
		s = strconv.FormatFloat(t, 'g', -1, 64)
	case int64:
		s = strconv.FormatInt(t, 10)
	case int:
		s = strconv.Itoa(t)
	default:
		return nil, false
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

// violations flattens a validation error into one violation per leaf.
func violations(ve *jsonschema.ValidationError, root any) []apierror.FieldViolation {
	if len(ve.Causes) > 0 {
		if pn, ok := ve.ErrorKind.(*kind.PropertyNames); ok {
			// jsonschema v6.0.3 does not copy the instance location of a
			// propertyNames error (it may name another object): name the
			// key only. Our chart uses patternProperties instead.
			return []apierror.FieldViolation{apierror.Violation(Field, "has a key the chart's schema does not allow: %s", key(pn.Property))}
		}
		var out []apierror.FieldViolation
		for _, c := range ve.Causes {
			out = append(out, violations(c, root)...)
		}
		return out
	}
	loc := ve.InstanceLocation
	switch k := ve.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		out := make([]apierror.FieldViolation, 0, len(k.Properties))
		for _, p := range k.Properties {
			out = append(out, apierror.Violation(path(root, append(append([]string{}, loc...), p)), "unknown field (or a key the chart does not allow here)"))
		}
		return out
	case *kind.Required:
		out := make([]apierror.FieldViolation, 0, len(k.Missing))
		for _, p := range k.Missing {
			out = append(out, apierror.Violation(path(root, append(append([]string{}, loc...), p)),
				"is required (a null removes the chart's default)"))
		}
		return out
	}
	return []apierror.FieldViolation{apierror.Violation(path(root, loc), "%s", describe(ve.ErrorKind))}
}

var printer = message.NewPrinter(language.English)

// describe says what is wrong without echoing the value (which may be
// long or carry control characters).
func describe(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		return fmt.Sprintf("must be of type %s, not %s", strings.Join(k.Want, " or "), k.Got)
	case *kind.Enum:
		want := make([]string, 0, len(k.Want))
		for _, w := range k.Want {
			b, _ := json.Marshal(w)
			want = append(want, string(b))
		}
		return "must be one of " + strings.Join(want, ", ")
	case *kind.Pattern:
		return "must match " + k.Want
	case *kind.Minimum:
		return "must be at least " + k.Want.RatString()
	case *kind.Maximum:
		return "must be at most " + k.Want.RatString()
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d characters", k.Want)
	case *kind.MinLength:
		return fmt.Sprintf("must be at least %d characters", k.Want)
	case *kind.MaxItems:
		return fmt.Sprintf("must have at most %d items", k.Want)
	case *kind.MaxProperties:
		return fmt.Sprintf("must have at most %d entries", k.Want)
	case *kind.FalseSchema:
		return "is not allowed"
	}
	return clip(k.LocalizedString(printer), 200)
}

// path names the value at loc: values.a.b[0].c, keys that are not plain
// identifiers quoted.
func path(root any, loc []string) string {
	var b strings.Builder
	b.WriteString(Field)
	cur := root
	for _, seg := range loc {
		switch c := cur.(type) {
		case []any:
			i, err := strconv.Atoi(seg)
			if err == nil && i >= 0 && i < len(c) {
				fmt.Fprintf(&b, "[%d]", i)
				cur = c[i]
				continue
			}
			cur = nil
		case map[string]any:
			cur = c[seg]
		case common.Values:
			cur = c[seg]
		default:
			cur = nil
		}
		b.WriteString(".")
		b.WriteString(key(seg))
	}
	return b.String()
}

var plainKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// key makes a user's key safe to echo in a field path.
func key(k string) string {
	if plainKeyRE.MatchString(k) {
		return k
	}
	return strconv.Quote(clip(strings.ToValidUTF8(k, "?"), 64))
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// dedupe makes one violation per field (the problems of one field joined),
// sorted by field.
func dedupe(in []apierror.FieldViolation) []apierror.FieldViolation {
	byField := map[string][]string{}
	var order []string
	for _, v := range in {
		if _, ok := byField[v.Field]; !ok {
			order = append(order, v.Field)
		}
		if !slices.Contains(byField[v.Field], v.Description) {
			byField[v.Field] = append(byField[v.Field], v.Description)
		}
	}
	sort.Strings(order)
	out := make([]apierror.FieldViolation, 0, len(order))
	for _, f := range order {
		out = append(out, apierror.FieldViolation{Field: f, Description: strings.Join(byField[f], "; ")})
	}
	return out
}
