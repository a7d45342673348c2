package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Metric is one sample of the Prometheus text exposition format.
type Metric struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// ParseMetrics parses the Prometheus text format (comments and blank
// lines skipped; timestamps ignored).
func ParseMetrics(text string) ([]Metric, error) {
	var out []Metric
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m, err := parseMetricLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n+1, err)
		}
		out = append(out, m)
	}
	return out, nil
}

func parseMetricLine(line string) (Metric, error) {
	m := Metric{Labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return m, fmt.Errorf("no value in %q", line)
	}
	m.Name = line[:i]
	rest := line[i:]
	if strings.HasPrefix(rest, "{") {
		var err error
		if rest, err = parseLabels(rest[1:], m.Labels); err != nil {
			return m, fmt.Errorf("%w in %q", err, line)
		}
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return m, fmt.Errorf("no value in %q", line)
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return m, fmt.Errorf("value of %q: %w", line, err)
	}
	m.Value = v
	return m, nil
}

// parseLabels reads `name="value",...}` into labels and returns what
// follows the closing brace. Values may hold escaped quotes, backslashes
// and newlines.
func parseLabels(s string, labels map[string]string) (string, error) {
	for {
		s = strings.TrimLeft(s, " ,")
		if strings.HasPrefix(s, "}") {
			return s[1:], nil
		}
		eq := strings.IndexByte(s, '=')
		if eq < 0 || len(s) < eq+2 || s[eq+1] != '"' {
			return "", fmt.Errorf("malformed labels")
		}
		name := strings.TrimSpace(s[:eq])
		s = s[eq+2:]
		var b strings.Builder
		closed := false
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					b.WriteByte('\n')
				default:
					b.WriteByte(s[i])
				}
				continue
			}
			if c == '"' {
				s, closed = s[i+1:], true
				break
			}
			b.WriteByte(c)
		}
		if !closed {
			return "", fmt.Errorf("unterminated label value")
		}
		labels[name] = b.String()
	}
}

// Sum adds up the samples named name whose labels include every pair of
// match.
func Sum(ms []Metric, name string, match map[string]string) float64 {
	total := 0.0
	for _, m := range ms {
		if m.Name != name || !hasLabels(m, match) {
			continue
		}
		total += m.Value
	}
	return total
}

// SumBy adds up the samples named name by the value of label.
func SumBy(ms []Metric, name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range ms {
		if m.Name == name {
			out[m.Labels[label]] += m.Value
		}
	}
	return out
}

func hasLabels(m Metric, match map[string]string) bool {
	for k, v := range match {
		if m.Labels[k] != v {
			return false
		}
	}
	return true
}

// Scrape reads and parses a /metrics endpoint.
func Scrape(ctx context.Context, url string) ([]Metric, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return ParseMetrics(string(b))
}
