package troubleshoot_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidbcloud/ops-server/apiserver/internal/troubleshoot"
)

// untar returns the files of a .tar.gz.
func untar(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	g := NewWithT(t)
	gz, err := gzip.NewReader(bytes.NewReader(b))
	g.Expect(err).NotTo(HaveOccurred())
	tr := tar.NewReader(gz)
	out := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		g.Expect(err).NotTo(HaveOccurred())
		body, err := io.ReadAll(tr)
		g.Expect(err).NotTo(HaveOccurred())
		out[h.Name] = body
	}
}

// The bundle opens, holds the tree, the Pods, the Events, the
// HelmRelease's status and a manifest; what the test API server cannot
// serve (container logs, the Pod proxy: there is no kubelet) is listed
// in the manifest's errors; no Secret value is in it.
func TestDiagnosticsBundle(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t)
	id := a.vmcluster("diag")
	pods := installed(t, a.ns, "diag", 1)
	event(t, "pod-backoff", "Pod", pods[0], corev1.EventTypeWarning, "BackOff", time.Minute)
	secretValue := "diag-secret-value-7f3a9c"
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "vmstorage-creds", Namespace: a.ns},
		StringData: map[string]string{"password": secretValue}})

	code, b := a.do(http.MethodGet, id+"/diagnostics", "")
	g.Expect(code).To(Equal(http.StatusOK), string(b))
	files := untar(t, b)
	for _, part := range []string{"resources.json", "pods.json", "events.json", "helmrelease.json", "manifest.json"} {
		g.Expect(files).To(HaveKey(part))
	}
	var tree troubleshoot.Tree
	g.Expect(json.Unmarshal(files["resources.json"], &tree)).To(Succeed())
	g.Expect(find(tree.Root, "Pod")).To(HaveLen(2))
	g.Expect(string(files["events.json"])).To(ContainSubstring(`"reason": "BackOff"`))
	g.Expect(string(files["pods.json"])).To(ContainSubstring(pods[0].Name))
	var m troubleshoot.Manifest
	g.Expect(json.Unmarshal(files["manifest.json"], &m)).To(Succeed())
	g.Expect(m.Parts).To(ContainElement(HaveField("Name", "resources.json")))
	g.Expect(m.Errors).To(ContainElement(HaveField("Part", "logs/"+pods[0].Name+"/vmstorage.log")))
	for name, body := range files {
		g.Expect(string(body)).NotTo(ContainSubstring(secretValue), name)
	}

	code, _ = a.do(http.MethodGet, "no-such-vmcluster/diagnostics", "")
	g.Expect(code).To(Equal(http.StatusNotFound))
}
