package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	corev1 "k8s.io/api/core/v1"
)

// LocalRunner runs vmbackup as a local process against a vmstorage's data
// directory on this machine: the stand-in for the upload Job in tests and
// in the local stack, where vmstorage runs as a local process too.
//
// Its state lives in files under StateDir/<namespace>/<id>/ (vmbackup.log,
// pid, exit), so an upload is started at most once per ID — Start creates
// that directory exclusively — and a restarted operator (or a new
// LocalRunner on the same StateDir) observes it instead of starting it
// again, as with a Job.
type LocalRunner struct {
	// Binary is the vmbackup executable.
	Binary string
	// StateDir holds each upload's log and exit status.
	StateDir string
	// StorageDataPath maps a vmstorage pod to the local directory its
	// process serves (its -storageDataPath).
	StorageDataPath func(pod *corev1.Pod) (string, error)
	// LogName is the file name of each run's log; vmbackup.log when
	// empty.
	LogName string

	mu     sync.Mutex
	procs  map[string]*localProc
	starts map[string]int
}

type localProc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

var (
	_ Runner           = (*LocalRunner)(nil)
	_ SharedFilesystem = (*LocalRunner)(nil)
)

// StartsLog is the file in StateDir that records every start.
const StartsLog = "starts.log"

func (r *LocalRunner) logName() string {
	if r.LogName == "" {
		return "vmbackup.log"
	}
	return r.LogName
}

// SharesFilesystem: vmbackup writes where the operator can look.
func (r *LocalRunner) SharesFilesystem() bool { return true }

func (r *LocalRunner) dir(ref UploadRef) (string, error) {
	for _, s := range []string{ref.Namespace, ref.ID} {
		if s == "" || strings.ContainsAny(s, `/\`) || s == "." || s == ".." {
			return "", fmt.Errorf("invalid upload reference %q/%q", ref.Namespace, ref.ID)
		}
	}
	return filepath.Join(r.StateDir, ref.Namespace, ref.ID), nil
}

// Start runs vmbackup unless this upload was started before.
func (r *LocalRunner) Start(ctx context.Context, u Upload) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if u.Credentials != nil {
		return Permanent(errors.New("the local runner does not pass credentials to vmbackup; use an fs:// destination"))
	}
	dataPath, err := r.StorageDataPath(u.Pod)
	if err != nil {
		return Permanent(fmt.Errorf("data directory of pod %s: %w", u.Pod.Name, err))
	}
	// No metrics listener: vmbackup v1.100 starts it in a goroutine and,
	// when a (small) backup finishes before the listener is registered,
	// dies at exit with "BUG: there is no server at ..." after a complete
	// backup. With an empty address it neither starts nor stops one.
	return r.StartProcess(ctx, u.UploadRef, vmbackupArgs(u.SnapshotName, dataPath, u.Destination, u.Origin, "", ""))
}

// StartProcess runs Binary with args as the run ref unless that run was
// started before (by this runner or another one on the same StateDir):
// the run's state directory is created exclusively first. Every start is
// also appended to StateDir/starts.log ("<namespace>/<id>" per line), so
// runs can be counted across operator restarts. The ClusterRestore
// reconciler runs vmrestore through it.
func (r *LocalRunner) StartProcess(ctx context.Context, ref UploadRef, args []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dir, err := r.dir(ref)
	if err != nil {
		return Permanent(err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("creating the runner's state directory: %w", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil // started before: observe it
		}
		return fmt.Errorf("creating the run's state directory: %w", err)
	}
	logFile, err := os.Create(filepath.Join(dir, r.logName()))
	if err != nil {
		return fmt.Errorf("creating the run's log: %w", err)
	}
	if f, err := os.OpenFile(filepath.Join(r.StateDir, StartsLog), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		_, _ = fmt.Fprintf(f, "%s/%s\n", ref.Namespace, ref.ID)
		_ = f.Close()
	}
	cmd := exec.Command(r.Binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		_ = os.WriteFile(filepath.Join(dir, "exit"), []byte("-1\nstarting "+filepath.Base(r.Binary)+": "+err.Error()+"\n"), 0o644)
		return nil // recorded as a failed upload
	}
	_ = os.WriteFile(filepath.Join(dir, "pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
	p := &localProc{cmd: cmd, done: make(chan struct{})}
	r.mu.Lock()
	if r.procs == nil {
		r.procs, r.starts = map[string]*localProc{}, map[string]int{}
	}
	r.procs[dir] = p
	r.starts[ref.Namespace+"/"+ref.ID]++
	r.mu.Unlock()
	go func() {
		err := cmd.Wait()
		_ = logFile.Close()
		code := 0
		if err != nil {
			code = -1
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			}
		}
		_ = os.WriteFile(filepath.Join(dir, "exit"), []byte(strconv.Itoa(code)+"\n"), 0o644)
		close(p.done)
	}()
	return nil
}

// Status reads the upload's exit file and log.
func (r *LocalRunner) Status(ctx context.Context, ref UploadRef) (UploadStatus, error) {
	dir, err := r.dir(ref)
	if err != nil {
		return UploadStatus{}, err
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return UploadStatus{State: UploadNotFound}, nil
	}
	exit, err := os.ReadFile(filepath.Join(dir, "exit"))
	if errors.Is(err, os.ErrNotExist) {
		if r.alive(dir) {
			return UploadStatus{State: UploadRunning}, nil
		}
		// Re-check: the process may have ended between the two reads.
		if exit, err = os.ReadFile(filepath.Join(dir, "exit")); err != nil {
			return UploadStatus{State: UploadFailed, Message: filepath.Base(r.Binary) + " ended without recording an exit status (the runner was restarted while it ran)"}, nil
		}
	} else if err != nil {
		return UploadStatus{}, fmt.Errorf("reading the upload's exit status: %w", err)
	}
	lines := strings.SplitN(string(exit), "\n", 2)
	code, _ := strconv.Atoi(strings.TrimSpace(lines[0]))
	log := tail(filepath.Join(dir, r.logName()), 64<<10)
	if code == 0 {
		return UploadStatus{State: UploadSucceeded, Bytes: max(parseBackedUpBytes(log), 0)}, nil
	}
	msg := vmbackupError(log)
	if msg == "" && len(lines) > 1 {
		msg = sanitize(lines[1])
	}
	if msg == "" {
		msg = fmt.Sprintf("%s exited with code %d", filepath.Base(r.Binary), code)
	}
	return UploadStatus{State: UploadFailed, Message: msg}, nil
}

// alive reports whether the upload's process runs: known to this runner
// and not done, or (after a restart) its recorded pid still exists.
func (r *LocalRunner) alive(dir string) bool {
	r.mu.Lock()
	p := r.procs[dir]
	r.mu.Unlock()
	if p != nil {
		select {
		case <-p.done:
			return false
		default:
			return true
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || pid <= 0 {
		return false
	}
	return syscall.Kill(pid, 0) == nil
}

// Delete kills the process if it runs and removes the upload's state.
func (r *LocalRunner) Delete(ctx context.Context, ref UploadRef) error {
	dir, err := r.dir(ref)
	if err != nil {
		return err
	}
	r.mu.Lock()
	p := r.procs[dir]
	delete(r.procs, dir)
	r.mu.Unlock()
	if p != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing the upload's state: %w", err)
	}
	return nil
}

// Starts returns how often each upload ("<namespace>/<id>") was started
// by this runner.
func (r *LocalRunner) Starts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.starts))
	for k, v := range r.starts {
		out[k] = v
	}
	return out
}

// Wait blocks until every process this runner started has ended.
func (r *LocalRunner) Wait() {
	r.mu.Lock()
	procs := make([]*localProc, 0, len(r.procs))
	for _, p := range r.procs {
		procs = append(procs, p)
	}
	r.mu.Unlock()
	for _, p := range procs {
		<-p.done
	}
}

// tail returns at most limit bytes of the end of a file.
func tail(path string, limit int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > limit {
		_, _ = f.Seek(fi.Size()-limit, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, limit))
	return string(b)
}
