// Package logging builds the process logger: logr on zap through zapr.
package logging

import (
	"fmt"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/tidbcloud/ops-server/apiserver/internal/config"
)

// New returns a logr.Logger writing to stderr at the configured level and
// format, and a function flushing it.
func New(cfg config.LogConfig) (logr.Logger, func(), error) {
	level, err := zapcore.ParseLevel(cfg.Level)
	if err != nil {
		return logr.Discard(), func() {}, fmt.Errorf("log level: %w", err)
	}
	zc := zap.NewProductionConfig()
	if cfg.Format == "console" {
		zc = zap.NewDevelopmentConfig()
		zc.Development = false
	}
	zc.Level = zap.NewAtomicLevelAt(level)
	zc.Sampling = nil
	zc.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	zc.DisableStacktrace = true
	z, err := zc.Build()
	if err != nil {
		return logr.Discard(), func() {}, fmt.Errorf("building logger: %w", err)
	}
	return zapr.NewLogger(z), func() { _ = z.Sync() }, nil
}
