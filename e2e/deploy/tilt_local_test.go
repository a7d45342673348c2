package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/e2e/binwatch"
)

// TestTiltfileLocalMode evaluates the Tiltfile as `tilt up -- --local`
// does (Tilt itself is not available here: its builtins are recorders) and
// then runs what the local mode recorded for real: each build command
// builds its binary, every Go package a binary is built from is under its
// resource's deps and not ignored (so Tilt rebuilds it on any change to
// them), a change to an apiserver source file triggers ops-apiserver's
// resource and no other binary's, and running its command again with the
// changed source (a go build overlay, the checkout is not touched)
// rewrites the binary, which is what ops-dev --restart-on-rebuild
// restarts ops-apiserver on (package binwatch). The serve command (the
// whole local stack) is not started here; its flags are checked against
// ops-dev -h.
func TestTiltfileLocalMode(t *testing.T) {
	g := NewWithT(t)
	rec := execTiltfile(t, map[string]bool{"local": true})

	g.Expect(rec.allowedCtx).To(BeEmpty(), "no Kubernetes context in local mode")
	g.Expect(rec.images).To(BeEmpty())
	g.Expect(rec.resources).To(BeEmpty())
	g.Expect(rec.localRes).To(HaveKey("tools"))
	g.Expect(rec.localRes["tools"]["cmd"]).To(Equal("hack/tools/build.sh"))
	g.Expect(rec.localRes["generate-manifests"]["cmd"]).To(Equal("make generate manifests"))
	dev := rec.localRes["ops-dev"]
	g.Expect(strings.Split(dev["resource_deps"], ",")).To(ConsistOf("tools", "ops-apiserver", "ops-operator"))
	g.Expect(dev["serve_cmd"]).To(ContainSubstring("--restart-on-rebuild"))
	g.Expect(dev["readiness_probe"]).To(ContainSubstring(`path = "/readyz"`))
	g.Expect(dev["readiness_probe"]).To(ContainSubstring("port = 8080"))

	binDir := t.TempDir()
	env := append(os.Environ(), "OPS_BIN_DIR="+binDir)
	runCmd := func(cmd string, extraEnv ...string) {
		t.Helper()
		c := exec.Command("sh", "-c", cmd)
		c.Dir, c.Env = root, append(append([]string(nil), env...), extraEnv...)
		out, err := c.CombinedOutput()
		NewWithT(t).Expect(err).NotTo(HaveOccurred(), "%s: %s", cmd, out)
	}

	// Each binary: its command builds it, and its deps cover its packages.
	for name, pkg := range map[string]string{
		"ops-apiserver": "./apiserver/cmd/ops-apiserver",
		"ops-operator":  "./operator/cmd/ops-operator",
		"ops-dev":       "./e2e/cmd/ops-dev",
	} {
		res := rec.localRes[name]
		g.Expect(res["cmd"]).To(ContainSubstring(pkg), name)
		runCmd(res["cmd"])
		g.Expect(filepath.Join(binDir, name)).To(BeAnExistingFile(), "%s built into $OPS_BIN_DIR", name)
		for _, dir := range localPackageDirs(t, pkg) {
			g.Expect(triggers(res, filepath.Join(dir, "x.go"))).To(BeTrue(), "%s: a change in %s must rebuild it (deps %s, ignore %s)", name, dir, res["deps"], res["ignore"])
		}
	}

	// ops-dev has the flags its serve command uses.
	help, _ := exec.Command(filepath.Join(binDir, "ops-dev"), "-h").CombinedOutput()
	for _, f := range strings.Fields(rec.localRes["ops-dev"]["serve_cmd"])[1:] {
		if strings.HasPrefix(f, "--") {
			g.Expect(string(help)).To(ContainSubstring(strings.TrimPrefix(f, "-")), "ops-dev flag %s", f)
		}
	}

	// A change to an apiserver source file: ops-apiserver's resource only.
	changed := filepath.Join("apiserver", "internal", "server", "server.go")
	g.Expect(filepath.Join(root, changed)).To(BeAnExistingFile())
	g.Expect(triggers(rec.localRes["ops-apiserver"], changed)).To(BeTrue())
	g.Expect(triggers(rec.localRes["ops-operator"], changed)).To(BeFalse())
	g.Expect(triggers(rec.localRes["ops-dev"], changed)).To(BeFalse())
	g.Expect(triggers(rec.localRes["ops-apiserver"], "apiserver/internal/server/server_test.go")).To(BeFalse(), "tests are ignored")

	// Its command, run with the changed source, rewrites the binary, and
	// ops-dev's watcher reports it.
	api := filepath.Join(binDir, "ops-apiserver")
	w := binwatch.New(api)
	src, err := os.ReadFile(filepath.Join(root, changed))
	g.Expect(err).NotTo(HaveOccurred())
	overlayDir := t.TempDir()
	edited := filepath.Join(overlayDir, "server.go")
	g.Expect(os.WriteFile(edited, append(src, []byte("\nvar tiltLocalModeTestEdit = 1\n")...), 0o644)).To(Succeed())
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(root, changed): edited}})
	g.Expect(err).NotTo(HaveOccurred())
	overlayFile := filepath.Join(overlayDir, "overlay.json")
	g.Expect(os.WriteFile(overlayFile, overlay, 0o644)).To(Succeed())
	runCmd(rec.localRes["ops-apiserver"]["cmd"], "GOFLAGS=-overlay="+overlayFile)
	g.Expect(w.Poll()).To(BeEmpty(), "reported once the binary stopped changing")
	g.Expect(w.Poll()).To(Equal([]string{api}), "ops-dev restarts ops-apiserver")
}

// localPackageDirs are the directories (relative to the root) of the
// workspace's packages pkg is built from.
func localPackageDirs(t *testing.T, pkg string) []string {
	t.Helper()
	c := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.Dir}}{{end}}", pkg)
	c.Dir = root
	out, err := c.Output()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	var dirs []string
	for _, d := range strings.Fields(string(out)) {
		if rel, err := filepath.Rel(root, d); err == nil && !strings.HasPrefix(rel, "..") {
			dirs = append(dirs, rel)
		}
	}
	NewWithT(t).Expect(dirs).NotTo(BeEmpty())
	return dirs
}

// triggers says whether Tilt runs a local_resource again when file
// (relative to the root) changes: the file is under one of its deps and
// matches none of its ignore patterns (the gitignore-style patterns the
// Tiltfile uses: a path prefix, or **/<glob> on any path element).
func triggers(res map[string]string, file string) bool {
	under := func(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
	dep := false
	for _, d := range strings.Split(res["deps"], ",") {
		if d != "" && under(file, d) {
			dep = true
		}
	}
	if !dep {
		return false
	}
	for _, ig := range strings.Split(res["ignore"], ",") {
		if ig == "" {
			continue
		}
		if glob, ok := strings.CutPrefix(ig, "**/"); ok {
			parts := strings.Split(file, "/")
			for i := range parts {
				if m, _ := filepath.Match(glob, parts[i]); m {
					return false
				}
			}
			continue
		}
		if under(file, ig) {
			return false
		}
	}
	return true
}
