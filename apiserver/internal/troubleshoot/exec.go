package troubleshoot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
)

// Exec limits.
const (
	DefaultExecTimeout = 30 * time.Second
	MaxExecTimeout     = 300 * time.Second
	maxCommandArgs     = 64
	maxCommandBytes    = 8 << 10
)

// ValidateExec checks an exec body (one violation per bad field) and the
// server's allowlist of commands (allowed empty: any command). It fills
// in the default timeout.
func ValidateExec(req *ExecRequest, allowed []string) *apierror.Error {
	var vs []apierror.FieldViolation
	total := 0
	for _, a := range req.Command {
		total += len(a)
	}
	switch {
	case len(req.Command) == 0 || req.Command[0] == "":
		vs = append(vs, apierror.Violation("command", "must name a command: a non-empty list whose first item is the executable"))
	case len(req.Command) > maxCommandArgs:
		vs = append(vs, apierror.Violation("command", "must have at most %d items", maxCommandArgs))
	case total > maxCommandBytes:
		vs = append(vs, apierror.Violation("command", "must be at most %d bytes in all", maxCommandBytes))
	}
	switch {
	case req.TimeoutSeconds == 0:
		req.TimeoutSeconds = int(DefaultExecTimeout.Seconds())
	case req.TimeoutSeconds < 0 || req.TimeoutSeconds > int(MaxExecTimeout.Seconds()):
		vs = append(vs, apierror.Violation("timeoutSeconds", "must be between 1 and %d", int(MaxExecTimeout.Seconds())))
	}
	if len(vs) > 0 {
		return apierror.InvalidArgument("the exec request is invalid", vs...)
	}
	// An exact match only: a base-name match would let /tmp/x/ls run as
	// "ls".
	if len(allowed) > 0 && !slices.Contains(allowed, req.Command[0]) {
		return apierror.PermissionDenied(ReasonCommandNotAllowed, "command %q is not in the server's allowlist (--exec-allowed-commands)", truncate(req.Command[0], 80)).
			WithMetadata("command", truncate(req.Command[0], 80))
	}
	return nil
}

// limitedBuffer keeps the first max bytes written to it and notes that
// more came.
type limitedBuffer struct {
	buf       bytes.Buffer
	max       int64
	truncated bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	room := b.max - int64(b.buf.Len())
	if int64(len(p)) > room {
		b.truncated = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

// Exec runs a command (already validated) in a container of a Pod of the
// vmcluster through the pods/exec subresource, without a TTY or stdin,
// and returns its bounded output and exit code.
func (s *Service) Exec(ctx context.Context, id, pod string, req ExecRequest) (ExecResult, error) {
	p, container, err := s.pod(ctx, id, pod, req.Container)
	if err != nil {
		return ExecResult{}, err
	}
	u := s.Clientset.CoreV1().RESTClient().Post().Resource("pods").Namespace(p.Namespace).Name(p.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: req.Command, Stdout: true, Stderr: true}, scheme.ParameterCodec).URL()
	ws, err := remotecommand.NewWebSocketExecutor(s.RESTConfig, http.MethodGet, u.String())
	if err != nil {
		return ExecResult{}, fmt.Errorf("building the websocket executor: %w", err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(s.RESTConfig, http.MethodPost, u)
	if err != nil {
		return ExecResult{}, fmt.Errorf("building the SPDY executor: %w", err)
	}
	exec, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return ExecResult{}, fmt.Errorf("building the executor: %w", err)
	}
	stdout := &limitedBuffer{max: s.ExecMaxOutputBytes}
	stderr := &limitedBuffer{max: s.ExecMaxOutputBytes}
	ectx, cancel := context.WithTimeout(ctx, time.Duration(req.TimeoutSeconds)*time.Second)
	defer cancel()
	err = exec.StreamWithContext(ectx, remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr})
	res := ExecResult{Stdout: stdout.buf.String(), Stderr: stderr.buf.String(), Truncated: stdout.truncated || stderr.truncated}
	var exitErr utilexec.ExitError
	var statusErr apierrors.APIStatus
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		res.ExitCode = exitErr.ExitStatus()
	case ectx.Err() != nil && ctx.Err() == nil:
		res.ExitCode, res.TimedOut = -1, true
	case errors.As(err, &statusErr):
		return ExecResult{}, apierror.FromKubernetes(err)
	default:
		if code, ok := plainExitStatus(err); ok {
			res.ExitCode = code
			return res, nil
		}
		return ExecResult{}, apierror.Unavailable("the command could not be run in container %s of Pod %s", container, p.Name).
			WithCause(fmt.Errorf("running a command in %s/%s container %s: %w", p.Namespace, p.Name, container, err))
	}
	return res, nil
}

// exitStatusRE is how Go's os/exec words an exit ("exit status 3"), at the
// end of the first line of a message.
var exitStatusRE = regexp.MustCompile(`(?:^|: )exit status (\d{1,3})(?:\n|$)`)

// plainExitStatus reads the exit code out of a runtime that reports a
// command's non-zero exit as a plain failure message instead of the
// NonZeroExitCode status of the exec protocol (kwok's local exec does).
func plainExitStatus(err error) (int, bool) {
	m := exitStatusRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, false
	}
	n, convErr := strconv.Atoi(m[1])
	return n, convErr == nil && n <= 255
}
