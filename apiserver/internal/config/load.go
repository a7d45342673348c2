package config

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"sigs.k8s.io/yaml"
)

// Load builds the configuration from defaults, the optional --config file
// and the command line args, and validates it. pflag.ErrHelp is returned
// as is for --help.
func Load(name string, args []string) (*Config, error) {
	cfg := Default()
	fs := NewFlagSet(name, cfg)
	fs.SetOutput(&bytes.Buffer{})
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if cfg.ConfigFile != "" {
		fileCfg, err := FromFile(cfg.ConfigFile)
		if err != nil {
			return nil, err
		}
		// Parse again on top of the file, so that the flags given on the
		// command line win.
		fs = NewFlagSet(name, fileCfg)
		fs.SetOutput(&bytes.Buffer{})
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		cfg = fileCfg
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// maxConfigFileBytes bounds the configuration file read.
const maxConfigFileBytes = 1 << 20

// FromFile reads a YAML file over the defaults. Unknown keys are errors.
func FromFile(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading configuration file: %w", err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, maxConfigFileBytes+1)); err != nil {
		return nil, fmt.Errorf("reading configuration file %s: %w", path, err)
	}
	if buf.Len() > maxConfigFileBytes {
		return nil, fmt.Errorf("configuration file %s is larger than %d bytes", path, maxConfigFileBytes)
	}
	return Parse(buf.Bytes())
}

// Parse reads YAML configuration over the defaults. Unknown keys are errors.
func Parse(data []byte) (*Config, error) {
	cfg := Default()
	// A map in the file replaces the default map instead of merging with it.
	cfg.Chart.Endpoints = nil
	if err := yaml.UnmarshalStrict(data, cfg); err != nil {
		return nil, fmt.Errorf("parsing configuration: %w", err)
	}
	if cfg.Chart.Endpoints == nil {
		cfg.Chart.Endpoints = DefaultEndpoints()
	}
	return cfg, nil
}
