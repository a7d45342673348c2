package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"
)

// profiler fetches Go profiles from one process's /debug/pprof/ endpoints
// (--pprof-bind-address) and writes them to dir, one file per capture.
type profiler struct {
	// process names the profiled binary in file names: "apiserver" or
	// "operator".
	process string
	base    string // http://127.0.0.1:PORT
	dir     string
	client  *http.Client
}

// newProfiler returns a profiler of the process serving pprof on addr
// (host:port), or nil when dir or addr is empty: a nil profiler captures
// nothing.
func newProfiler(process, addr, dir string) *profiler {
	if dir == "" || addr == "" {
		return nil
	}
	return &profiler{process: process, base: "http://" + addr, dir: dir, client: &http.Client{Timeout: 10 * time.Minute}}
}

// fetch reads one profile.
func (p *profiler) fetch(ctx context.Context, path string) (*profile.Profile, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, truncate(string(bytes.TrimSpace(b)), 200))
	}
	prof, err := profile.ParseData(b)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	return prof, nil
}

// fileName is the file of capture name: <process>-<kind>-<name>.pb.gz.
func (p *profiler) fileName(kind, name string) string {
	return fmt.Sprintf("%s-%s-%s.pb.gz", p.process, kind, slug(name))
}

// save writes prof to the profile directory and summarizes it.
func (p *profiler) save(kind, name, what string, prof *profile.Profile) (ProfileSummary, error) {
	file := p.fileName(kind, name)
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return ProfileSummary{}, err
	}
	f, err := os.Create(filepath.Join(p.dir, file))
	if err != nil {
		return ProfileSummary{}, err
	}
	if err := prof.Write(f); err != nil {
		f.Close()
		return ProfileSummary{}, fmt.Errorf("writing %s: %w", file, err)
	}
	if err := f.Close(); err != nil {
		return ProfileSummary{}, err
	}
	s, err := SummarizeProfile(prof, topFunctions)
	if err != nil {
		return ProfileSummary{}, fmt.Errorf("summarizing %s: %w", file, err)
	}
	s.Process, s.Kind, s.What, s.File = p.process, kind, what, file
	return s, nil
}

// heap captures the live heap after a garbage collection (?gc=1) and
// writes it as <process>-heap-<name>.pb.gz.
func (p *profiler) heap(ctx context.Context, name, what string) (ProfileSummary, error) {
	prof, err := p.fetch(ctx, "/debug/pprof/heap?gc=1")
	if err != nil {
		return ProfileSummary{}, err
	}
	return p.save("heap", name, what, prof)
}

// cpuFor captures a CPU profile of seconds (whole seconds, at least
// one); it blocks as long. Run it in parallel with the load.
func (p *profiler) cpuFor(ctx context.Context, seconds int) (*profile.Profile, error) {
	return p.fetch(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", max(seconds, 1)))
}

// cpuSession is a CPU profile over a stretch of unknown length: one-second
// profiles back to back until stop, merged (a CPU profile's length is
// fixed when it starts; a run of N creates has none).
type cpuSession struct {
	cancel context.CancelFunc
	done   chan struct{}
	parts  []*profile.Profile
	err    error
}

// startCPU starts a cpuSession; limit caps its length (0: none).
func (p *profiler) startCPU(ctx context.Context, limit time.Duration) *cpuSession {
	ctx, cancel := context.WithCancel(ctx)
	s := &cpuSession{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		start := time.Now()
		for ctx.Err() == nil && (limit <= 0 || time.Since(start) < limit) {
			// The last profile completes after stop: a canceled request
			// loses it, so it runs on a context of its own.
			part, err := p.cpuFor(context.WithoutCancel(ctx), 1)
			if err != nil {
				s.err = err
				return
			}
			s.parts = append(s.parts, part)
		}
	}()
	return s
}

// stop ends the session (after the one-second profile in flight) and
// returns the merged profile.
func (s *cpuSession) stop() (*profile.Profile, error) {
	s.cancel()
	<-s.done
	if s.err != nil {
		return nil, s.err
	}
	return mergeProfiles(s.parts)
}

// mergeProfiles merges profiles of one process (nil parts are skipped).
func mergeProfiles(parts []*profile.Profile) (*profile.Profile, error) {
	parts = slices.DeleteFunc(slices.Clone(parts), func(p *profile.Profile) bool { return p == nil })
	switch len(parts) {
	case 0:
		return nil, fmt.Errorf("no profile was captured")
	case 1:
		return parts[0], nil
	}
	return profile.Merge(parts)
}

// cpuCollector gathers the CPU profiles of the repeated runs of one row
// and saves them merged, as one capture.
type cpuCollector struct {
	mu    sync.Mutex
	parts []*profile.Profile
	errs  []error
}

func (c *cpuCollector) add(p *profile.Profile, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.errs = append(c.errs, err)
		return
	}
	c.parts = append(c.parts, p)
}

// topFunctions is how many functions a summary lists per order.
const topFunctions = 8

// FunctionShare is one function's share of a profile's total.
type FunctionShare struct {
	Function string  `json:"function"`
	Percent  float64 `json:"percent"`
}

// ProfileSummary is what the page shows of one captured profile.
type ProfileSummary struct {
	// Process is "apiserver" or "operator", Kind "cpu" or "heap".
	Process string `json:"process"`
	Kind    string `json:"kind"`
	// What says when the profile was taken.
	What string `json:"what"`
	// File is the file's name in the profile directory.
	File string `json:"file"`
	// SampleType is the value summarized ("cpu", "inuse_space"), Unit
	// its unit ("nanoseconds", "bytes"), Total the sum over every sample.
	SampleType string `json:"sampleType"`
	Unit       string `json:"unit"`
	Total      int64  `json:"total"`
	// Seconds is how long the profile ran (CPU profiles).
	Seconds float64 `json:"seconds,omitempty"`
	// Flat is the functions by their own share, Cum by their share
	// including what they call, largest first.
	Flat []FunctionShare `json:"flat"`
	Cum  []FunctionShare `json:"cum"`
}

// SummarizeProfile lists the top n functions of p by flat and by
// cumulative share of its default sample type (the last one unless the
// profile names another: CPU time, in-use bytes), as `go tool pprof -top`
// and `-top -cum` count them: a sample's value is flat to the innermost
// function of its stack (inlined frames included) and cumulative to every
// distinct function on it.
func SummarizeProfile(p *profile.Profile, n int) (ProfileSummary, error) {
	idx, err := p.SampleIndexByName("")
	if err != nil {
		return ProfileSummary{}, err
	}
	if idx < 0 || idx >= len(p.SampleType) {
		return ProfileSummary{}, fmt.Errorf("the profile has no sample types")
	}
	s := ProfileSummary{SampleType: p.SampleType[idx].Type, Unit: p.SampleType[idx].Unit, Seconds: float64(p.DurationNanos) / 1e9}
	flat, cum := map[string]int64{}, map[string]int64{}
	for _, sample := range p.Sample {
		v := sample.Value[idx]
		if v == 0 {
			continue
		}
		s.Total += v
		seen := map[string]bool{}
		first := true
		// count credits v to the frame name: flat to the sample's first
		// (innermost) frame, cum once per sample to every frame.
		count := func(name string) {
			if first {
				flat[name] += v
				first = false
			}
			if !seen[name] {
				seen[name] = true
				cum[name] += v
			}
		}
		for _, loc := range sample.Location {
			// Line[0] is the innermost of the location's inlined calls.
			for _, line := range loc.Line {
				name := "?"
				if line.Function != nil {
					name = line.Function.Name
				}
				count(name)
			}
			if len(loc.Line) == 0 {
				count(fmt.Sprintf("0x%x", loc.Address))
			}
		}
	}
	s.Flat, s.Cum = topShares(flat, s.Total, n), topShares(cum, s.Total, n)
	return s, nil
}

// topShares returns the n largest values of m as percentages of total,
// largest first (ties by name).
func topShares(m map[string]int64, total int64, n int) []FunctionShare {
	names := make([]string, 0, len(m))
	for k, v := range m {
		if v != 0 {
			names = append(names, k)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		if m[a] != m[b] {
			if m[a] > m[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	out := make([]FunctionShare, 0, min(n, len(names)))
	for _, name := range names[:min(n, len(names))] {
		out = append(out, FunctionShare{Function: name, Percent: 100 * Ratio(float64(m[name]), float64(total))})
	}
	return out
}

// slug turns a row name into a file-name part: "list vmclusters, page of
// 50" becomes "list-vmclusters-page-of-50".
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
			continue
		}
		if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

// cleanProfileDir removes the files an earlier run captured in dir (only
// those: apiserver-*.pb.gz and operator-*.pb.gz).
func cleanProfileDir(dir string) error {
	for _, pattern := range []string{"apiserver-*.pb.gz", "operator-*.pb.gz"} {
		old, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			return err
		}
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	return nil
}

// profiledFor runs load (a run of d) while a CPU profile of ops-apiserver
// of d, rounded up to whole seconds, is taken in parallel into col. No
// profiler: just load.
func (e *env) profiledFor(ctx context.Context, col *cpuCollector, d time.Duration, load func() Sample) Sample {
	if e.apiProf == nil {
		return load()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		col.add(e.apiProf.cpuFor(ctx, int(math.Ceil(d.Seconds()))))
	}()
	s := load()
	<-done
	return s
}

// profiledRun runs load (of unknown length: N creates) while ops-apiserver
// is profiled in one-second slices into col, until load returns.
func (e *env) profiledRun(ctx context.Context, col *cpuCollector, load func() Sample) Sample {
	if e.apiProf == nil {
		return load()
	}
	session := e.apiProf.startCPU(ctx, 0)
	s := load()
	col.add(session.stop())
	return s
}

// saveCPU saves the merged CPU profiles of col as one capture named name.
func (e *env) saveCPU(res *Results, col *cpuCollector, name, what string) {
	if e.apiProf == nil {
		return
	}
	e.saveProfile(res, "ops-apiserver CPU, "+name, func() (ProfileSummary, error) {
		if len(col.errs) > 0 {
			return ProfileSummary{}, errors.Join(col.errs...)
		}
		prof, err := mergeProfiles(col.parts)
		if err != nil {
			return ProfileSummary{}, err
		}
		return e.apiProf.save("cpu", name, what, prof)
	})
}

// saveProfile records the summary capture returns, or its error (a
// profile that could not be taken does not fail the phase).
func (e *env) saveProfile(res *Results, label string, capture func() (ProfileSummary, error)) {
	s, err := capture()
	if err != nil {
		e.logf("  profile %s: %v", label, err)
		res.ProfileErrors = append(res.ProfileErrors, fmt.Sprintf("%s: %v", label, err))
		return
	}
	e.logf("  profile %s: %s", label, filepath.Join(e.cfg.ProfileDir, s.File))
	res.Profiles = append(res.Profiles, s)
}
