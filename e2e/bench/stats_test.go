package bench

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func durations(ms ...int) []time.Duration {
	out := make([]time.Duration, len(ms))
	for i, m := range ms {
		out[i] = time.Duration(m) * time.Millisecond
	}
	return out
}

func TestPercentile(t *testing.T) {
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one value", durations(7), 99, 7 * time.Millisecond},
		{"median of an odd count", durations(1, 2, 3, 4, 5), 50, 3 * time.Millisecond},
		{"median of an even count is the lower middle", durations(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"p99 of 1..100", durations(hundred...), 99, 99 * time.Millisecond},
		{"p100 is the maximum", durations(hundred...), 100, 100 * time.Millisecond},
		{"p99 of ten values is the maximum", durations(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
		{"tiny p is the minimum", durations(5, 6, 7), 0.1, 5 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(Percentile(tc.sorted, tc.p)).To(Equal(tc.want))
		})
	}
}

func TestSummarize(t *testing.T) {
	g := NewWithT(t)
	s := Summarize(Sample{
		Latencies: durations(30, 10, 20, 40),
		Bytes:     400,
		Errors:    2,
		// A first error longer than the limit is cut.
		FirstError: errors.New(string(make([]byte, 400))),
		Elapsed:    2 * time.Second,
	})
	g.Expect(s.Requests).To(Equal(4))
	g.Expect(s.Errors).To(Equal(2))
	g.Expect(s.PerSecond).To(Equal(2.0))
	g.Expect(s.P50Ms).To(Equal(20.0))
	g.Expect(s.P99Ms).To(Equal(40.0))
	g.Expect(s.MaxMs).To(Equal(40.0))
	g.Expect(s.MeanBytes).To(Equal(100.0))
	g.Expect(len(s.FirstError)).To(Equal(303))

	empty := Summarize(Sample{})
	g.Expect(empty).To(Equal(Stats{}))
}

func TestRunNSendsEachSequenceNumberOnce(t *testing.T) {
	g := NewWithT(t)
	var mu sync.Mutex
	seen := map[int]int{}
	s := RunN(context.Background(), 8, 100, func(_ context.Context, _, seq int) (int, error) {
		mu.Lock()
		seen[seq]++
		mu.Unlock()
		if seq%10 == 0 {
			return 0, errors.New("every tenth fails")
		}
		return 3, nil
	})
	g.Expect(seen).To(HaveLen(100))
	for seq, n := range seen {
		g.Expect(n).To(Equal(1), "seq %d", seq)
	}
	g.Expect(s.Latencies).To(HaveLen(90))
	g.Expect(s.Errors).To(Equal(10))
	g.Expect(s.FirstError).To(MatchError("every tenth fails"))
	g.Expect(s.Bytes).To(Equal(int64(270)))
}

func TestRunNWithMoreWorkersThanRequests(t *testing.T) {
	g := NewWithT(t)
	workers := map[int]bool{}
	var mu sync.Mutex
	s := RunN(context.Background(), 32, 3, func(_ context.Context, w, _ int) (int, error) {
		mu.Lock()
		workers[w] = true
		mu.Unlock()
		return 0, nil
	})
	g.Expect(s.Latencies).To(HaveLen(3))
	for w := range workers {
		g.Expect(w).To(BeNumerically("<", 3))
	}
}

func TestRunForStopsAfterTheDuration(t *testing.T) {
	g := NewWithT(t)
	s := RunFor(context.Background(), 4, 50*time.Millisecond, func(ctx context.Context, _, _ int) (int, error) {
		time.Sleep(time.Millisecond)
		return 1, nil
	})
	g.Expect(s.Latencies).NotTo(BeEmpty())
	g.Expect(s.Errors).To(BeZero())
	g.Expect(s.Elapsed).To(BeNumerically(">=", 50*time.Millisecond))
	for _, l := range s.Latencies {
		g.Expect(l).To(BeNumerically(">=", time.Millisecond))
	}
}

func TestRunForStopsWhenTheContextEnds(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	var mu sync.Mutex
	s := RunFor(ctx, 2, time.Hour, func(ctx context.Context, _, _ int) (int, error) {
		mu.Lock()
		calls++
		if calls == 10 {
			cancel()
		}
		mu.Unlock()
		return 0, nil
	})
	g.Expect(ctx.Err()).To(HaveOccurred())
	g.Expect(len(s.Latencies)).To(BeNumerically("<", 10))
}

func TestMedian(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Median(nil)).To(Equal(0.0))
	g.Expect(Median([]float64{5})).To(Equal(5.0))
	v := []float64{9, 1, 5}
	g.Expect(Median(v)).To(Equal(5.0))
	g.Expect(v).To(Equal([]float64{9, 1, 5}), "unchanged")
	g.Expect(Median([]float64{4, 1, 3, 2})).To(Equal(2.5))
}

func TestMedianStats(t *testing.T) {
	g := NewWithT(t)
	g.Expect(MedianStats(nil)).To(Equal(Stats{}))
	runs := []Stats{
		{Requests: 100, PerSecond: 10, P50Ms: 3, P99Ms: 30, MaxMs: 50, Seconds: 10, MeanBytes: 100},
		{Requests: 300, Errors: 2, PerSecond: 30, P50Ms: 1, P99Ms: 10, MaxMs: 90, Seconds: 10, MeanBytes: 200, FirstError: "boom"},
		{Requests: 200, PerSecond: 20, P50Ms: 2, P99Ms: 90, MaxMs: 60, Seconds: 10, MeanBytes: 300, FirstError: "later"},
	}
	g.Expect(MedianStats(runs)).To(Equal(Stats{
		Requests: 600, Errors: 2, Seconds: 30,
		// Each the median of its own values, not the values of one run.
		PerSecond: 20, P50Ms: 2, P99Ms: 30, MaxMs: 60,
		MeanBytes: (100*100 + 300*200 + 200*300) / 600.0, FirstError: "boom",
	}))
}
