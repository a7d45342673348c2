package testenv

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Ports handed to child processes are chosen below the kernel's
// ephemeral range and reserved across processes with a lock file.
//
// A port found by listening on 127.0.0.1:0 and closing the listener is in
// the ephemeral range: before the child binds it, the kernel may hand it
// to any outgoing connection of any process (test packages run in
// parallel, each with its own kube-apiserver and clients), and the child
// then fails with "address already in use". Below that range the kernel
// never picks a port by itself, and the lock files keep two test
// processes from choosing the same one. A lock is held until the process
// that took it exits.
const (
	portRangeLow      = 15000
	defaultEphemStart = 32768
	portAttempts      = 200
)

var (
	portMu    sync.Mutex
	portLocks []*os.File // held open: a lock lives as long as its file
)

// FreePort returns a TCP port on 127.0.0.1 that is free now, outside the
// kernel's ephemeral range, and reserved for this process: no other
// caller of FreePort on the machine gets it while this process runs.
func FreePort() (int, error) {
	high := ephemeralStart()
	if high-portRangeLow < 1000 {
		return 0, fmt.Errorf("the ephemeral port range starts at %d: too few ports below it from %d", high, portRangeLow)
	}
	dir := filepath.Join(os.TempDir(), "ops-server-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return 0, err
	}
	portMu.Lock()
	defer portMu.Unlock()
	for range portAttempts {
		port := portRangeLow + rand.IntN(high-portRangeLow)
		f, ok, err := lockPort(dir, port)
		if err != nil {
			return 0, err
		}
		if !ok {
			continue
		}
		if !bindable(port) {
			_ = f.Close() // releases the lock
			continue
		}
		portLocks = append(portLocks, f)
		return port, nil
	}
	return 0, fmt.Errorf("no free port in %d-%d after %d attempts", portRangeLow, high-1, portAttempts)
}

// lockPort takes the machine-wide lock of port without waiting; ok is
// false when another open file holds it.
func lockPort(dir string, port int) (*os.File, bool, error) {
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)+".lock"), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("locking port %d: %w", port, err)
	}
	return f, true, nil
}

// bindable reports whether 127.0.0.1:port can be listened on now.
func bindable(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// ephemeralStart is the first port of the kernel's ephemeral range.
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return defaultEphemStart
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return defaultEphemStart
	}
	n, err := strconv.Atoi(fields[0])
	if err != nil || n <= 0 {
		return defaultEphemStart
	}
	return n
}
