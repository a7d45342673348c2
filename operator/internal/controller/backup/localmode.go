package backup

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Local mode is for the local stack (`make dev`, the e2e suite) only. There
// the vmstorage Pods are simulated by kwok and run no process; the stack
// backs each of them with a real vmstorage process on 127.0.0.1 and
// annotates the Pod with where that process listens and which directory it
// serves. In local mode ops-operator reads those annotations (instead of the
// Pod IP) and runs vmbackup with the LocalRunner (instead of a Job).
const (
	// LocalEndpointAnnotation is the base URL of the HTTP API of the local
	// vmstorage process backing the Pod, e.g. http://127.0.0.1:40123.
	LocalEndpointAnnotation = "local.ops.observability.tidbcloud.com/http-endpoint"
	// LocalStorageDataPathAnnotation is that process's -storageDataPath.
	LocalStorageDataPathAnnotation = "local.ops.observability.tidbcloud.com/storage-data-path"
)

// LocalModeOptions configure local mode.
type LocalModeOptions struct {
	// StateDir is the LocalRunner's state directory (absolute).
	StateDir string
	// StorageRoot is the directory every annotated storage data path must
	// be inside (absolute): vmbackup never reads anything else.
	StorageRoot string
	// VMBackupBinary is the vmbackup executable: a path, or a name looked
	// up in PATH.
	VMBackupBinary string
}

// NewLocalMode returns the runner and the resolver of local mode: the
// LocalRunner with the annotated data paths under StorageRoot, and
// AnnotationResolver.
func NewLocalMode(o LocalModeOptions) (*LocalRunner, Resolver, error) {
	for _, d := range []struct{ flag, value string }{
		{"state directory", o.StateDir}, {"storage root", o.StorageRoot},
	} {
		if d.value == "" || !filepath.IsAbs(d.value) {
			return nil, nil, fmt.Errorf("local backup mode needs an absolute %s, got %q", d.flag, d.value)
		}
	}
	name := o.VMBackupBinary
	if name == "" {
		name = "vmbackup"
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		return nil, nil, fmt.Errorf("local backup mode: vmbackup binary: %w", err)
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return nil, nil, fmt.Errorf("local backup mode: vmbackup binary: %w", err)
	}
	r := &LocalRunner{
		Binary:          bin,
		StateDir:        filepath.Clean(o.StateDir),
		StorageDataPath: AnnotationStorageDataPath(o.StorageRoot),
	}
	return r, AnnotationResolver, nil
}

// AnnotationResolver is the Resolver of local mode: the endpoint in the
// Pod's LocalEndpointAnnotation. Only a plain http URL to a loopback IP
// address is accepted, so that nothing but a process on this machine is
// ever called.
func AnnotationResolver(_ context.Context, pod *corev1.Pod) (string, error) {
	raw, ok := pod.Annotations[LocalEndpointAnnotation]
	if !ok || raw == "" {
		return "", fmt.Errorf("pod %s has no %s annotation (is the local stack's vmstorage for it running?)", pod.Name, LocalEndpointAnnotation)
	}
	ep, err := loopbackEndpoint(raw)
	if err != nil {
		return "", fmt.Errorf("pod %s: annotation %s: %w", pod.Name, LocalEndpointAnnotation, err)
	}
	return ep, nil
}

// loopbackEndpoint validates an http://<loopback IP>:<port> URL and returns
// it normalised (no trailing slash).
func loopbackEndpoint(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", errors.New("not a URL")
	}
	if u.Scheme != "http" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.Trim(u.Path, "/") != "" {
		return "", fmt.Errorf("%q is not a plain http://host:port URL", raw)
	}
	ip := net.ParseIP(u.Hostname())
	if ip == nil || !ip.IsLoopback() {
		return "", fmt.Errorf("host %q is not a loopback IP address: local mode calls only processes on this machine", u.Hostname())
	}
	if u.Port() == "" {
		return "", fmt.Errorf("%q has no port", raw)
	}
	return "http://" + net.JoinHostPort(ip.String(), u.Port()), nil
}

// AnnotationStorageDataPath returns the LocalRunner's StorageDataPath of
// local mode: the Pod's LocalStorageDataPathAnnotation, which must be an
// absolute path inside root.
func AnnotationStorageDataPath(root string) func(pod *corev1.Pod) (string, error) {
	root = filepath.Clean(root)
	return func(pod *corev1.Pod) (string, error) {
		p, ok := pod.Annotations[LocalStorageDataPathAnnotation]
		if !ok || p == "" {
			return "", fmt.Errorf("pod %s has no %s annotation", pod.Name, LocalStorageDataPathAnnotation)
		}
		if !filepath.IsAbs(p) {
			return "", fmt.Errorf("pod %s: %s %q is not an absolute path", pod.Name, LocalStorageDataPathAnnotation, p)
		}
		p = filepath.Clean(p)
		if rel, err := filepath.Rel(root, p); err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return "", fmt.Errorf("pod %s: %s %q is not inside %s", pod.Name, LocalStorageDataPathAnnotation, p, root)
		}
		return p, nil
	}
}
