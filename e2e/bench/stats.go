package bench

import (
	"math"
	"slices"
	"time"
)

// Stats summarises one load run.
type Stats struct {
	// Requests is the number of successful requests, Errors the failed.
	Requests int `json:"requests"`
	Errors   int `json:"errors"`
	// Seconds is the wall time of the run.
	Seconds float64 `json:"seconds"`
	// PerSecond is successful requests per second of wall time.
	PerSecond float64 `json:"perSecond"`
	// Latency percentiles (nearest rank) and maximum, in milliseconds.
	P50Ms float64 `json:"p50Ms"`
	P99Ms float64 `json:"p99Ms"`
	MaxMs float64 `json:"maxMs"`
	// MeanBytes is the mean size of a response body.
	MeanBytes  float64 `json:"meanBytes,omitempty"`
	FirstError string  `json:"firstError,omitempty"`
}

// Percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method: the smallest value such that at least p % of the
// values are less than or equal to it. It returns 0 for no values.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// Summarize computes the statistics of a sample. It sorts the sample's
// latencies in place.
func Summarize(s Sample) Stats {
	slices.Sort(s.Latencies)
	st := Stats{Requests: len(s.Latencies), Errors: s.Errors, Seconds: s.Elapsed.Seconds()}
	if s.Elapsed > 0 {
		st.PerSecond = float64(st.Requests) / s.Elapsed.Seconds()
	}
	if n := len(s.Latencies); n > 0 {
		st.P50Ms = ms(Percentile(s.Latencies, 50))
		st.P99Ms = ms(Percentile(s.Latencies, 99))
		st.MaxMs = ms(s.Latencies[n-1])
		st.MeanBytes = float64(s.Bytes) / float64(n)
	}
	if s.FirstError != nil {
		st.FirstError = truncate(s.FirstError.Error(), 300)
	}
	return st
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Ratio returns a/b, or 0 when b is 0.
func Ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// MedianStats combines the runs of one side of a row: the median of each
// rate and latency (req/s, p50, p99, max), the totals of requests, errors
// and seconds, the mean response size over every request and the first
// error. Zero runs give zero Stats.
func MedianStats(runs []Stats) Stats {
	var st Stats
	if len(runs) == 0 {
		return st
	}
	var bytes float64
	for _, r := range runs {
		st.Requests += r.Requests
		st.Errors += r.Errors
		st.Seconds += r.Seconds
		bytes += r.MeanBytes * float64(r.Requests)
		if st.FirstError == "" {
			st.FirstError = r.FirstError
		}
	}
	if st.Requests > 0 {
		st.MeanBytes = bytes / float64(st.Requests)
	}
	pick := func(f func(Stats) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = f(r)
		}
		return Median(v)
	}
	st.PerSecond = pick(func(s Stats) float64 { return s.PerSecond })
	st.P50Ms = pick(func(s Stats) float64 { return s.P50Ms })
	st.P99Ms = pick(func(s Stats) float64 { return s.P99Ms })
	st.MaxMs = pick(func(s Stats) float64 { return s.MaxMs })
	return st
}

// Median is the middle value of v (the mean of the two middle ones for an
// even count; 0 for none). It does not change v.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
