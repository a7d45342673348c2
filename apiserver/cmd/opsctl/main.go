// Command opsctl is the command line of ops-server's REST API (see
// docs/client.md); the commands live in internal/opsctl.
package main

import (
	"io"
	"os"

	"github.com/mattn/go-isatty"

	"github.com/tidbcloud/ops-server/apiserver/internal/opsctl"
)

func main() {
	os.Exit(opsctl.Main(os.Args[1:], opsctl.IO{
		In:     os.Stdin,
		Out:    os.Stdout,
		Err:    os.Stderr,
		Getenv: os.Getenv,
		IsTerminal: func(w io.Writer) bool {
			f, ok := w.(*os.File)
			return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())) && os.Getenv("TERM") != "dumb"
		},
	}))
}
