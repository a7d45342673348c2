package troubleshoot

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tidbcloud/ops-server/apiserver/internal/events"
)

// The defaults of the diagnostics bounds (config: diagnosticsLogLines,
// diagnosticsMaxBytes).
const (
	defaultDiagnosticsLogLines = 500
	defaultDiagnosticsMaxBytes = 64 << 20
	// componentFetchTimeout bounds each /metrics and /flags read.
	componentFetchTimeout = 10 * time.Second
)

// Bundle is a diagnostics bundle of a vmcluster, ready to be written: the
// vmcluster's objects are read (so that a missing vmcluster is an
// ordinary error), the parts are fetched while it is written.
type Bundle struct {
	s *Service
	o *objects
}

// Manifest is the bundle's manifest.json: every part with its size, the
// parts cut at the size bound, and the parts that could not be fetched.
type Manifest struct {
	VMCluster   string          `json:"vmcluster"`
	GeneratedAt string          `json:"generatedAt"`
	Parts       []ManifestPart  `json:"parts"`
	Errors      []ManifestError `json:"errors,omitempty"`
}

// ManifestPart is one file of the bundle.
type ManifestPart struct {
	Name      string `json:"name"`
	Bytes     int    `json:"bytes"`
	Truncated bool   `json:"truncated,omitempty"`
}

// ManifestError is a part that could not be fetched.
type ManifestError struct {
	Part  string `json:"part"`
	Error string `json:"error"`
}

// Diagnostics reads the objects of a vmcluster for a bundle.
func (s *Service) Diagnostics(ctx context.Context, id string) (*Bundle, error) {
	o, err := s.load(ctx, id, true)
	if err != nil {
		return nil, err
	}
	return &Bundle{s: s, o: o}, nil
}

// bundleWriter writes the parts of a bundle within a byte budget.
type bundleWriter struct {
	tw       *tar.Writer
	budget   int64
	now      time.Time
	manifest Manifest
}

func (w *bundleWriter) add(name string, b []byte) error {
	part := ManifestPart{Name: name, Bytes: len(b)}
	if int64(len(b)) > w.budget {
		b, part.Truncated, part.Bytes = b[:w.budget], true, int(w.budget)
	}
	w.budget -= int64(len(b))
	w.manifest.Parts = append(w.manifest.Parts, part)
	if err := w.tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: w.now, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err := w.tw.Write(b)
	return err
}

func (w *bundleWriter) addJSON(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return w.add(name, append(b, '\n'))
}

func (w *bundleWriter) failed(part string, err error) {
	w.manifest.Errors = append(w.manifest.Errors, ManifestError{Part: part, Error: err.Error()})
}

// WriteTo writes the bundle, a .tar.gz: resources.json (the tree),
// pods.json, events.json, helmrelease.json (the HelmRelease's status and
// history), logs/<pod>/<container>.log (the last lines of each
// container's log), metrics/<pod>.txt and flags/<pod>.txt (each
// VictoriaMetrics component's /metrics and /flags, read over a port-forward
// through the Kubernetes API server, portforward.go) and manifest.json. A part that
// cannot be read is listed in the manifest's errors, not fatal. No Secret
// is read.
func (b *Bundle) WriteTo(ctx context.Context, out io.Writer) error {
	s, o := b.s, b.o
	gz := gzip.NewWriter(out)
	w := &bundleWriter{tw: tar.NewWriter(gz), budget: s.DiagnosticsMaxBytes, now: s.now()}
	if w.budget <= 0 {
		w.budget = defaultDiagnosticsMaxBytes
	}
	lines := s.DiagnosticsLogLines
	if lines <= 0 {
		lines = defaultDiagnosticsLogLines
	}
	w.manifest = Manifest{VMCluster: o.vm.HelmReleaseInfo.ReleaseName, GeneratedAt: w.now.UTC().Format(time.RFC3339)}
	if err := w.addJSON("resources.json", s.tree(o)); err != nil {
		return err
	}
	groups := map[string]string{}
	pods := make([]Pod, 0, len(o.pods))
	for i := range o.pods {
		g, err := s.nodeGroup(ctx, o.pods[i].Spec.NodeName, groups)
		if err != nil {
			w.failed("pods.json", err)
		}
		pods = append(pods, s.podView(&o.pods[i], g))
	}
	if err := w.addJSON("pods.json", pods); err != nil {
		return err
	}
	evs, err := events.Read(ctx, s.Reader, s.refs(o), events.Query{})
	if err != nil {
		w.failed("events.json", err)
	}
	views := make([]events.Event, 0, len(evs))
	for i := range evs {
		views = append(views, events.View(&evs[i]))
	}
	if err := w.addJSON("events.json", views); err != nil {
		return err
	}
	hr := &helmv2.HelmRelease{}
	name := strings.TrimPrefix(o.vm.Name, "vmclusters/")
	if err := s.Reader.Get(ctx, types.NamespacedName{Namespace: s.HelmNamespace, Name: name}, hr); err != nil {
		w.failed("helmrelease.json", err)
	} else if err := w.addJSON("helmrelease.json", map[string]any{"name": hr.Name, "namespace": hr.Namespace, "generation": hr.Generation, "status": hr.Status}); err != nil {
		return err
	}
	for i := range o.pods {
		p := &o.pods[i]
		for _, c := range p.Spec.Containers {
			part := fmt.Sprintf("logs/%s/%s.log", p.Name, c.Name)
			raw, err := s.Clientset.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: c.Name, TailLines: &lines}).Do(ctx).Raw()
			if err != nil {
				w.failed(part, err)
				continue
			}
			if err := w.add(part, raw); err != nil {
				return err
			}
		}
		port := componentPort(p)
		if port == 0 {
			continue
		}
		for _, path := range []string{"metrics", "flags"} {
			part := fmt.Sprintf("%s/%s.txt", path, p.Name)
			fctx, cancel := context.WithTimeout(ctx, componentFetchTimeout)
			raw, err := s.fetchThroughPortForward(fctx, p, port, "/"+path, w.budget+1)
			cancel()
			if err != nil {
				w.failed(part, err)
				continue
			}
			if err := w.add(part, raw); err != nil {
				return err
			}
		}
	}
	// The manifest is never cut (it is small, and says what was).
	w.budget = math.MaxInt64
	if err := w.addJSON("manifest.json", w.manifest); err != nil {
		return err
	}
	if err := w.tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// componentPort is the HTTP port of a VictoriaMetrics component's Pod
// (the VM operator names it "http"), 0 when it has none.
func componentPort(p *corev1.Pod) int32 {
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == "http" {
				return cp.ContainerPort
			}
		}
	}
	return 0
}
