package backup

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func annotatedPod(annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "observability", Name: "vmstorage-vmc-0", Annotations: annotations}}
}

func TestAnnotationResolver(t *testing.T) {
	cases := []struct {
		name     string
		ann      map[string]string
		want     string
		errMatch string
	}{
		{name: "IPv4 loopback", ann: map[string]string{LocalEndpointAnnotation: "http://127.0.0.1:40123"}, want: "http://127.0.0.1:40123"},
		{name: "trailing slash", ann: map[string]string{LocalEndpointAnnotation: "http://127.0.0.1:40123/"}, want: "http://127.0.0.1:40123"},
		{name: "other IPv4 loopback", ann: map[string]string{LocalEndpointAnnotation: "http://127.0.0.2:8482"}, want: "http://127.0.0.2:8482"},
		{name: "IPv6 loopback", ann: map[string]string{LocalEndpointAnnotation: "http://[::1]:8482"}, want: "http://[::1]:8482"},
		{name: "missing annotation", ann: nil, errMatch: "has no " + LocalEndpointAnnotation + " annotation"},
		{name: "empty annotation", ann: map[string]string{LocalEndpointAnnotation: ""}, errMatch: "has no"},
		{name: "pod IP", ann: map[string]string{LocalEndpointAnnotation: "http://10.244.0.7:8482"}, errMatch: "not a loopback IP address"},
		{name: "public IP", ann: map[string]string{LocalEndpointAnnotation: "http://192.0.2.1:8482"}, errMatch: "not a loopback IP address"},
		{name: "host name", ann: map[string]string{LocalEndpointAnnotation: "http://localhost:8482"}, errMatch: "not a loopback IP address"},
		{name: "unspecified address", ann: map[string]string{LocalEndpointAnnotation: "http://0.0.0.0:8482"}, errMatch: "not a loopback IP address"},
		{name: "no port", ann: map[string]string{LocalEndpointAnnotation: "http://127.0.0.1"}, errMatch: "has no port"},
		{name: "https", ann: map[string]string{LocalEndpointAnnotation: "https://127.0.0.1:8482"}, errMatch: "not a plain http://host:port URL"},
		{name: "path", ann: map[string]string{LocalEndpointAnnotation: "http://127.0.0.1:8482/snapshot"}, errMatch: "not a plain"},
		{name: "user info", ann: map[string]string{LocalEndpointAnnotation: "http://u:p@127.0.0.1:8482"}, errMatch: "not a plain"},
		{name: "query", ann: map[string]string{LocalEndpointAnnotation: "http://127.0.0.1:8482?x=1"}, errMatch: "not a plain"},
		{name: "not a URL", ann: map[string]string{LocalEndpointAnnotation: "http://127.0.0.1:%zz"}, errMatch: "not a URL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := AnnotationResolver(context.Background(), annotatedPod(tc.ann))
			if tc.errMatch != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.errMatch)))
				g.Expect(err.Error()).To(ContainSubstring("vmstorage-vmc-0"), "the error names the pod")
				g.Expect(got).To(BeEmpty())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestAnnotationStorageDataPath(t *testing.T) {
	root := "/state/vmstorage"
	cases := []struct {
		name     string
		ann      map[string]string
		want     string
		errMatch string
	}{
		{name: "inside the root", ann: map[string]string{LocalStorageDataPathAnnotation: "/state/vmstorage/observability/vmstorage-vmc-0"}, want: "/state/vmstorage/observability/vmstorage-vmc-0"},
		{name: "cleaned", ann: map[string]string{LocalStorageDataPathAnnotation: "/state/vmstorage/observability/./vmstorage-vmc-0/"}, want: "/state/vmstorage/observability/vmstorage-vmc-0"},
		{name: "missing annotation", errMatch: "has no " + LocalStorageDataPathAnnotation + " annotation"},
		{name: "relative", ann: map[string]string{LocalStorageDataPathAnnotation: "vmstorage/observability/x"}, errMatch: "not an absolute path"},
		{name: "the root itself", ann: map[string]string{LocalStorageDataPathAnnotation: "/state/vmstorage"}, errMatch: "not inside /state/vmstorage"},
		{name: "outside", ann: map[string]string{LocalStorageDataPathAnnotation: "/etc"}, errMatch: "not inside"},
		{name: "sibling with the root as prefix", ann: map[string]string{LocalStorageDataPathAnnotation: "/state/vmstorage-other/x"}, errMatch: "not inside"},
		{name: "escapes with ..", ann: map[string]string{LocalStorageDataPathAnnotation: "/state/vmstorage/../etcd"}, errMatch: "not inside"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := AnnotationStorageDataPath(root)(annotatedPod(tc.ann))
			if tc.errMatch != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.errMatch)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestNewLocalMode(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "vmbackup")
	NewWithT(t).Expect(os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)).To(Succeed())
	cases := []struct {
		name     string
		opts     LocalModeOptions
		errMatch string
	}{
		{name: "complete", opts: LocalModeOptions{StateDir: "/s/runner", StorageRoot: "/s/vmstorage", VMBackupBinary: bin}},
		{name: "no state directory", opts: LocalModeOptions{StorageRoot: "/s/vmstorage", VMBackupBinary: bin}, errMatch: "absolute state directory"},
		{name: "relative storage root", opts: LocalModeOptions{StateDir: "/s/runner", StorageRoot: "vmstorage", VMBackupBinary: bin}, errMatch: "absolute storage root"},
		{name: "no such binary", opts: LocalModeOptions{StateDir: "/s/runner", StorageRoot: "/s/vmstorage", VMBackupBinary: filepath.Join(dir, "missing")}, errMatch: "vmbackup binary"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r, resolve, err := NewLocalMode(tc.opts)
			if tc.errMatch != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.errMatch)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.Binary).To(Equal(bin))
			g.Expect(r.StateDir).To(Equal("/s/runner"))
			g.Expect(r.SharesFilesystem()).To(BeTrue())
			g.Expect(resolve).NotTo(BeNil())
			_, err = r.StorageDataPath(annotatedPod(map[string]string{LocalStorageDataPathAnnotation: "/elsewhere"}))
			g.Expect(err).To(MatchError(ContainSubstring("not inside /s/vmstorage")), "the data paths are confined to the storage root")
		})
	}
}
