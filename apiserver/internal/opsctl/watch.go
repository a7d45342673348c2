package opsctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidbcloud/ops-server/apiserver/pkg/client"
)

// UpgradeSource yields the successive states of one upgrade operation.
// Next blocks until there is a state after the one it returned last (the
// first call: the current state) and returns it; a source may return an
// unchanged state (a poll). NewStreamSource follows the watch stream
// (GET …?watch=true), NewPollingSource polls.
type UpgradeSource interface {
	Next(ctx context.Context) (*client.UpgradeOperation, error)
}

// NewPollingSource returns a source that GETs the operation every interval.
func NewPollingSource(c *client.Client, id string, interval time.Duration) UpgradeSource {
	return &pollingSource{c: c, id: id, interval: interval}
}

type pollingSource struct {
	c        *client.Client
	id       string
	interval time.Duration
	polled   bool
}

func (s *pollingSource) Next(ctx context.Context) (*client.UpgradeOperation, error) {
	if s.polled {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(s.interval):
		}
	}
	s.polled = true
	return getUpgrade(ctx, s.c, s.id)
}

// getUpgrade GETs one upgrade operation.
func getUpgrade(ctx context.Context, c *client.Client, id string) (*client.UpgradeOperation, error) {
	resp, err := c.UpgradeOperationsGet(ctx, client.UpgradeOperationID(id))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("reading the operation: %w", err)
	}
	if err := client.ResponseError(resp, body); err != nil {
		return nil, err
	}
	op := &client.UpgradeOperation{}
	if err := json.Unmarshal(body, op); err != nil {
		return nil, fmt.Errorf("the operation: %w", err)
	}
	return op, nil
}

// watchUpgrade follows an operation until it ends: nil when it Succeeded,
// an *ExitError (code 1) naming the failed step and its message when it
// Failed, or saying it was Cancelled.
func (g *globals) watchUpgrade(cmd *cobra.Command, id string, timeout time.Duration) error {
	c, err := g.client()
	if err != nil {
		return err
	}
	// Cancelled on return: ends a source's stream.
	ctx, cancel := context.WithCancel(ctxOf(cmd))
	defer cancel()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	newSource := g.io.NewUpgradeSource
	if newSource == nil {
		newSource = NewStreamSource
	}
	src := newSource(c, id, g.io.PollInterval)
	var view upgradeView
	if g.io.IsTerminal(g.io.Out) {
		view = &ttyView{out: g.io.Out}
	} else {
		view = &plainView{out: g.io.Out, steps: map[string]string{}}
	}
	// A spinner needs redraws between states: tick on a terminal.
	ticker := newTicker(view)
	defer ticker.stop()
	for {
		op, err := src.Next(ctx)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) && timeout > 0 {
				return &ExitError{Code: 1, Err: fmt.Errorf("upgrade operation %s: still running after %s", id, timeout)}
			}
			return err
		}
		ticker.set(op)
		switch op.Phase {
		case client.UpgradeOperationPhaseSucceeded:
			ticker.stop()
			fmt.Fprintf(g.io.Out, "upgrade operation %s Succeeded\n", op.Name)
			return nil
		case client.UpgradeOperationPhaseFailed:
			ticker.stop()
			return &ExitError{Code: 1, Err: fmt.Errorf("upgrade operation %s Failed: %s", op.Name, failure(op))}
		case client.UpgradeOperationPhaseCancelled:
			ticker.stop()
			return &ExitError{Code: 1, Err: fmt.Errorf("upgrade operation %s was Cancelled: %s", op.Name, op.Message)}
		}
	}
}

// failure is the failed step and its message, else the operation's message.
func failure(op *client.UpgradeOperation) string {
	for _, s := range op.Steps {
		if s.Phase == client.UpgradeStepPhaseFailed {
			return fmt.Sprintf("step %s: %s", s.Id, s.Message)
		}
	}
	return op.Message
}

// upgradeView shows the states of an operation.
type upgradeView interface {
	show(op *client.UpgradeOperation, now time.Time)
}

// elapsed is how long a step ran (until now when it still runs).
func elapsed(s client.UpgradeStep, now time.Time) string {
	if s.StartTime.IsZero() {
		return "-"
	}
	end := now
	if !s.CompletionTime.IsZero() {
		end = s.CompletionTime
	}
	return (end.Sub(s.StartTime)).Truncate(time.Second).String()
}

// blocker is what the operation waits on, if anything.
func blocker(op *client.UpgradeOperation) string {
	b := op.BlockedBy
	if b.Reason == "" && b.Message == "" {
		return ""
	}
	parts := []string{}
	for _, p := range []string{b.Reason, b.Message} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ": ")
}

// plainView writes one line per change: the operation's phase, a step's
// phase, a blocker (for logs and pipes, not a terminal).
type plainView struct {
	out     io.Writer
	phase   string
	blocked string
	steps   map[string]string
}

func (v *plainView) show(op *client.UpgradeOperation, now time.Time) {
	if p := string(op.Phase); p != v.phase {
		v.phase = p
		line := fmt.Sprintf("%s  operation %s  %s", now.Format("15:04:05"), op.Name, p)
		if op.Message != "" {
			line += "  " + op.Message
		}
		fmt.Fprintln(v.out, line)
	}
	for _, s := range op.Steps {
		if string(s.Phase) == v.steps[s.Id] {
			continue
		}
		v.steps[s.Id] = string(s.Phase)
		line := fmt.Sprintf("%s  step %s  %s  %s", now.Format("15:04:05"), s.Id, s.Phase, elapsed(s, now))
		if s.Message != "" {
			line += "  " + s.Message
		}
		fmt.Fprintln(v.out, line)
	}
	if b := blocker(op); b != v.blocked {
		v.blocked = b
		if b != "" {
			fmt.Fprintf(v.out, "%s  blocked  %s\n", now.Format("15:04:05"), b)
		}
	}
}

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// ttyView redraws a table of the steps in place (ANSI cursor movement),
// with a spinner on the running step and a progress line.
type ttyView struct {
	out   io.Writer
	lines int
	frame int
}

func (v *ttyView) show(op *client.UpgradeOperation, now time.Time) {
	var b strings.Builder
	if v.lines > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", v.lines)
	}
	v.frame++
	rows := [][]string{{"", "STEP", "STATE", "ELAPSED", "MESSAGE"}}
	done := 0
	for _, s := range op.Steps {
		mark := " "
		switch s.Phase {
		case client.UpgradeStepPhaseSucceeded, client.UpgradeStepPhaseSkipped:
			mark = "✓"
			done++
		case client.UpgradeStepPhaseFailed:
			mark = "✗"
		case client.UpgradeStepPhaseRunning:
			mark = spinner[v.frame%len(spinner)]
		}
		rows = append(rows, []string{mark, s.Id, string(s.Phase), elapsed(s, now), s.Message})
	}
	widths := make([]int, 4)
	for _, r := range rows {
		for i := 0; i < 4; i++ {
			if n := len([]rune(r[i])); n > widths[i] {
				widths[i] = n
			}
		}
	}
	lines := 0
	for _, r := range rows {
		b.WriteString("\x1b[2K")
		for i := 0; i < 4; i++ {
			b.WriteString(r[i] + strings.Repeat(" ", widths[i]-len([]rune(r[i]))+2))
		}
		b.WriteString(r[4] + "\n")
		lines++
	}
	bar := progressBar(done, len(op.Steps), 30)
	status := fmt.Sprintf("%s %s %d/%d steps  phase %s", op.Name, bar, done, len(op.Steps), op.Phase)
	if bl := blocker(op); bl != "" {
		status += "  blocked: " + bl
	}
	b.WriteString("\x1b[2K" + status + "\n")
	lines++
	// Fewer lines than last time: clear what is left below.
	for i := lines; i < v.lines; i++ {
		b.WriteString("\x1b[2K\n")
	}
	if lines < v.lines {
		fmt.Fprintf(&b, "\x1b[%dA", v.lines-lines)
	}
	v.lines = lines
	_, _ = io.WriteString(v.out, b.String())
}

func progressBar(done, total, width int) string {
	if total <= 0 {
		return "[" + strings.Repeat(" ", width) + "]"
	}
	n := done * width / total
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}

// ticker redraws the last state every 200ms on a terminal (the spinner and
// the elapsed times move while waiting for the next state); elsewhere it
// only shows each state once.
type ticker struct {
	mu      sync.Mutex
	view    upgradeView
	last    *client.UpgradeOperation
	quit    chan struct{}
	stopped bool
	wg      sync.WaitGroup
}

func newTicker(view upgradeView) *ticker {
	t := &ticker{view: view, quit: make(chan struct{})}
	if _, ok := view.(*ttyView); ok {
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-t.quit:
					return
				case <-tick.C:
					t.mu.Lock()
					if t.last != nil && !t.stopped {
						t.view.show(t.last, time.Now())
					}
					t.mu.Unlock()
				}
			}
		}()
	}
	return t
}

func (t *ticker) set(op *client.UpgradeOperation) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last = op
	t.view.show(op, time.Now())
}

func (t *ticker) stop() {
	t.mu.Lock()
	if !t.stopped {
		t.stopped = true
		close(t.quit)
	}
	t.mu.Unlock()
	t.wg.Wait()
}

// progress shows a one-line status while waiting: a spinner redrawn in
// place on a terminal, a line per change otherwise.
type progress struct {
	io    *IO
	tty   bool
	last  string
	frame int
	open  bool
	start time.Time
}

func newProgress(stdio *IO, msg string) *progress {
	p := &progress{io: stdio, tty: stdio.IsTerminal(stdio.Err), start: time.Now()}
	p.update(msg)
	return p
}

// update shows msg (on stderr: stdout stays the command's output).
func (p *progress) update(msg string) {
	if p.tty {
		p.frame++
		fmt.Fprintf(p.io.Err, "\r\x1b[2K%s %s  %s", spinner[p.frame%len(spinner)], msg, humanDuration(time.Since(p.start)))
		p.open = true
		return
	}
	if msg != p.last {
		fmt.Fprintln(p.io.Err, msg)
	}
	p.last = msg
}

func (p *progress) done() {
	if p.tty && p.open {
		fmt.Fprint(p.io.Err, "\r\x1b[2K")
		p.open = false
	}
}
