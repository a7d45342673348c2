package stack

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tidbcloud/ops-server/operator/testenv"
)

// ImportURL is the Prometheus text import path of a vminsert beside its
// remote_write endpoint (.../insert/0/prometheus/api/v1/write).
func ImportURL(remoteWrite string) string {
	return strings.TrimSuffix(remoteWrite, "/api/v1/write") + "/api/v1/import/prometheus"
}

// WriteSamples writes series × perSeries samples of metric through a
// vminsert's Prometheus text import URL: series i has label series="i"
// and one sample per second, value = its index, the last one a second
// before end.
func WriteSamples(ctx context.Context, importURL, metric string, series, perSeries int, end time.Time) error {
	return WriteSamplesFrom(ctx, importURL, metric, 0, series, perSeries, end)
}

// WriteSamplesFrom is WriteSamples for the series first to
// first+series-1.
func WriteSamplesFrom(ctx context.Context, importURL, metric string, first, series, perSeries int, end time.Time) error {
	var b strings.Builder
	last := end.Add(-time.Second).UnixMilli()
	for i := first; i < first+series; i++ {
		for j := range perSeries {
			fmt.Fprintf(&b, "%s{series=\"%d\"} %d %d\n", metric, i, j, last-int64(perSeries-1-j)*1000)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, importURL, strings.NewReader(b.String()))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("POST %s: %s: %s", importURL, resp.Status, body)
	}
	return nil
}

// QueryScalar runs an instant PromQL query at a Prometheus-compatible
// endpoint (.../select/0/prometheus) and returns the value of its one
// result.
func QueryScalar(ctx context.Context, prometheus, query string) (float64, error) {
	u := prometheus + "/api/v1/query?" + url.Values{"query": {query}}.Encode()
	var out struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := testenv.GetJSON(ctx, nil, u, &out); err != nil {
		return 0, err
	}
	if len(out.Data.Result) != 1 {
		return 0, fmt.Errorf("%s: %d results, want 1: %v", query, len(out.Data.Result), out.Data.Result)
	}
	s, _ := out.Data.Result[0].Value[1].(string)
	return strconv.ParseFloat(s, 64)
}
