// Package opsctl is the command line of the ops-server REST API: cobra
// commands on the generated client (apiserver/pkg/client), with kubectl-like
// table output, -o json|yaml, and a live `upgrades watch`.
// apiserver/cmd/opsctl only calls Main.
package opsctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/tidbcloud/ops-server/apiserver/pkg/client"
	"github.com/tidbcloud/ops-server/operator/pkg/buildinfo"
)

// Environment variables (each overrides the config file; a flag overrides
// both).
const (
	EnvServer    = "OPSCTL_SERVER"
	EnvToken     = "OPSCTL_TOKEN"
	EnvTokenFile = "OPSCTL_TOKEN_FILE"
	EnvConfig    = "OPSCTL_CONFIG"
	EnvOutput    = "OPSCTL_OUTPUT"
)

// Config is the config file (default $XDG_CONFIG_HOME/opsctl/config.yaml,
// else ~/.config/opsctl/config.yaml).
type Config struct {
	// Server is the base URL of ops-apiserver, e.g. http://127.0.0.1:8080.
	Server string `json:"server,omitempty"`
	// Token is the bearer token.
	Token string `json:"token,omitempty"`
	// TokenFile is a file holding the bearer token (read at every run).
	TokenFile string `json:"tokenFile,omitempty"`
	// Output is the default output format (table, json or yaml).
	Output string `json:"output,omitempty"`
}

// IO is where a run reads and writes, and how it learns about its
// environment (tests replace every part).
type IO struct {
	In     io.Reader
	Out    io.Writer
	Err    io.Writer
	Getenv func(string) string
	// IsTerminal says whether w is a terminal (progress is drawn there;
	// plain lines otherwise).
	IsTerminal func(w io.Writer) bool
	// PollInterval is how often polling watches ask for the state
	// (default 1s).
	PollInterval time.Duration
	// NewUpgradeSource makes the source of an upgrade operation's states
	// that `upgrades watch` follows; nil: polling (NewPollingSource). The
	// server-sent-event source plugs in here.
	NewUpgradeSource func(c *client.Client, id string, interval time.Duration) UpgradeSource
	// Now is the clock of AGE columns (nil: time.Now).
	Now func() time.Time
	// HTTPClient is the HTTP client of the API calls (nil: one with a
	// 60s timeout per request).
	HTTPClient *http.Client
}

// ExitError is an error with the exit code the process ends with.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// Main runs opsctl with args and returns the process's exit code: 0 on
// success, 1 on an error (the message on stderr), 2 on a usage error.
func Main(args []string, stdio IO) int {
	if stdio.Getenv == nil {
		stdio.Getenv = os.Getenv
	}
	if stdio.IsTerminal == nil {
		stdio.IsTerminal = func(io.Writer) bool { return false }
	}
	if stdio.In == nil {
		stdio.In = strings.NewReader("")
	}
	if stdio.Now == nil {
		stdio.Now = time.Now
	}
	if stdio.PollInterval <= 0 {
		stdio.PollInterval = time.Second
	}
	root := NewRootCommand(&stdio)
	root.SetArgs(args)
	root.SetIn(stdio.In)
	root.SetOut(stdio.Out)
	root.SetErr(stdio.Err)
	err := root.ExecuteContext(context.Background())
	if err == nil {
		return 0
	}
	fmt.Fprintln(stdio.Err, "Error:", err)
	var exit *ExitError
	if errors.As(err, &exit) {
		return exit.Code
	}
	var usage *usageError
	if errors.As(err, &usage) {
		return 2
	}
	return 1
}

type usageError struct{ error }

// globals are the persistent flags and what they resolve to.
type globals struct {
	io         *IO
	server     string
	token      string
	tokenFile  string
	configPath string
	output     string

	c *client.Client
}

// NewRootCommand returns the opsctl command tree.
func NewRootCommand(stdio *IO) *cobra.Command {
	g := &globals{io: stdio}
	root := &cobra.Command{
		Use:   "opsctl",
		Short: "opsctl drives ops-server's REST API: vmclusters, upgrades, backups and more",
		Long: `opsctl drives ops-server's REST API.

The server and the token come from --server and --token/--token-file, else
from OPSCTL_SERVER, OPSCTL_TOKEN and OPSCTL_TOKEN_FILE, else from the config
file (--config, OPSCTL_CONFIG, default ~/.config/opsctl/config.yaml):

  server: http://127.0.0.1:8080
  tokenFile: /path/to/token
  output: table`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       fmt.Sprintf("%s (revision %s)", buildinfo.Version, buildinfo.Revision),
	}
	pf := root.PersistentFlags()
	pf.StringVar(&g.server, "server", "", "ops-apiserver's base URL (env "+EnvServer+")")
	pf.StringVar(&g.token, "token", "", "bearer token (env "+EnvToken+")")
	pf.StringVar(&g.tokenFile, "token-file", "", "file holding the bearer token (env "+EnvTokenFile+")")
	pf.StringVar(&g.configPath, "config", "", "config file (env "+EnvConfig+"; default ~/.config/opsctl/config.yaml)")
	pf.StringVarP(&g.output, "output", "o", "", "output format: table, json or yaml (env "+EnvOutput+"; default table)")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })

	root.AddCommand(
		vmclustersCommand(g),
		upgradesCommand(g),
		backupsCommand(g),
		schedulesCommand(g),
		restoresCommand(g),
		operationsCommand(g),
		componentsCommand(g),
	)
	root.AddCommand(troubleshootCommands(g)...)
	root.AddCommand(
		nodeGroupsCommand(g),
		addonsCommand(g),
		providersCommand(g),
		bootstrapCommand(g),
		versionCommand(g),
	)
	return root
}

// client resolves the server and token (flag, env, config file) and
// returns the API client.
func (g *globals) client() (*client.Client, error) {
	if g.c != nil {
		return g.c, nil
	}
	cfg, err := g.loadConfig()
	if err != nil {
		return nil, err
	}
	server := first(g.server, g.io.Getenv(EnvServer), cfg.Server)
	if server == "" {
		return nil, &usageError{fmt.Errorf("no server: give --server, %s or server in the config file", EnvServer)}
	}
	token, err := resolveToken([][2]string{
		{g.token, g.tokenFile},
		{g.io.Getenv(EnvToken), g.io.Getenv(EnvTokenFile)},
		{cfg.Token, cfg.TokenFile},
	})
	if err != nil {
		return nil, err
	}
	hc := g.io.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	c, err := client.NewClient(server, client.WithHTTPClient(hc), client.WithBearerToken(token))
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", server, err)
	}
	g.c = c
	return c, nil
}

// format is the output format: the flag, the environment, the config file,
// table.
func (g *globals) format() (string, error) {
	f := first(g.output, g.io.Getenv(EnvOutput))
	if f == "" {
		cfg, err := g.loadConfig()
		if err != nil {
			return "", err
		}
		f = cfg.Output
	}
	switch f {
	case "":
		return "table", nil
	case "table", "json", "yaml":
		return f, nil
	}
	return "", &usageError{fmt.Errorf("unknown output format %q: table, json or yaml", f)}
}

func (g *globals) loadConfig() (Config, error) {
	var cfg Config
	path := first(g.configPath, g.io.Getenv(EnvConfig))
	explicit := path != ""
	if !explicit {
		dir := g.io.Getenv("XDG_CONFIG_HOME")
		if dir == "" {
			home := g.io.Getenv("HOME")
			if home == "" {
				return cfg, nil
			}
			dir = filepath.Join(home, ".config")
		}
		path = filepath.Join(dir, "opsctl", "config.yaml")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		if !explicit && errors.Is(err, os.ErrNotExist) {
			return cfg, nil
		}
		return cfg, fmt.Errorf("reading the config file: %w", err)
	}
	if err := yaml.UnmarshalStrict(raw, &cfg); err != nil {
		return cfg, fmt.Errorf("config file %s: %w", path, err)
	}
	return cfg, nil
}

// resolveToken takes the first source (token, token file) that gives
// either: flags, then the environment, then the config file.
func resolveToken(sources [][2]string) (string, error) {
	for _, s := range sources {
		if s[0] != "" {
			return s[0], nil
		}
		if s[1] != "" {
			raw, err := os.ReadFile(s[1])
			if err != nil {
				return "", fmt.Errorf("reading the token file: %w", err)
			}
			return strings.TrimSpace(string(raw)), nil
		}
	}
	return "", nil
}

func first(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
