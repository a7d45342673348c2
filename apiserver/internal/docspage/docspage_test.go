package docspage

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/tidbcloud/ops-server/apiserver/internal/server"
)

// TestBundleIsTheRecordedRelease: the embedded bundle is the file
// hack/docsviewer/update.sh fetched and verified, of the version it pins.
func TestBundleIsTheRecordedRelease(t *testing.T) {
	g := NewWithT(t)
	script, err := os.ReadFile(filepath.Join("..", "..", "..", "hack", "docsviewer", "update.sh"))
	g.Expect(err).NotTo(HaveOccurred())
	version := regexp.MustCompile(`(?m)^VERSION=(\S+)$`).FindSubmatch(script)
	sum := regexp.MustCompile(`(?m)^BUNDLE_SHA256=([0-9a-f]{64})$`).FindSubmatch(script)
	g.Expect(version).To(HaveLen(2), "update.sh sets VERSION")
	g.Expect(sum).To(HaveLen(2), "update.sh sets BUNDLE_SHA256")

	got := sha256.Sum256(Bundle)
	g.Expect(hex.EncodeToString(got[:])).To(Equal(string(sum[1])),
		"redoc/redoc.standalone.js is not the bundle update.sh recorded: run hack/docsviewer/update.sh")
	// Redoc's error page shows its version: " ReDoc Version: ","2.5.1".
	g.Expect(bytes.Contains(Bundle, []byte(`" ReDoc Version: ","`+string(version[1])+`"`))).To(BeTrue(),
		"the bundle is not Redoc %s, update.sh's VERSION", version[1])
}

const testDoc = `openapi: 3.0.3
info:
  title: Test API
  version: v1
  description: 'Breaks out of a script element if not escaped: </script><script>alert(1)</script> <!-- & too'
paths:
  /things:
    get:
      operationId: things.list
      summary: List things.
      responses:
        '200': {description: OK}
`

var (
	scriptRE    = regexp.MustCompile(`(?s)<script>(.*?)</script>`)
	dataRE      = regexp.MustCompile(`(?s)<script type="application/json" id="openapi-document">(.*?)</script>`)
	bundleTagRE = regexp.MustCompile(`<script src="docs/redoc.standalone.js" integrity="([^"]+)"></script>`)
)

func TestRender(t *testing.T) {
	g := NewWithT(t)
	p, err := Render([]byte(testDoc))
	g.Expect(err).NotTo(HaveOccurred())
	page := string(p.HTML)

	g.Expect(page).To(ContainSubstring("<title>Test API</title>"))

	// The document is one data block that parses back to the document:
	// its "</script>" did not end the element.
	data := dataRE.FindAllStringSubmatch(page, -1)
	g.Expect(data).To(HaveLen(1))
	g.Expect(data[0][1]).NotTo(ContainSubstring("<"))
	want, err := yaml.YAMLToJSON([]byte(testDoc))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(data[0][1]).To(MatchJSON(want))
	var d map[string]any
	g.Expect(json.Unmarshal([]byte(data[0][1]), &d)).To(Succeed())
	g.Expect(d).To(HaveKeyWithValue("info", HaveKeyWithValue("description", ContainSubstring("</script><script>alert(1)"))))

	// Exactly two scripts run: the bundle, checked against its integrity,
	// and the inline init script; the policy allows both by hash and
	// nothing else.
	inline := scriptRE.FindAllStringSubmatch(page, -1)
	g.Expect(inline).To(HaveLen(1))
	initSum := sha256.Sum256([]byte(inline[0][1]))
	tag := bundleTagRE.FindStringSubmatch(page)
	g.Expect(tag).To(HaveLen(2), "the page loads the bundle with its integrity")
	tag[1] = html.UnescapeString(tag[1])
	bundleSum := sha512.Sum384(Bundle)
	g.Expect(tag[1]).To(Equal("sha384-" + base64.StdEncoding.EncodeToString(bundleSum[:])))
	g.Expect(strings.Count(page, "<script")).To(Equal(3))

	directives := map[string]string{}
	for _, d := range strings.Split(p.CSP, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		directives[name] = value
	}
	g.Expect(directives).To(HaveKeyWithValue("default-src", "'none'"))
	g.Expect(directives).To(HaveKeyWithValue("script-src",
		"'"+tag[1]+"' 'sha256-"+base64.StdEncoding.EncodeToString(initSum[:])+"'"))
	g.Expect(directives).To(HaveKeyWithValue("connect-src", "'none'"))
	g.Expect(directives).To(HaveKeyWithValue("font-src", "'none'"))
	g.Expect(directives).To(HaveKeyWithValue("frame-ancestors", "'none'"))
	g.Expect(directives).To(HaveKeyWithValue("base-uri", "'none'"))
	for name, value := range directives {
		// No host, scheme-wide or wildcard source: nothing from another
		// origin (blob: and data: are made by the page itself).
		g.Expect(value).NotTo(MatchRegexp(`https?:|\*|'self'|'unsafe-eval'|'strict-dynamic'`), "directive %s", name)
	}
}

func TestRenderRefusesABrokenDocument(t *testing.T) {
	g := NewWithT(t)
	_, err := Render([]byte("openapi: [3\n"))
	g.Expect(err).To(MatchError(ContainSubstring("OpenAPI document")))
}

func TestRoutes(t *testing.T) {
	e, err := server.New(server.Options{}, &API{Document: []byte(testDoc)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, contentType string
		body                    func(Gomega, []byte)
		csp                     string
	}{
		{
			name: "page", path: Path, contentType: "text/html; charset=utf-8",
			body: func(g Gomega, b []byte) { g.Expect(string(b)).To(ContainSubstring(`<div id="redoc"></div>`)) },
			csp:  "script-src 'sha384-",
		},
		{
			name: "viewer", path: ViewerPath, contentType: "text/javascript; charset=utf-8",
			body: func(g Gomega, b []byte) { g.Expect(b).To(Equal(Bundle)) },
			csp:  "default-src 'none'",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			res := rec.Result()
			g.Expect(res.StatusCode).To(Equal(http.StatusOK))
			g.Expect(res.Header.Get("Content-Type")).To(Equal(tc.contentType))
			g.Expect(res.Header.Get("Content-Security-Policy")).To(ContainSubstring(tc.csp))
			g.Expect(res.Header.Get("X-Content-Type-Options")).To(Equal("nosniff"))
			g.Expect(res.Header.Get("X-Frame-Options")).To(Equal("DENY"))
			b, err := io.ReadAll(res.Body)
			g.Expect(err).NotTo(HaveOccurred())
			tc.body(g, b)
		})
	}
}

// TestRoutesOfABrokenDocument: a page that cannot be rendered is the
// central error handler's 500, not a panic.
func TestRoutesOfABrokenDocument(t *testing.T) {
	g := NewWithT(t)
	e, err := server.New(server.Options{}, &API{Document: []byte("openapi: [3\n")})
	g.Expect(err).NotTo(HaveOccurred())
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, Path, nil))
	g.Expect(rec.Code).To(Equal(http.StatusInternalServerError))
	g.Expect(rec.Header().Get("Content-Type")).To(HavePrefix("application/json"))
}
