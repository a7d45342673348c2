// Package docspage loads ops-apiserver's API reference page (/docs) in
// headless Chromium and checks that it shows every operation of the
// OpenAPI document, that it loads nothing from another origin, and makes a
// screenshot.
//
// It serves the real route set (app.APIs) through the real HTTP stack
// (server.New) on 127.0.0.1, without a control plane: the page needs
// none. Chromium is Debian's package (`make chromium`, or apt-get install
// chromium); OPS_CHROMIUM names another binary. The screenshot and the
// rendered DOM go to $OPS_ARTIFACTS_DIR when set, to the test's temporary
// directory otherwise; the test logs where.
package docspage

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	. "github.com/onsi/gomega"
	"golang.org/x/net/html"
	"sigs.k8s.io/yaml"

	"github.com/tidbcloud/ops-server/apiserver/internal/app"
	"github.com/tidbcloud/ops-server/apiserver/internal/docspage"
	"github.com/tidbcloud/ops-server/apiserver/internal/openapi"
	"github.com/tidbcloud/ops-server/apiserver/internal/server"
)

// chromium finds the browser; a missing one fails the test naming how to
// get it.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("OPS_CHROMIUM"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("OPS_CHROMIUM=%s: %v", p, err)
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("this test needs headless Chromium and found none on PATH: install Debian's package " +
		"(`make chromium` does it as root: apt-get install -y chromium), or set OPS_CHROMIUM to a Chromium or Chrome binary")
	return ""
}

// serve serves the routes ops-apiserver serves on 127.0.0.1 and returns
// the base URL.
func serve(t *testing.T) string {
	t.Helper()
	e, err := server.New(server.Options{Logger: testr.New(t)}, app.APIs(nil, nil)...)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := server.NewHTTPServer(e, testr.New(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.Serve(ctx, srv, ln, 5*time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serving: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// artifacts is where the screenshot and the DOM are kept.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("OPS_ARTIFACTS_DIR")
	if dir == "" {
		return t.TempDir()
	}
	dir = filepath.Join(dir, "docspage")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browse runs headless Chromium on url with the extra flags and returns
// its standard output and its log (console messages included).
func browse(t *testing.T, bin string, url string, extra ...string) (stdout []byte, log string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir=" + t.TempDir(), "--no-first-run", "--no-default-browser-check",
		// Chromium's own calls home (updates, safe browsing, sync) stay
		// off: the only server here is the test's.
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--disable-default-apps", "--metrics-recording-only",
		"--enable-logging=stderr", "--v=0",
		// Virtual time runs the page's timers until it is idle, then
		// Chromium dumps or shoots: no waiting on a wall clock.
		"--virtual-time-budget=60000",
	}, extra...)
	args = append(args, url)
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, errb.String())
	}
	return out.Bytes(), errb.String()
}

type operation struct {
	method, path, id, summary string
}

// operations walks the document's paths and operations.
func operations(t *testing.T) []operation {
	t.Helper()
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := yaml.Unmarshal(openapi.Document, &d); err != nil {
		t.Fatal(err)
	}
	var out []operation
	for path, item := range d.Paths {
		for method, raw := range item {
			if method == "parameters" || method == "summary" || method == "description" || method == "servers" {
				continue
			}
			var op struct {
				OperationID string `json:"operationId"`
				Summary     string `json:"summary"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			out = append(out, operation{method: method, path: path, id: op.OperationID, summary: op.Summary})
		}
	}
	slices.SortFunc(out, func(a, b operation) int { return strings.Compare(a.path+" "+a.method, b.path+" "+b.method) })
	return out
}

// section is what the rendered page shows of one operation.
type section struct {
	headings []string // the texts of its <h2>
	text     string   // all its text, spaces collapsed
}

var operationIDRE = regexp.MustCompile(`^tag/[^/]+/operation/(.+)$`)

// sections finds Redoc's operation sections (data-section-id
// "tag/<tag>/operation/<operationId>") in the DOM.
func sections(t *testing.T, dom []byte) map[string]section {
	t.Helper()
	root, err := html.Parse(bytes.NewReader(dom))
	if err != nil {
		t.Fatalf("parsing the DOM: %v", err)
	}
	out := map[string]section{}
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			for _, a := range n.Attr {
				if a.Key != "data-section-id" {
					continue
				}
				if m := operationIDRE.FindStringSubmatch(a.Val); m != nil {
					s := section{text: text(n)}
					for h := range n.Descendants() {
						if h.Type == html.ElementNode && h.Data == "h2" {
							s.headings = append(s.headings, text(h))
						}
					}
					out[m[1]] = s
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	return out
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		switch {
		case n.Type == html.TextNode:
			b.WriteString(n.Data)
			b.WriteString(" ")
		case n.Type == html.ElementNode && (n.Data == "script" || n.Data == "style"):
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// cspRE matches Chromium's console messages about the page's
// Content-Security-Policy ("Loading the image '<url>' violates the
// following Content Security Policy directive ... blocked").
var cspRE = regexp.MustCompile(`(?m)^.*Content Security Policy.*$`)

// redocLogo is the one thing Redoc loads from elsewhere: its footer logo
// (the policy refuses it and Redoc hides the image).
const redocLogo = "'https://cdn.redoc.ly/redoc/logo-mini.svg'"

func TestDocsPageShowsEveryOperation(t *testing.T) {
	g := NewWithT(t)
	bin := chromium(t)
	base := serve(t)
	out := artifacts(t)

	res, err := http.Get(base + docspage.Path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Body.Close()).To(Succeed())
	g.Expect(res.StatusCode).To(Equal(http.StatusOK))
	g.Expect(res.Header.Get("Content-Security-Policy")).To(HavePrefix("default-src 'none'"))

	dom, log := browse(t, bin, base+docspage.Path, "--dump-dom")
	domFile := filepath.Join(out, "docs.html")
	g.Expect(os.WriteFile(domFile, dom, 0o644)).To(Succeed())
	t.Logf("the rendered DOM of %s: %s", docspage.Path, domFile)

	// Whatever the page tried to load from elsewhere, the policy refused;
	// the only such request is Redoc's footer logo from its vendor's CDN.
	for _, line := range cspRE.FindAllString(log, -1) {
		t.Logf("blocked by the page's Content-Security-Policy: %s", line)
		g.Expect(line).To(ContainSubstring(redocLogo), "the page's Content-Security-Policy blocked something")
	}
	g.Expect(log).NotTo(MatchRegexp(`CONSOLE.*(Uncaught|integrity|digest)`), "console errors of the page")
	g.Expect(string(dom)).NotTo(ContainSubstring("Something went wrong"), "Redoc reports an error; see %s", domFile)

	found := sections(t, dom)
	ops := operations(t)
	g.Expect(len(ops)).To(BeNumerically(">=", 40))
	for _, op := range ops {
		s, ok := found[op.id]
		if !g.Expect(ok).To(BeTrue(), "the page has no section for %s %s (%s); see %s", strings.ToUpper(op.method), op.path, op.id, domFile) {
			continue
		}
		want := op.summary
		if want == "" {
			want = op.path
		}
		g.Expect(s.headings).To(ContainElement(want), "the heading of %s %s", strings.ToUpper(op.method), op.path)
		// The endpoint box: the method and the path, as in the document.
		g.Expect(s.text).To(ContainSubstring(op.method+" "+op.path), "the endpoint of %s", op.id)
	}
	g.Expect(found).To(HaveLen(len(ops)), "the page shows operations the document does not have")

	shot := filepath.Join(out, "docs.png")
	browse(t, bin, base+docspage.Path, "--screenshot="+shot, "--window-size=1400,1000", "--hide-scrollbars")
	t.Logf("screenshot of %s: %s", docspage.Path, shot)
	f, err := os.Open(shot)
	g.Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	img, err := png.Decode(f)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(img.Bounds().Size()).To(Equal(image.Pt(1400, 1000)))
	// Not a blank page: Redoc's three panels (menu, text, dark samples)
	// and the text give far more than a handful of colours.
	g.Expect(colours(img)).To(BeNumerically(">", 50))
}

func colours(img image.Image) int {
	seen := map[[3]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
		}
	}
	return len(seen)
}
