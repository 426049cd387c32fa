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
	cfg, err := baseLoggerConfig(production, level)
	if err != nil {
		return nil, err
	}
	return cfg.Build(zap.AddStacktrace(zapcore.ErrorLevel))
}

// logSampling is how much of a repeated line the daemon writes: per second, per level and
// message, the first logSampleFirst entries and then every logSampleThereafter-th. A plant whose
// topic is flooded with junk (thousands of rejections a second) would otherwise fill the journal
// and hold every other loop at the logger's lock; the counters (gbdmpc_rejected_total) and the
// error topic still see every rejection.
const (
	logSampleFirst      = 100
	logSampleThereafter = 100
)

func baseLoggerConfig(production bool, level string) (zap.Config, error) {
	lvl := zapcore.InfoLevel
	if level != "" {
		var err error
		if lvl, err = zapcore.ParseLevel(level); err != nil {
			return zap.Config{}, fmt.Errorf("log level: %w", err)
		}
	}
	cfg := zap.NewDevelopmentConfig()
	if production {
		cfg = zap.NewProductionConfig()
	}
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.Sampling = &zap.SamplingConfig{Initial: logSampleFirst, Thereafter: logSampleThereafter}
	return cfg, nil
}
