// Package bench measures ops-server side by side with what a user would do
// without it: the same reads and writes sent straight to kube-apiserver,
// the same Helm releases created straight for Flux. It drives the local
// stack of package stack and is run by `make bench` (cmd/ops-bench). It
// measures and reports; it never asserts a timing.
package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Request sends one request. worker is the index of the calling worker,
// seq the sequence number of the request (0..n-1 for RunN). It returns the
// size of the response body read, or an error.
type Request func(ctx context.Context, worker, seq int) (bytes int, err error)

// Sample is what a load run recorded: the latency of every successful
// request, the bytes read, the errors, and the wall time of the run.
type Sample struct {
	Latencies  []time.Duration
	Bytes      int64
	Errors     int
	FirstError error
	Elapsed    time.Duration
}

type workerLog struct {
	lat    []time.Duration
	bytes  int64
	errors int
	first  error
}

func (w *workerLog) record(start time.Time, n int, err error) {
	if err != nil {
		w.errors++
		if w.first == nil {
			w.first = err
		}
		return
	}
	w.lat = append(w.lat, time.Since(start))
	w.bytes += int64(n)
}

func merge(logs []workerLog, elapsed time.Duration) Sample {
	s := Sample{Elapsed: elapsed}
	total := 0
	for i := range logs {
		total += len(logs[i].lat)
	}
	s.Latencies = make([]time.Duration, 0, total)
	for i := range logs {
		s.Latencies = append(s.Latencies, logs[i].lat...)
		s.Bytes += logs[i].bytes
		s.Errors += logs[i].errors
		if s.FirstError == nil {
			s.FirstError = logs[i].first
		}
	}
	return s
}

// RunFor runs workers concurrently, each sending requests back to back,
// until d has passed (or ctx ends). A request in flight at the deadline
// completes and counts; Elapsed runs until the last worker stops.
func RunFor(ctx context.Context, workers int, d time.Duration, req Request) Sample {
	workers = max(workers, 1)
	logs := make([]workerLog, workers)
	start := time.Now()
	deadline := start.Add(d)
	var seq atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && time.Now().Before(deadline) {
				t := time.Now()
				n, err := req(ctx, w, int(seq.Add(1)-1))
				if ctx.Err() != nil {
					return
				}
				logs[w].record(t, n, err)
			}
		}()
	}
	wg.Wait()
	return merge(logs, time.Since(start))
}

// RunN sends exactly n requests (seq 0..n-1, each once) with workers
// concurrently, unless ctx ends first.
func RunN(ctx context.Context, workers, n int, req Request) Sample {
	workers = max(min(workers, n), 1)
	logs := make([]workerLog, workers)
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				t := time.Now()
				size, err := req(ctx, w, i)
				logs[w].record(t, size, err)
			}
		}()
	}
	wg.Wait()
	return merge(logs, time.Since(start))
}
