package troubleshoot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
)

// Logs opens the log stream of a container of a Pod of the vmcluster.
// The stream ends after req.LimitBytes bytes; when following, also at the
// server's FollowMaxDuration (the caller's ctx bounds it). The caller
// closes it.
func (s *Service) Logs(ctx context.Context, id, pod string, req LogRequest) (io.ReadCloser, error) {
	p, container, err := s.pod(ctx, id, pod, req.Container)
	if err != nil {
		return nil, err
	}
	opts := &corev1.PodLogOptions{
		Container: container, Follow: req.Follow, Previous: req.Previous, Timestamps: req.Timestamps,
		TailLines: req.TailLines, SinceSeconds: req.SinceSeconds, LimitBytes: &req.LimitBytes,
	}
	rc, err := s.Clientset.CoreV1().Pods(p.Namespace).GetLogs(p.Name, opts).Stream(ctx)
	if err != nil {
		if ae := apierror.FromKubernetes(err); ae != nil {
			return nil, ae
		}
		return nil, fmt.Errorf("opening the log of %s/%s container %s: %w", p.Namespace, p.Name, container, err)
	}
	// The kubelet honours limitBytes; this bounds the read whatever it
	// does.
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(rc, req.LimitBytes), rc}, nil
}

// copyFlushing copies r to w, flushing after every read, until r ends or
// fails (a follow ended by the deadline or the client is not an error).
func copyFlushing(w io.Writer, flush func(), r io.Reader) error {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil // the client went away
			}
			flush()
		}
		if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// extendDeadlines lets a long-running response outlive the HTTP
// server's read and write timeouts, up to until.
func extendDeadlines(w http.ResponseWriter, until time.Time) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(until)
	_ = rc.SetWriteDeadline(until)
}
