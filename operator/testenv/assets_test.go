package testenv_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/operator/testenv"
)

// With KUBEBUILDER_ASSETS set, the control plane runs the etcd and
// kube-apiserver found there: wrappers in a scratch assets directory record
// their invocation and exec the binaries of bin/.
func TestStartUsesKubebuilderAssets(t *testing.T) {
	g := NewWithT(t)
	t.Setenv(testenv.AssetsEnv, "")
	assets := t.TempDir()
	record := filepath.Join(assets, "invocations")
	for _, name := range []string{"etcd", "kube-apiserver"} {
		real, err := testenv.Binary(name)
		g.Expect(err).NotTo(HaveOccurred())
		wrapper := "#!/bin/sh\necho \"" + name + " $*\" >> " + record + "\nexec " + real + " \"$@\"\n"
		g.Expect(os.WriteFile(filepath.Join(assets, name), []byte(wrapper), 0o755)).To(Succeed())
	}
	t.Setenv(testenv.AssetsEnv, assets)

	p, err := testenv.Binary("kube-apiserver")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p).To(Equal(filepath.Join(assets, "kube-apiserver")))

	env, err := testenv.Start(testenv.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(env.Stop()).To(Succeed()) }()
	ns := env.NewNamespace(t)
	g.Expect(ns).NotTo(BeEmpty())

	b, err := os.ReadFile(record)
	g.Expect(err).NotTo(HaveOccurred())
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var started []string
	for _, l := range lines {
		started = append(started, strings.Fields(l)[0])
	}
	g.Expect(started).To(ContainElements("etcd", "kube-apiserver"))
	g.Expect(string(b)).To(ContainSubstring("--etcd-servers="), "kube-apiserver got envtest's flags")
}

// A KUBEBUILDER_ASSETS without etcd or kube-apiserver is an error naming
// the variable, not a silent fall-back to bin/; kubectl falls back.
func TestKubebuilderAssetsMissingBinary(t *testing.T) {
	g := NewWithT(t)
	empty := t.TempDir()
	t.Setenv(testenv.AssetsEnv, empty)
	for _, name := range []string{"etcd", "kube-apiserver"} {
		_, err := testenv.Binary(name)
		g.Expect(err).To(MatchError(ContainSubstring(testenv.AssetsEnv+"="+empty)), name)
	}
	t.Setenv("OPS_BIN_DIR", empty)
	_, err := testenv.Binary("kubectl")
	g.Expect(err).To(MatchError(ContainSubstring("make tools")))
	_, err = testenv.Binary("source-controller")
	g.Expect(err).To(MatchError(ContainSubstring("make tools")))
}
