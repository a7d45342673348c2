package tooling

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// buildSh runs hack/tools/build.sh against a scratch cache, bin directory
// and tools table of tiny modules (OPS_TOOLS_TABLE), never the real tools.
type buildSh struct {
	t                        *testing.T
	script                   string
	dir, cache, bin, modules string
	path                     string
}

func newBuildSh(t *testing.T) *buildSh {
	t.Helper()
	g := NewWithT(t)
	root := repoRoot(t)
	dir := t.TempDir()
	b := &buildSh{t: t, script: filepath.Join(root, "hack", "tools", "build.sh"), dir: dir,
		cache: filepath.Join(dir, "cache"), bin: filepath.Join(dir, "bin"), modules: filepath.Join(dir, "modules"), path: os.Getenv("PATH")}
	table := ""
	for _, name := range []string{"tiny", "tiny2"} {
		mod := filepath.Join(b.modules, name)
		g.Expect(os.MkdirAll(mod, 0o755)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/"+name+"\n\ngo 1.22\n"), 0o644)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(mod, "go.sum"), nil, 0o644)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(mod, "main.go"), []byte("package main\n\nfunc main() { println(\""+name+"\") }\n"), 0o644)).To(Succeed())
		table += name + "|" + name + "|.|\n"
	}
	// etcd's module is only read for its pinned version: an etcd of that
	// version on PATH is used, never built here.
	etcdMod := filepath.Join(b.modules, "etcd")
	g.Expect(os.MkdirAll(etcdMod, 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(etcdMod, "go.mod"), []byte("module x\n\nrequire go.etcd.io/etcd/server/v3 v3.7.3\n"), 0o644)).To(Succeed())
	table += "etcd|etcd|go.etcd.io/etcd/server/v3|\n"
	g.Expect(os.WriteFile(filepath.Join(dir, "table"), []byte(table), 0o644)).To(Succeed())
	return b
}

func (b *buildSh) run(args ...string) (string, error) {
	cmd := exec.Command(b.script, args...)
	cmd.Env = append(os.Environ(), "OPS_TOOLS_CACHE="+b.cache, "OPS_BIN_DIR="+b.bin, "OPS_TOOLS_MODULES="+b.modules,
		"OPS_TOOLS_TABLE="+filepath.Join(b.dir, "table"), "OPS_TOOLS_JOBS=2", "PATH="+b.path, "KUBEBUILDER_ASSETS=",
		// Nothing is downloaded: the tiny modules need nothing, and the
		// fake etcd module must not fetch etcd.
		"GOPROXY=off")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func TestBuildShBuildsOnlyWhatIsAskedThenCaches(t *testing.T) {
	g := NewWithT(t)
	b := newBuildSh(t)

	out, err := b.run("tiny")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(lastLine(out)).To(MatchRegexp(`^tools \(2 at a time\): tiny: [0-9]+s$`))
	g.Expect(filepath.Join(b.bin, "tiny2")).NotTo(BeAnExistingFile(), "not asked for")
	target, err := os.Readlink(filepath.Join(b.bin, "tiny"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(target).To(HavePrefix(b.cache + "/tiny-"))

	out, err = b.run("tiny", "tiny2")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(lastLine(out)).To(MatchRegexp(`^tools \(2 at a time\): tiny: cached, tiny2: [0-9]+s$`))
	run, err := exec.Command(filepath.Join(b.bin, "tiny2")).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(run)).To(Equal("tiny2\n"))

	out, err = b.run("nosuchtool")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("unknown tool nosuchtool"))
}

func TestBuildShKeepsYourBinary(t *testing.T) {
	g := NewWithT(t)
	b := newBuildSh(t)
	g.Expect(os.MkdirAll(b.bin, 0o755)).To(Succeed())
	mine := filepath.Join(b.bin, "tiny")
	g.Expect(os.WriteFile(mine, []byte("#!/bin/sh\necho mine\n"), 0o755)).To(Succeed())
	out, err := b.run("tiny")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(lastLine(out)).To(Equal("tools (2 at a time): tiny: yours"))
	content, err := os.ReadFile(mine)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(content)).To(ContainSubstring("echo mine"))
	entries, _ := os.ReadDir(b.cache)
	g.Expect(entries).To(BeEmpty(), "nothing built")
}

func TestBuildShUsesPinnedVersionOnPath(t *testing.T) {
	g := NewWithT(t)
	b := newBuildSh(t)
	pathDir := filepath.Join(b.dir, "path")
	g.Expect(os.MkdirAll(pathDir, 0o755)).To(Succeed())
	etcd := filepath.Join(pathDir, "etcd")
	g.Expect(os.WriteFile(etcd, []byte("#!/bin/sh\necho 'etcd Version: 3.7.3'\necho 'Git SHA: x'\n"), 0o755)).To(Succeed())
	b.path = pathDir + ":" + b.path
	out, err := b.run("etcd")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(lastLine(out)).To(Equal("tools (2 at a time): etcd: found:" + etcd))
	target, err := os.Readlink(filepath.Join(b.bin, "etcd"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(target).To(Equal(etcd))

	// Another version is not used (it would be built: here the build of
	// the fake module fails, which says so).
	g.Expect(os.WriteFile(etcd, []byte("#!/bin/sh\necho 'etcd Version: 3.6.0'\n"), 0o755)).To(Succeed())
	out, err = b.run("etcd")
	g.Expect(err).To(HaveOccurred(), out)
	g.Expect(lastLine(out)).To(Equal("tools (2 at a time): etcd: FAILED"))
}

// repoRoot is the directory holding go.work (this package links nothing
// of the test harness, so that it stays a unit test).
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		NewWithT(t).Expect(parent).NotTo(Equal(dir), "no go.work above the working directory")
		dir = parent
	}
}
