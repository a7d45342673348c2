package bench

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os"
	"path/filepath"
	"runtime"
	rpprof "runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	. "github.com/onsi/gomega"
)

// TestSummarizeProfileCountsFlatAndCum checks the counting on a profile
// built by hand: flat to the innermost frame (an inlined one included),
// cumulative once per function per sample (recursion included).
func TestSummarizeProfileCountsFlatAndCum(t *testing.T) {
	g := NewWithT(t)
	fn := func(id uint64, name string) *profile.Function { return &profile.Function{ID: id, Name: name} }
	mainF, handler, encode, memmove := fn(1, "main.main"), fn(2, "app.handler"), fn(3, "json.encode"), fn(4, "runtime.memmove")
	loc := func(id uint64, fns ...*profile.Function) *profile.Location {
		l := &profile.Location{ID: id}
		for _, f := range fns {
			l.Line = append(l.Line, profile.Line{Function: f})
		}
		return l
	}
	lMain, lMemmove := loc(1, mainF), loc(2, memmove)
	lInlined := loc(3, encode, handler) // encode inlined into handler
	lHandler := loc(4, handler)
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{lMemmove, lInlined, lMain}, Value: []int64{6, 60}},
			{Location: []*profile.Location{lInlined, lMain}, Value: []int64{3, 30}},
			{Location: []*profile.Location{lHandler, lHandler, lMain}, Value: []int64{1, 10}}, // recursion
			{Location: []*profile.Location{lMain}, Value: []int64{1, 0}},                      // no CPU time
		},
		Location:      []*profile.Location{lMain, lMemmove, lInlined, lHandler},
		Function:      []*profile.Function{mainF, handler, encode, memmove},
		DurationNanos: int64(2 * time.Second),
	}
	g.Expect(p.CheckValid()).To(Succeed())
	s, err := SummarizeProfile(p, 8)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.SampleType).To(Equal("cpu"), "the last sample type by default")
	g.Expect(s.Unit).To(Equal("nanoseconds"))
	g.Expect(s.Total).To(Equal(int64(100)))
	g.Expect(s.Seconds).To(Equal(2.0))
	g.Expect(s.Flat).To(Equal([]FunctionShare{{"runtime.memmove", 60}, {"json.encode", 30}, {"app.handler", 10}}))
	g.Expect(s.Cum).To(Equal([]FunctionShare{{"app.handler", 100}, {"main.main", 100}, {"json.encode", 90}, {"runtime.memmove", 60}}))

	top2, err := SummarizeProfile(p, 2)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(top2.Flat).To(HaveLen(2))
	g.Expect(top2.Cum).To(Equal([]FunctionShare{{"app.handler", 100}, {"main.main", 100}}))

	p.DefaultSampleType = "samples"
	bySamples, err := SummarizeProfile(p, 8)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bySamples.SampleType).To(Equal("samples"), "the profile's default sample type wins")
	g.Expect(bySamples.Total).To(Equal(int64(11)))
}

// retained keeps retainHeap's allocations live.
var retained [][]byte

//go:noinline
func retainHeap(chunks, size int) {
	for range chunks {
		retained = append(retained, make([]byte, size))
	}
}

// TestSummarizeAHeapProfile summarizes a heap profile runtime/pprof
// writes: the function holding most of the live heap comes first.
func TestSummarizeAHeapProfile(t *testing.T) {
	g := NewWithT(t)
	defer func(rate int) { runtime.MemProfileRate = rate; retained = nil }(runtime.MemProfileRate)
	runtime.MemProfileRate = 1
	retainHeap(64, 1<<20)
	runtime.GC()
	var buf bytes.Buffer
	g.Expect(rpprof.Lookup("heap").WriteTo(&buf, 0)).To(Succeed())
	p, err := profile.Parse(&buf)
	g.Expect(err).NotTo(HaveOccurred())
	s, err := SummarizeProfile(p, topFunctions)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.SampleType).To(Equal("inuse_space"))
	g.Expect(s.Unit).To(Equal("bytes"))
	g.Expect(s.Total).To(BeNumerically(">=", 64<<20))
	g.Expect(s.Flat).NotTo(BeEmpty())
	g.Expect(s.Flat[0].Function).To(HaveSuffix("bench.retainHeap"))
	g.Expect(s.Flat[0].Percent).To(BeNumerically(">", 50))
	g.Expect(len(s.Flat)).To(BeNumerically("<=", topFunctions))
	g.Expect(s.Cum).To(ContainElement(HaveField("Function", HaveSuffix("bench.retainHeap"))))
	for _, list := range [][]FunctionShare{s.Flat, s.Cum} {
		for i := 1; i < len(list); i++ {
			g.Expect(list[i].Percent).To(BeNumerically("<=", list[i-1].Percent), "largest first")
		}
	}
}

//go:noinline
func burnCPU(d time.Duration) int {
	n := 0
	for start := time.Now(); time.Since(start) < d; {
		for i := range 10000 {
			n += i * i % 7
		}
	}
	return n
}

// TestProfilerCapturesAndSaves fetches profiles from Go's pprof handlers
// on 127.0.0.1 as the benchmark does from ops-apiserver: a heap profile,
// and CPU profiles in one-second slices merged into one file.
func TestProfilerCapturesAndSaves(t *testing.T) {
	g := NewWithT(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	g.Expect(addr).To(HavePrefix("127.0.0.1:"))
	dir := t.TempDir()
	g.Expect(newProfiler("apiserver", addr, "")).To(BeNil(), "no directory: no profiles")
	p := newProfiler("apiserver", addr, dir)
	ctx := context.Background()

	heap, err := p.heap(ctx, "idle 2000 objects", "idle")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(heap.File).To(Equal("apiserver-heap-idle-2000-objects.pb.gz"))
	g.Expect(heap.Kind).To(Equal("heap"))
	g.Expect(heap.SampleType).To(Equal("inuse_space"))
	g.Expect(filepath.Join(dir, heap.File)).To(BeAnExistingFile())

	session := p.startCPU(ctx, 0)
	burnCPU(1500 * time.Millisecond)
	merged, err := session.stop()
	g.Expect(err).NotTo(HaveOccurred())
	// The session outlived one profile, so it took two or more, and the
	// merged profile spans them all. (Each part's own duration is the
	// runtime's measure of its second, a little under or over one.)
	g.Expect(len(session.parts)).To(BeNumerically(">=", 2), "two one-second profiles or more")
	var total int64
	for _, part := range session.parts {
		total += part.DurationNanos
	}
	g.Expect(merged.DurationNanos).To(Equal(total))
	cpu, err := p.save("cpu", "write create a vmcluster, 32 client(s)", "a run", merged)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cpu.File).To(Equal("apiserver-cpu-write-create-a-vmcluster-32-client-s.pb.gz"))
	g.Expect(cpu.SampleType).To(Equal("cpu"))
	g.Expect(cpu.Cum).To(ContainElement(HaveField("Function", HaveSuffix("bench.burnCPU"))))

	// The file is a profile go tool pprof reads.
	f, err := os.Open(filepath.Join(dir, cpu.File))
	g.Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	back, err := profile.Parse(f)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(back.DurationNanos).To(Equal(merged.DurationNanos))

	// A later run removes the files of this one, and only those.
	other := filepath.Join(dir, "notes.txt")
	g.Expect(os.WriteFile(other, []byte("x"), 0o644)).To(Succeed())
	g.Expect(cleanProfileDir(dir)).To(Succeed())
	entries, err := os.ReadDir(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(HaveLen(1))
	g.Expect(entries[0].Name()).To(Equal("notes.txt"))
}

func TestSlug(t *testing.T) {
	g := NewWithT(t)
	for in, want := range map[string]string{
		"read list vmclusters, page of 50":       "read-list-vmclusters-page-of-50",
		"write create a vmcluster, 32 client(s)": "write-create-a-vmcluster-32-client-s",
		"  Idle 2000 objects ":                   "idle-2000-objects",
	} {
		g.Expect(slug(in)).To(Equal(want), in)
	}
}
