// Package docshell reads the shell steps of a Markdown page (the
// ```sh blocks of docs/quickstart.md) with the test markers the page
// carries, so that a test can run them in order as a reader would.
//
// A marker is an HTML comment (invisible on the rendered page) on the line
// right before a block's opening fence:
//
//	<!-- test: skip <reason> -->         the block is not run
//	<!-- test: expect <regexp> -->       it exits 0 and its stdout matches
//	<!-- test: wait <duration> <regexp> --> it is run again (every 2 s) until it exits 0 and its stdout matches
//	<!-- test: fails <regexp> -->        it exits non-zero and its output matches
//
// Blocks without a marker must exit 0. Only ```sh blocks are steps; other
// fences (```, ```json …) are shown output and never run.
package docshell

import (
	"bufio"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Mode says how a block is judged.
type Mode string

const (
	ModeRun    Mode = "run"
	ModeSkip   Mode = "skip"
	ModeExpect Mode = "expect"
	ModeWait   Mode = "wait"
	ModeFails  Mode = "fails"
)

// Block is one ```sh block of the page.
type Block struct {
	// Line is the 1-based line of the opening fence.
	Line int
	// Script is the block's text, without the fences.
	Script string
	Mode   Mode
	// Reason is a skip's reason.
	Reason string
	// Pattern is what expect, wait and fails look for in the output.
	Pattern *regexp.Regexp
	// Timeout is how long wait waits.
	Timeout time.Duration
}

// FirstLine is the block's first line, to name it.
func (b Block) FirstLine() string {
	first, _, _ := strings.Cut(b.Script, "\n")
	return first
}

var markerRE = regexp.MustCompile(`^<!--\s*test:\s*(\S+)\s*(.*?)\s*-->\s*$`)

// Parse returns the ```sh blocks of a Markdown page with their markers. A
// malformed marker, a marker not followed by a ```sh block, or an
// unterminated block is an error.
func Parse(page string) ([]Block, error) {
	var (
		blocks  []Block
		pending *Block
		pendAt  int
		in      *Block
		body    []string
		fence   string
		n       int
	)
	sc := bufio.NewScanner(strings.NewReader(page))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if in != nil || fence != "" {
			if strings.HasPrefix(trimmed, "```") && strings.Trim(trimmed, "`") == "" {
				if in != nil {
					in.Script = strings.Join(body, "\n")
					blocks = append(blocks, *in)
				}
				in, body, fence = nil, nil, ""
				continue
			}
			if in != nil {
				body = append(body, line)
			}
			continue
		}
		if m := markerRE.FindStringSubmatch(trimmed); m != nil {
			b, err := marker(m[1], m[2])
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			pending, pendAt = &b, n
			continue
		}
		if strings.HasPrefix(trimmed, "```") {
			info := strings.TrimSpace(strings.TrimLeft(trimmed, "`"))
			if info == "sh" {
				b := Block{Mode: ModeRun}
				if pending != nil {
					b = *pending
				}
				b.Line = n
				in = &b
			} else {
				if pending != nil {
					return nil, fmt.Errorf("line %d: test marker before a ```%s block, only ```sh blocks run", pendAt, info)
				}
				fence = "```"
			}
			pending = nil
			continue
		}
		if pending != nil && trimmed != "" {
			return nil, fmt.Errorf("line %d: test marker not followed by a ```sh block", pendAt)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if in != nil || fence != "" {
		return nil, fmt.Errorf("unterminated code block at the end of the page")
	}
	if pending != nil {
		return nil, fmt.Errorf("line %d: test marker at the end of the page", pendAt)
	}
	return blocks, nil
}

func marker(kind, arg string) (Block, error) {
	b := Block{Mode: Mode(kind)}
	switch b.Mode {
	case ModeSkip:
		if arg == "" {
			return b, fmt.Errorf("skip needs a reason")
		}
		b.Reason = arg
		return b, nil
	case ModeWait:
		d, rest, _ := strings.Cut(arg, " ")
		t, err := time.ParseDuration(d)
		if err != nil {
			return b, fmt.Errorf("wait needs a duration first: %w", err)
		}
		b.Timeout, arg = t, strings.TrimSpace(rest)
	case ModeExpect, ModeFails:
	default:
		return b, fmt.Errorf("unknown test marker %q (skip, expect, wait, fails)", kind)
	}
	if arg == "" {
		return b, fmt.Errorf("%s needs a pattern", kind)
	}
	re, err := regexp.Compile(arg)
	if err != nil {
		return b, fmt.Errorf("%s pattern: %w", kind, err)
	}
	b.Pattern = re
	return b, nil
}
