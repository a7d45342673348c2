// Package docspage serves the browsable API reference: GET /docs renders
// the OpenAPI document with Redoc, whose standalone bundle is vendored in
// redoc/ (hack/docsviewer/update.sh fetches and verifies it) and embedded
// in the binary. The page loads nothing from anywhere else: the document is
// inlined into it, the bundle comes from GET /docs/redoc.standalone.js, and
// a strict Content-Security-Policy (hashes, no host sources) keeps the
// browser from loading anything more (Redoc's footer logo, which it would
// fetch from its vendor's CDN, is refused and hides itself).
package docspage

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"
	"sigs.k8s.io/yaml"

	"github.com/tidbcloud/ops-server/apiserver/internal/server"
)

// Paths of the page and of the viewer's script.
const (
	Path       = "/docs"
	ViewerPath = "/docs/redoc.standalone.js"
)

// Bundle is Redoc's standalone bundle (hack/docsviewer/update.sh).
//
//go:embed redoc/redoc.standalone.js
var Bundle []byte

// initScript starts Redoc on the document inlined in the page. The theme
// names only fonts every system has: Redoc's defaults (Roboto, Montserrat)
// are web fonts the page would have to load.
const initScript = `(function () {
  var spec = JSON.parse(document.getElementById("openapi-document").textContent);
  var sans = 'system-ui, -apple-system, "Segoe UI", "Helvetica Neue", Arial, sans-serif';
  Redoc.init(spec, {
    downloadDefinitionUrl: "openapi.yaml",
    downloadFileName: "openapi.yaml",
    expandResponses: "200,201,202",
    theme: {
      typography: {
        fontFamily: sans,
        headings: { fontFamily: sans },
        code: { fontFamily: 'ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace' }
      },
      rightPanel: { backgroundColor: "#263238" }
    }
  }, document.getElementById("redoc"));
})();`

var pageTemplate = template.Must(template.New("docs").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{{.Title}}</title>
<script type="application/json" id="openapi-document">{{.Document}}</script>
</head>
<body>
<noscript>This page needs JavaScript. The OpenAPI document itself is at <a href="openapi.yaml">/openapi.yaml</a>.</noscript>
<div id="redoc"></div>
<script src="docs/redoc.standalone.js" integrity="{{.BundleIntegrity}}"></script>
<script>{{.Init}}</script>
</body>
</html>
`))

// Page is the rendered page and the Content-Security-Policy it is served
// with.
type Page struct {
	HTML []byte
	CSP  string
}

// Render builds the page for the OpenAPI document doc (YAML or JSON).
func Render(doc []byte) (*Page, error) {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("converting the OpenAPI document to JSON: %w", err)
	}
	var d struct {
		Info struct {
			Title string `json:"title"`
		} `json:"info"`
	}
	if err := json.Unmarshal(js, &d); err != nil {
		return nil, fmt.Errorf("reading the OpenAPI document: %w", err)
	}
	if d.Info.Title == "" {
		d.Info.Title = "API reference"
	}
	// The document goes into a <script> data block: escaping <, > and &
	// as \u003c... keeps "</script>" and "<!--" out of it, and the JSON
	// means the same.
	var escaped bytes.Buffer
	json.HTMLEscape(&escaped, js)

	bundleSum := sha512.Sum384(Bundle)
	bundleIntegrity := "sha384-" + base64.StdEncoding.EncodeToString(bundleSum[:])
	initSum := sha256.Sum256([]byte(initScript))
	initHash := "sha256-" + base64.StdEncoding.EncodeToString(initSum[:])

	var out bytes.Buffer
	err = pageTemplate.Execute(&out, struct {
		Title           string
		Document        template.JS
		BundleIntegrity string
		Init            template.JS
	}{d.Info.Title, template.JS(escaped.String()), bundleIntegrity, template.JS(initScript)})
	if err != nil {
		return nil, fmt.Errorf("rendering the docs page: %w", err)
	}
	return &Page{HTML: out.Bytes(), CSP: csp(bundleIntegrity, initHash)}, nil
}

// csp is the page's policy: scripts only by hash (the bundle's, which the
// browser checks against its integrity attribute, and the init script's),
// no host source anywhere. Redoc needs inline styles (styled-components),
// data: images (its icons), and a worker from a blob: URL for its search.
func csp(hashes ...string) string {
	scripts := make([]string, len(hashes))
	for i, h := range hashes {
		scripts[i] = "'" + h + "'"
	}
	return strings.Join([]string{
		"default-src 'none'",
		"script-src " + strings.Join(scripts, " "),
		"style-src 'unsafe-inline'",
		"img-src data:",
		"font-src 'none'",
		"connect-src 'none'",
		"worker-src blob:",
		"base-uri 'none'",
		"form-action 'none'",
		"frame-ancestors 'none'",
	}, "; ")
}

// API serves the page and the viewer's script.
type API struct {
	// Document is the OpenAPI document the page shows.
	Document []byte

	once sync.Once
	page *Page
	err  error
}

// Routes implements server.API.
func (a *API) Routes() []server.Route {
	return []server.Route{
		{Method: http.MethodGet, Path: Path, Name: "docs", Public: true, Handler: a.servePage},
		{Method: http.MethodGet, Path: ViewerPath, Name: "docs.viewer", Public: true, Handler: serveBundle},
	}
}

func (a *API) servePage(c echo.Context) error {
	a.once.Do(func() { a.page, a.err = Render(a.Document) })
	if a.err != nil {
		return a.err
	}
	h := c.Response().Header()
	h.Set("Content-Security-Policy", a.page.CSP)
	securityHeaders(h)
	h.Set("Cache-Control", "no-cache")
	return c.Blob(http.StatusOK, "text/html; charset=utf-8", a.page.HTML)
}

func serveBundle(c echo.Context) error {
	h := c.Response().Header()
	h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	securityHeaders(h)
	h.Set("Cache-Control", "public, max-age=3600")
	return c.Blob(http.StatusOK, "text/javascript; charset=utf-8", Bundle)
}

func securityHeaders(h http.Header) {
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}
