package binwatch

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// A rebuilt binary is reported once, after it stopped changing; an
// unchanged or missing one never.
func TestWatcher(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	api, op := filepath.Join(dir, "ops-apiserver"), filepath.Join(dir, "ops-operator")
	g.Expect(os.WriteFile(api, []byte("v1"), 0o755)).To(Succeed())
	w := New(api, op)
	g.Expect(w.Poll()).To(BeEmpty())

	g.Expect(os.WriteFile(api, []byte("v2 longer"), 0o755)).To(Succeed())
	g.Expect(w.Poll()).To(BeEmpty(), "still being written, maybe")
	g.Expect(w.Poll()).To(Equal([]string{api}))
	g.Expect(w.Poll()).To(BeEmpty(), "reported once")

	g.Expect(os.WriteFile(op, []byte("new"), 0o755)).To(Succeed())
	later := time.Now().Add(time.Minute)
	g.Expect(os.Chtimes(api, later, later)).To(Succeed())
	g.Expect(w.Poll()).To(BeEmpty())
	g.Expect(w.Poll()).To(ConsistOf(api, op))
}
