package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestParseStatus(t *testing.T) {
	const status = "Name:\tops-apiserver\nVmPeak:\t 1300000 kB\nVmHWM:\t   61440 kB\nVmRSS:\t   40960 kB\nThreads:\t9\n"
	for _, tc := range []struct {
		name    string
		text    string
		want    Mem
		wantErr string
	}{
		{"both fields", status, Mem{RSS: 40 << 20, Peak: 60 << 20}, ""},
		{"a kernel thread has neither", "Name:\tkthreadd\nThreads:\t1\n", Mem{}, "no VmRSS"},
		{"a malformed value", "VmHWM:\t12 MB\nVmRSS:\t1 kB\n", Mem{}, "VmHWM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := parseStatus(tc.text)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestParseMemTotal(t *testing.T) {
	g := NewWithT(t)
	total, err := parseMemTotal("MemTotal:       24576000 kB\nMemFree:        1000 kB\n")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(total).To(Equal(uint64(24576000) * 1024))
	_, err = parseMemTotal("MemFree: 1 kB\n")
	g.Expect(err).To(HaveOccurred())
}

func TestParentOf(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       int
	}{
		{"plain", "1234 (ops-apiserver) S 77 1234 77 0 -1", 77},
		{"a command with spaces and parentheses", "99 (a (b) c) R 4242 99 1", 4242},
		{"truncated", "99 (x)", -1},
		{"garbage", "nothing here", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(parentOf(tc.stat)).To(Equal(tc.want))
		})
	}
}

func TestReadMemAndFindChildOfThisProcess(t *testing.T) {
	g := NewWithT(t)
	m, err := ReadMem(os.Getpid())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.RSS).To(BeNumerically(">", 0))
	g.Expect(m.Peak).To(BeNumerically(">=", m.RSS))

	_, err = FindChild(os.Getpid(), "/bin/sh")
	g.Expect(err).To(MatchError(ContainSubstring("no child process")))
}

func TestWrapBinDir(t *testing.T) {
	g := NewWithT(t)
	bin, out := t.TempDir(), filepath.Join(t.TempDir(), "wrapped")
	for _, name := range []string{"ops-apiserver", "etcd"} {
		g.Expect(os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), 0o755)).To(Succeed())
	}
	g.Expect(wrapBinDir(bin, out, "ops-apiserver", []string{"--rate-limit-qps=0", "--odd='quote'"})).To(Succeed())

	target, err := os.Readlink(filepath.Join(out, "etcd"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(target).To(Equal(filepath.Join(bin, "etcd")))

	script, err := os.ReadFile(filepath.Join(out, "ops-apiserver"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Split(string(script), "\n")).To(Equal([]string{
		"#!/bin/sh",
		"exec '" + filepath.Join(bin, "ops-apiserver") + `' "$@" '--rate-limit-qps=0' '--odd='\''quote'\'''`,
		"",
	}))
	fi, err := os.Stat(filepath.Join(out, "ops-apiserver"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fi.Mode().Perm() & 0o100).NotTo(BeZero())
}

// TestAPIServerExtraArgs: both of ops-apiserver's rate limits are turned
// off when the build knows them (a limit of 50 per client address made
// every concurrent create of the benchmark a 429), and nothing it does not
// know is passed.
func TestAPIServerExtraArgs(t *testing.T) {
	g := NewWithT(t)
	bin := filepath.Join(t.TempDir(), "ops-apiserver")
	help := func(text string) {
		g.Expect(os.WriteFile(bin, []byte("#!/bin/sh\ncat <<'EOF'\n"+text+"\nEOF\n"), 0o755)).To(Succeed())
	}
	help("      --client-rate-limit-qps float   per address\n      --rate-limit-qps float   per caller")
	g.Expect(apiserverExtraArgs(bin)).To(Equal([]string{"--rate-limit-qps=0", "--client-rate-limit-qps=0"}))
	help("      --client-rate-limit-qps float   per address")
	g.Expect(apiserverExtraArgs(bin)).To(Equal([]string{"--client-rate-limit-qps=0"}))
	help("      --listen-address string")
	g.Expect(apiserverExtraArgs(bin)).To(BeEmpty())
}
