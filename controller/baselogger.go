package controller

import (
	"fmt"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newBaseLogger builds the daemon's logger: JSON lines in production, for the journal and log shippers,
// human-readable console output otherwise. level is a zap level name ("debug", "info", "warn",
// "error"); empty means info. Stack traces are attached to errors only.
func newBaseLogger(production bool, level string) (*zap.Logger, error) {
	lvl := zapcore.InfoLevel
	if level != "" {
		var err error
		if lvl, err = zapcore.ParseLevel(level); err != nil {
			return nil, fmt.Errorf("log level: %w", err)
		}
	}
	cfg := zap.NewDevelopmentConfig()
	if production {
		cfg = zap.NewProductionConfig()
	}
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	return cfg.Build(zap.AddStacktrace(zapcore.ErrorLevel))
}
