package testenv

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Process is a child process started by the environment, with its output
// kept in a log file for tests to show on failure.
type Process struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
}

// StartProcess starts a binary from bin/ with args and env (added to the
// current environment), logging to dir/<name>.log.
func StartProcess(name, dir string, args, env []string) (*Process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return StartProcessTo(name, ProcessOutput{LogPath: logPath, Stdout: logFile, Stderr: logFile, Closer: logFile}, args, env)
}

// ProcessOutput is where a process started by StartProcessTo writes.
type ProcessOutput struct {
	// LogPath is the file Process.Log reads (the writers' file).
	LogPath string
	// Stdout and Stderr receive the process's standard output and error.
	Stdout, Stderr io.Writer
	// Closer, if set, is closed once the process has exited and its output
	// is written.
	Closer io.Closer
	// Wrapper, if set, is a command (and its first arguments) the binary's
	// path and arguments are appended to; it must exec the binary, so
	// that the process keeps its pid (see Isolated).
	Wrapper []string
}

// StartProcessTo starts a binary from bin/ like StartProcess, with its
// output going to out: for example the local stack's kubelet-format
// container logs.
func StartProcessTo(name string, out ProcessOutput, args, env []string) (*Process, error) {
	closeOut := func() {
		if out.Closer != nil {
			_ = out.Closer.Close()
		}
	}
	path, err := Binary(name)
	if err != nil {
		closeOut()
		return nil, err
	}
	if len(out.Wrapper) > 0 {
		// The wrapper execs the binary: the process keeps the pid.
		args = append(append(append([]string(nil), out.Wrapper[1:]...), path), args...)
		path = out.Wrapper[0]
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = out.Stdout
	cmd.Stderr = out.Stderr
	// Own process group, and die with the test binary.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		closeOut()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{Name: name, LogPath: out.LogPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		closeOut()
		close(p.done)
	}()
	return p, nil
}

// StartProcessWrapped starts a binary from bin/ like StartProcess, through
// wrapper (see ProcessOutput.Wrapper and Isolated).
func StartProcessWrapped(name, dir string, wrapper, args, env []string) (*Process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return StartProcessTo(name, ProcessOutput{LogPath: logPath, Stdout: logFile, Stderr: logFile, Closer: logFile, Wrapper: wrapper}, args, env)
}

// Pid is the process's id (also its process group's).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM, then SIGKILL after the grace period.
func (p *Process) Stop(grace time.Duration) error {
	if p.Exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	return nil
}

// Kill ends the process at once with SIGKILL, as a crash would.
func (p *Process) Kill() error {
	if p.Exited() {
		return nil
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
	return nil
}

// Log returns the tail of the process output (at most max bytes).
func (p *Process) Log(max int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return fmt.Sprintf("<cannot read %s: %v>", p.LogPath, err)
	}
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// WaitHTTPOK polls url until it answers 200, the process exits, or the
// timeout passes.
func (p *Process) WaitHTTPOK(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hc := &http.Client{Timeout: 2 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := hc.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before %s was ready (%v); log tail:\n%s", p.Name, url, p.err, p.Log(4000))
		case <-ctx.Done():
			return fmt.Errorf("%s: %s not ready after %s; log tail:\n%s", p.Name, url, timeout, p.Log(4000))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ExitCode is the exit code of a process that has ended (-1 when it was
// killed by a signal or has not ended).
func (p *Process) ExitCode() int {
	if !p.Exited() {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}
