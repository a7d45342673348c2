package stack

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
)

func TestReplicaAddrsSkipTakenPorts(t *testing.T) {
	g := NewWithT(t)
	first, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	defer first.Close()
	port := first.Addr().(*net.TCPAddr).Port
	// The port right after the first is taken (when it can be): the second
	// replica gets a later one.
	taken, takenErr := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+1))
	if takenErr == nil {
		defer taken.Close()
	}
	addrs, err := replicaAddrs(first.Addr().String(), 2)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(addrs).To(HaveLen(2))
	g.Expect(addrs[0]).To(Equal(first.Addr().String()))
	_, p, err := net.SplitHostPort(addrs[1])
	g.Expect(err).NotTo(HaveOccurred())
	var second int
	_, err = fmt.Sscan(p, &second)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second).To(BeNumerically(">", port))
	if takenErr == nil {
		g.Expect(second).NotTo(Equal(port+1), "a port in use is skipped")
	}
	one, err := replicaAddrs("127.0.0.1:8080", 1)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(one).To(Equal([]string{"127.0.0.1:8080"}), "one replica: the address as given")
}

func TestChartProxyServesFromAnyLiveReplica(t *testing.T) {
	g := NewWithT(t)
	replica := func(name string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, name) }))
	}
	r0, r1 := replica("replica-0"), replica("replica-1")
	defer r1.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	p := &chartProxy{ln: ln, backends: map[int]string{}}
	go p.serve()
	defer p.stop()
	p.set(0, r0.Listener.Addr().String())
	p.set(1, r1.Listener.Addr().String())
	get := func() (string, error) {
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get("http://" + ln.Addr().String() + "/index.yaml")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	g.Expect(get()).To(Equal("replica-0"), "the first live replica answers")
	// Replica 0 dies without the proxy being told: it is skipped.
	r0.Close()
	g.Expect(get()).To(Equal("replica-1"))
	p.set(1, "")
	_, err = get()
	g.Expect(err).To(HaveOccurred(), "no replica: the connection is closed")
}
