package troubleshoot

import (
	"archive/tar"
	"bytes"
	"io"
	"testing"

	. "github.com/onsi/gomega"
)

// Parts past the byte budget are cut, and the manifest says so.
func TestBundleWriterBudget(t *testing.T) {
	g := NewWithT(t)
	var buf bytes.Buffer
	w := &bundleWriter{tw: tar.NewWriter(&buf), budget: 10}
	g.Expect(w.add("a.txt", []byte("123456"))).To(Succeed())
	g.Expect(w.add("b.txt", []byte("abcdefgh"))).To(Succeed())
	g.Expect(w.add("c.txt", []byte("xyz"))).To(Succeed())
	g.Expect(w.tw.Close()).To(Succeed())
	g.Expect(w.manifest.Parts).To(Equal([]ManifestPart{
		{Name: "a.txt", Bytes: 6}, {Name: "b.txt", Bytes: 4, Truncated: true}, {Name: "c.txt", Bytes: 0, Truncated: true},
	}))
	tr := tar.NewReader(&buf)
	got := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		g.Expect(err).NotTo(HaveOccurred())
		b, _ := io.ReadAll(tr)
		got[h.Name] = string(b)
	}
	g.Expect(got).To(Equal(map[string]string{"a.txt": "123456", "b.txt": "abcd", "c.txt": ""}))
}
