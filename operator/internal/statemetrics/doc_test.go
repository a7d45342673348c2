package statemetrics

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestDocsListEveryMetric: docs/metrics.md's table lists exactly the ops_*
// metric names the code of both binaries defines (string literals in
// non-test Go files; every metric is named by one).
func TestDocsListEveryMetric(t *testing.T) {
	g := NewWithT(t)
	root := filepath.Join("..", "..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "metrics.md"))
	g.Expect(err).NotTo(HaveOccurred())
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(ops_[a-z0-9_]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		documented = append(documented, m[1])
	}
	literal := regexp.MustCompile(`"(ops_[a-z0-9_]+)"`)
	var defined []string
	for _, dir := range []string{"operator", "apiserver"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			src := string(b)
			if !strings.Contains(src, "prometheus") {
				return nil
			}
			for _, m := range literal.FindAllStringSubmatch(src, -1) {
				defined = append(defined, m[1])
			}
			return nil
		})
		g.Expect(err).NotTo(HaveOccurred())
	}
	slices.Sort(documented)
	slices.Sort(defined)
	g.Expect(slices.Compact(documented)).To(Equal(slices.Compact(defined)), "docs/metrics.md's table against the metric names in the code")
}
