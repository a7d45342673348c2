package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Mem is the memory of a process, in bytes: its resident set now and the
// peak resident set since it started (VmHWM).
type Mem struct {
	RSS  uint64 `json:"rss"`
	Peak uint64 `json:"peak"`
}

// ReadMem reads /proc/<pid>/status.
func ReadMem(pid int) (Mem, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Mem{}, err
	}
	return parseStatus(string(b))
}

// parseStatus reads VmRSS and VmHWM (kB) from a /proc/<pid>/status text.
func parseStatus(text string) (Mem, error) {
	var m Mem
	var found int
	for _, line := range strings.Split(text, "\n") {
		key, rest, ok := strings.Cut(line, ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		kb, err := parseKB(rest)
		if err != nil {
			return Mem{}, fmt.Errorf("%s: %w", key, err)
		}
		if key == "VmRSS" {
			m.RSS = kb * 1024
		} else {
			m.Peak = kb * 1024
		}
		found++
	}
	if found != 2 {
		return Mem{}, errors.New("no VmRSS and VmHWM in the process status")
	}
	return m, nil
}

// parseKB parses "   1234 kB".
func parseKB(s string) (uint64, error) {
	f := strings.Fields(s)
	if len(f) != 2 || f[1] != "kB" {
		return 0, fmt.Errorf("unexpected value %q", strings.TrimSpace(s))
	}
	return strconv.ParseUint(f[0], 10, 64)
}

// MemTotal returns the machine's memory in bytes (/proc/meminfo).
func MemTotal() (uint64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	return parseMemTotal(string(b))
}

func parseMemTotal(text string) (uint64, error) {
	for _, line := range strings.Split(text, "\n") {
		if key, rest, ok := strings.Cut(line, ":"); ok && key == "MemTotal" {
			kb, err := parseKB(rest)
			return kb * 1024, err
		}
	}
	return 0, errors.New("no MemTotal in /proc/meminfo")
}

// CPUModel returns the first "model name" of /proc/cpuinfo ("" if none).
func CPUModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if key, rest, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(key) == "model name" {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

// FindChild returns the pid of the running child of parent whose
// executable is exe (the processes the stack started are children of this
// one).
func FindChild(parent int, exe string) (int, error) {
	want, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return 0, err
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || parentOf(string(stat)) != parent {
			continue
		}
		if got, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && got == want {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no child process of %d runs %s", parent, exe)
}

// parentOf returns the ppid field of a /proc/<pid>/stat line (-1 if it
// cannot be read). The command name in parentheses may hold spaces.
func parentOf(stat string) int {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 2 {
		return -1
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return -1
	}
	return ppid
}

// RSSSampler samples a process's resident set every interval and keeps
// the largest value seen.
type RSSSampler struct {
	mu   sync.Mutex
	max  uint64
	stop context.CancelFunc
	done chan struct{}
}

// SampleRSS starts sampling pid.
func SampleRSS(ctx context.Context, pid int, interval time.Duration) *RSSSampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &RSSSampler{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if m, err := ReadMem(pid); err == nil {
				s.mu.Lock()
				s.max = max(s.max, m.RSS)
				s.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// Stop ends the sampling and returns the largest resident set seen.
func (s *RSSSampler) Stop() uint64 {
	s.stop()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.max
}

// MiB converts bytes to MiB.
func MiB(b uint64) float64 { return float64(b) / (1 << 20) }
