// Package render renders the ops-server Helm chart (deploy/charts/ops-server)
// with the Helm SDK, exactly as `helm template` does: the chart's
// values.schema.json is enforced, the CRDs of the chart's crds/ directory are
// returned apart from the templates. The kustomize base (hack/
// render-kustomize.sh) and the tests of package deploy both use it, so the
// kustomize manifests are the chart's, never a hand-kept copy.
package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// KubeVersion is the Kubernetes version the chart is rendered for: the
// kube-apiserver the tests run (operator/testenv).
const KubeVersion = "v1.37.2"

// Options say what to render.
type Options struct {
	// ChartDir is the chart directory.
	ChartDir string
	// ReleaseName and Namespace are the release's.
	ReleaseName string
	Namespace   string
	// ValuesFiles are merged in order over the chart's values.yaml, as
	// `helm template -f a -f b` does.
	ValuesFiles []string
	// Values are merged last (like --set).
	Values map[string]any
}

// Result is a rendered chart.
type Result struct {
	// Manifest is the templates' output as Helm prints it ("# Source:"
	// comments included), in Helm's install order, each document trimmed
	// (docEndRE).
	Manifest string
	// CRDManifest is the chart's crds/ files, in file-name order.
	CRDManifest string
	// Objects are the objects of Manifest, in order.
	Objects []*unstructured.Unstructured
	// CRDs are the objects of CRDManifest.
	CRDs []*unstructured.Unstructured
	// Notes is NOTES.txt rendered.
	Notes string
}

// docEndRE is the end of one document and the separator of the next.
// Helm v4 keeps what a template leaves after its last line (blank lines,
// indentation); Helm v3 trimmed every document, and so does Render, so
// that the manifest (and the kustomize base written from it) does not
// change with Helm's major version. YAML gives trailing blank lines of a
// document no meaning, except in a keep-chomped (|+) block scalar, which
// the chart does not use.
var docEndRE = regexp.MustCompile(`[ \t\r\n]*\n---\n`)

// Render renders the chart. A values.schema.json violation is an error.
func Render(o Options) (*Result, error) {
	chrt, err := loader.Load(o.ChartDir)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", o.ChartDir, err)
	}
	vals := map[string]any{}
	for _, f := range o.ValuesFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading values: %w", err)
		}
		m := map[string]any{}
		if err := yaml.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("parsing values file %s: %w", f, err)
		}
		vals = MergeValues(vals, m)
	}
	vals = MergeValues(vals, o.Values)

	kv, err := common.ParseKubeVersion(KubeVersion)
	if err != nil {
		return nil, err
	}
	install := action.NewInstall(action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler)))
	// A client-side dry run is `helm template`: no cluster is contacted.
	install.DryRunStrategy = action.DryRunClient
	install.Replace = true
	install.ReleaseName = o.ReleaseName
	install.Namespace = o.Namespace
	install.KubeVersion = kv
	install.DisableHooks = true
	released, err := install.Run(chrt, vals)
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s: %w", chrt.Name(), err)
	}
	rel, ok := released.(*release.Release)
	if !ok {
		return nil, fmt.Errorf("rendering chart %s: unexpected release type %T", chrt.Name(), released)
	}
	res := &Result{Manifest: docEndRE.ReplaceAllString(strings.TrimSpace(rel.Manifest), "\n---\n") + "\n", Notes: rel.Info.Notes}
	if len(rel.Hooks) > 0 {
		return nil, errors.New("the chart has hooks: kustomize could not reproduce them")
	}
	if res.Objects, err = Decode([]byte(res.Manifest)); err != nil {
		return nil, err
	}
	res.CRDManifest = crdManifest(chrt)
	if res.CRDs, err = Decode([]byte(res.CRDManifest)); err != nil {
		return nil, err
	}
	return res, nil
}

// crdManifest joins the chart's crds/ files (Helm reads them in file-name
// order).
func crdManifest(chrt *chart.Chart) string {
	var b strings.Builder
	for _, f := range chrt.CRDObjects() {
		if b.Len() > 0 {
			b.WriteString("---\n")
		}
		fmt.Fprintf(&b, "# Source: %s/%s\n", chrt.Name(), f.Filename)
		data := bytes.TrimPrefix(f.File.Data, []byte("---\n"))
		b.Write(bytes.TrimSpace(data))
		b.WriteString("\n")
	}
	return b.String()
}

// Decode splits a multi-document YAML stream into objects, skipping
// empty documents.
func Decode(manifest []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	var out []*unstructured.Unstructured
	for {
		obj := map[string]any{}
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("decoding manifest: %w", err)
		}
		if len(obj) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
}

// MergeValues merges src into dst as Helm merges values files: maps merge
// key by key, anything else (lists included) is replaced. dst is changed
// and returned.
func MergeValues(dst, src map[string]any) map[string]any {
	if dst == nil {
		dst = map[string]any{}
	}
	for k, v := range src {
		if sv, ok := v.(map[string]any); ok {
			if dv, ok := dst[k].(map[string]any); ok {
				dst[k] = MergeValues(dv, sv)
				continue
			}
		}
		dst[k] = v
	}
	return dst
}

// RepoRoot finds the repository root (the directory holding go.work) from
// the working directory upwards.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.work not found above the working directory")
		}
		dir = parent
	}
}
