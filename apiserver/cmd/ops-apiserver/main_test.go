package main

import (
	"io"
	"os"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/operator/pkg/buildinfo"
)

// TestVersionFlag: --version prints the build and exits 0 without a
// configuration.
func TestVersionFlag(t *testing.T) {
	g := NewWithT(t)
	r, w, err := os.Pipe()
	g.Expect(err).NotTo(HaveOccurred())
	stdout := os.Stdout
	os.Stdout = w
	code := run([]string{"--version"})
	os.Stdout = stdout
	g.Expect(w.Close()).To(Succeed())
	out, err := io.ReadAll(r)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(0))
	g.Expect(string(out)).To(Equal("ops-apiserver " + buildinfo.Get().String() + "\n"))
}
