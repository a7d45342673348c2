package listing

import (
	"errors"
	"net/url"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in      string
		size    int
		problem string
	}{
		{in: "", size: DefaultPageSize},
		{in: "0", size: DefaultPageSize},
		{in: "1", size: 1},
		{in: "1000", size: 1000},
		{in: "1001", problem: "must be between 0 and 1000"},
		{in: "-1", problem: "must be between 0 and 1000"},
		{in: "ten", problem: "must be an integer"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			g := NewWithT(t)
			size, problem := ParseSize(tc.in)
			g.Expect(problem).To(Equal(tc.problem))
			if tc.problem == "" {
				g.Expect(size).To(Equal(tc.size))
			}
		})
	}
}

func TestParse(t *testing.T) {
	var decoded []string
	decode := func(tok string) error {
		decoded = append(decoded, tok)
		if tok != "good" {
			return ErrInvalid
		}
		return nil
	}
	for _, tc := range []struct {
		name       string
		params     Params
		q          url.Values
		size       int
		violations []apierror.FieldViolation
		decoded    []string
	}{
		{name: "none", params: SnakeCase, q: url.Values{}, size: DefaultPageSize},
		{name: "snake case", params: SnakeCase, q: url.Values{"page_size": {"7"}, "page_token": {"good"}}, size: 7, decoded: []string{"good"}},
		{name: "camel case", params: CamelCase, q: url.Values{"pageSize": {"7"}, "pageToken": {"good"}}, size: 7, decoded: []string{"good"}},
		{name: "the other case is not read", params: CamelCase, q: url.Values{"page_size": {"x"}, "page_token": {"bad"}}, size: DefaultPageSize},
		{name: "empty token", params: SnakeCase, q: url.Values{"page_token": {""}}, size: DefaultPageSize},
		{name: "both bad", params: CamelCase, q: url.Values{"pageSize": {"-1"}, "pageToken": {"bad"}}, size: DefaultPageSize, decoded: []string{"bad"},
			violations: []apierror.FieldViolation{
				{Field: "pageSize", Description: "must be between 0 and 1000"},
				{Field: "pageToken", Description: "is not a page token returned by this API for this query"},
			}},
		{name: "size not an integer", params: SnakeCase, q: url.Values{"page_size": {"x"}}, size: DefaultPageSize,
			violations: []apierror.FieldViolation{{Field: "page_size", Description: "must be an integer"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			decoded = nil
			size, v := tc.params.Parse(tc.q, decode)
			g.Expect(size).To(Equal(tc.size))
			g.Expect(v).To(Equal(tc.violations))
			g.Expect(decoded).To(Equal(tc.decoded))
		})
	}

	// The decoder's own error is the description.
	_, v := SnakeCase.Parse(url.Values{"page_token": {"x"}}, func(string) error { return errors.New("is stale") })
	NewWithT(t).Expect(v).To(Equal([]apierror.FieldViolation{{Field: "page_token", Description: "is stale"}}))
}

func TestWatchViolations(t *testing.T) {
	fields := func(v []apierror.FieldViolation) []string {
		out := []string{}
		for _, f := range v {
			out = append(out, f.Field)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		params Params
		q      url.Values
		watch  bool
		want   []string
	}{
		{name: "list", params: SnakeCase, q: url.Values{"page_size": {"1"}, "page_token": {"t"}}, want: []string{}},
		{name: "watch with pages", params: SnakeCase, q: url.Values{"page_size": {"1"}, "page_token": {"t"}, "resource_version": {"5"}}, watch: true,
			want: []string{"page_size", "page_token"}},
		{name: "resume without watch", params: SnakeCase, q: url.Values{"resource_version": {"5"}}, want: []string{"resource_version"}},
		{name: "camel case", params: CamelCase, q: url.Values{"pageSize": {"1"}, "resourceVersion": {"5"}}, watch: true, want: []string{"pageSize"}},
		{name: "camel case resume without watch", params: CamelCase, q: url.Values{"resourceVersion": {"5"}, "resource_version": {"5"}}, want: []string{"resourceVersion"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(fields(tc.params.WatchViolations(tc.q, tc.watch))).To(Equal(tc.want))
		})
	}
	v := SnakeCase.WatchViolations(url.Values{"page_token": {"t"}, "resource_version": {"5"}}, true)
	NewWithT(t).Expect(v).To(Equal([]apierror.FieldViolation{{Field: "page_token", Description: "a watch has no pages; not allowed with watch=true"}}))
	v = CamelCase.WatchViolations(url.Values{"resourceVersion": {"5"}}, false)
	NewWithT(t).Expect(v).To(Equal([]apierror.FieldViolation{{Field: "resourceVersion", Description: "resumes a watch; only allowed with watch=true"}}))
}
