package main

import (
	"flag"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// flagSetFor binds the logging options to a Go flag set of our own (never
// the global flag.CommandLine, which some libraries fill with their flags).
func flagSetFor(o *zap.Options) *flag.FlagSet {
	fs := flag.NewFlagSet("logging", flag.ExitOnError)
	o.BindFlags(fs)
	return fs
}
