package testenv

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
)

// FreePort's ports are distinct, below the kernel's ephemeral range, and
// locked: another open of the lock file (as another test process would
// do) cannot take them, and a port someone listens on is not bindable.
func TestFreePortReservesOutsideTheEphemeralRange(t *testing.T) {
	g := NewWithT(t)
	seen := map[int]bool{}
	for range 20 {
		p, err := FreePort()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p).To(BeNumerically(">=", portRangeLow))
		g.Expect(p).To(BeNumerically("<", ephemeralStart()))
		g.Expect(seen).NotTo(HaveKey(p), "handed out twice")
		seen[p] = true

		f, ok, err := lockPort(filepath.Join(os.TempDir(), "ops-server-test-ports"), p)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ok).To(BeFalse(), "port %d's lock is held", p)
		g.Expect(f).To(BeNil())
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	n, _ := strconv.Atoi(port)
	g.Expect(bindable(n)).To(BeFalse())
}

// The control plane's own ports (etcd's client and peer URLs and
// kube-apiserver's secure port) are FreePort's, not envtest's choice in
// the ephemeral range.
func TestControlPlaneListensOnReservedPorts(t *testing.T) {
	g := NewWithT(t)
	env, err := Start(Options{})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = env.Stop() }()
	etcd := env.env.ControlPlane.Etcd
	urls := []string{env.Config.Host, etcd.URL.String(), etcd.Configure().Get("listen-peer-urls").Get(nil)[0]}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		g.Expect(err).NotTo(HaveOccurred())
		port, err := strconv.Atoi(u.Port())
		g.Expect(err).NotTo(HaveOccurred(), raw)
		g.Expect(u.Hostname()).To(Equal("127.0.0.1"), raw)
		g.Expect(port).To(BeNumerically(">=", portRangeLow), raw)
		g.Expect(port).To(BeNumerically("<", ephemeralStart()), raw)
	}
}
