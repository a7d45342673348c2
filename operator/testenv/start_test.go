package testenv_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/operator/testenv"
)

// A control plane whose CRDs cannot be installed is stopped, not left
// running.
func TestStartFailureStopsControlPlane(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	crds := filepath.Join(dir, "crds")
	g.Expect(os.MkdirAll(crds, 0o755)).To(Succeed())
	// The API server refuses it: its name is not <plural>.<group>.
	g.Expect(os.WriteFile(filepath.Join(crds, "bad.yaml"), []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: gadgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
`), 0o644)).To(Succeed())
	etcd := filepath.Join(dir, "etcd")
	_, err := testenv.Start(testenv.Options{EtcdDataDir: etcd, ExtraCRDDirs: []string{crds}})
	g.Expect(err).To(MatchError(ContainSubstring("widgets.example.com")))
	// No process is left with the etcd data directory on its command line.
	g.Eventually(func() []string {
		var running []string
		cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, f := range cmdlines {
			if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), etcd) {
				running = append(running, strings.ReplaceAll(string(b), "\x00", " "))
			}
		}
		return running
	}, time.Minute, time.Second).Should(BeEmpty())
}
