package opsctl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/tidbcloud/ops-server/apiserver/pkg/client"
)

// maxBody bounds every response body read.
const maxBody = 64 << 20

// column is one column of a table: a header and the dotted JSON path of
// its value in an object (format, when set, renders the value).
type column struct {
	header string
	path   string
	format func(v any, now time.Time) string
}

// table says how a response renders as a table: the key of the items of a
// list response (empty: the response is one object, one row) and the
// columns.
type table struct {
	items   string
	columns []column
}

func col(header, path string) column { return column{header: header, path: path} }

// ageCol renders an RFC 3339 time as kubectl renders ages (5s, 3m, 2h, 4d).
func ageCol(path string) column {
	return column{header: "AGE", path: path, format: func(v any, now time.Time) string {
		s, _ := v.(string)
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return "<unknown>"
		}
		return humanDuration(now.Sub(t))
	}}
}

// trimCol renders a string without prefix (vmclusters/ of resource names).
func trimCol(header, path, prefix string) column {
	return column{header: header, path: path, format: func(v any, _ time.Time) string {
		return strings.TrimPrefix(cell(v), prefix)
	}}
}

// humanDuration renders d like kubectl's AGE column.
func humanDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

// call is one API request: it returns the raw response.
type call func(c *client.Client) (*http.Response, error)

// do sends the request and returns the status and body; a non-2xx status is
// a *client.APIError.
func (g *globals) do(req call) (*http.Response, []byte, error) {
	c, err := g.client()
	if err != nil {
		return nil, nil, err
	}
	resp, err := req(c)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return resp, nil, fmt.Errorf("reading the response: %w", err)
	}
	if err := client.ResponseError(resp, body); err != nil {
		return resp, body, err
	}
	return resp, body, nil
}

// run sends the request and prints the response in the output format,
// with t for tables.
func (g *globals) run(req call, t table) error {
	format, err := g.format()
	if err != nil {
		return err
	}
	resp, body, err := g.do(req)
	if err != nil {
		return err
	}
	return g.print(resp, body, format, t)
}

// print writes a response body: json as the API sent it (indented), yaml
// converted from it, table by t. A body that is not JSON is written as it
// is.
func (g *globals) print(resp *http.Response, body []byte, format string, t table) error {
	out := g.io.Out
	if len(bytes.TrimSpace(body)) == 0 {
		if resp != nil {
			fmt.Fprintf(out, "%s\n", resp.Status)
		}
		return nil
	}
	if !json.Valid(body) {
		_, err := out.Write(body)
		return err
	}
	switch format {
	case "json":
		var buf bytes.Buffer
		if err := json.Indent(&buf, body, "", "  "); err != nil {
			return err
		}
		buf.WriteByte('\n')
		_, err := out.Write(buf.Bytes())
		return err
	case "yaml":
		y, err := yaml.JSONToYAML(body)
		if err != nil {
			return err
		}
		_, err = out.Write(y)
		return err
	}
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		return err
	}
	return writeTable(out, doc, t, g.io.Now())
}

// writeTable renders doc as a kubectl-like table: upper-case headers,
// columns aligned with two spaces, <none> for an absent value.
func writeTable(out io.Writer, doc any, t table, now time.Time) error {
	var rows []any
	if t.items != "" {
		m, _ := doc.(map[string]any)
		items, _ := lookup(m, t.items).([]any)
		rows = items
	} else {
		rows = []any{doc}
	}
	if t.items != "" && len(rows) == 0 {
		_, err := fmt.Fprintln(out, "No resources found.")
		return err
	}
	cols := t.columns
	if len(cols) == 0 {
		cols = guessColumns(rows)
	}
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	headers := make([]string, len(cols))
	for i, c := range cols {
		headers[i] = strings.ToUpper(c.header)
	}
	fmt.Fprintln(tw, strings.Join(headers, "\t"))
	for _, r := range rows {
		m, _ := r.(map[string]any)
		cells := make([]string, len(cols))
		for i, c := range cols {
			v := lookup(m, c.path)
			switch {
			case v == nil || v == "":
				cells[i] = "<none>"
			case c.format != nil:
				cells[i] = c.format(v, now)
			default:
				cells[i] = cell(v)
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// guessColumns are the scalar fields of the first row, sorted (for
// responses without a table of their own).
func guessColumns(rows []any) []column {
	if len(rows) == 0 {
		return nil
	}
	m, _ := rows[0].(map[string]any)
	var keys []string
	for k, v := range m {
		switch v.(type) {
		case map[string]any, []any:
		default:
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	cols := make([]column, len(keys))
	for i, k := range keys {
		cols[i] = col(k, k)
	}
	return cols
}

// lookup reads a dotted path of a JSON object.
func lookup(m map[string]any, path string) any {
	var cur any = m
	for _, k := range strings.Split(path, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

// cell renders a JSON value in one table cell.
func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "<none>"
	case string:
		return x
	case float64:
		return fmt.Sprint(x)
	case bool:
		return fmt.Sprint(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = cell(e)
		}
		return strings.Join(parts, ",")
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}
