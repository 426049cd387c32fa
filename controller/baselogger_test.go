package controller

import (
	"testing"

	"go.uber.org/zap/zapcore"
)

func TestNewBaseLogger(t *testing.T) {
	for _, tc := range []struct {
		production bool
		level      string
		want       zapcore.Level
	}{
		{true, "", zapcore.InfoLevel},
		{true, "warn", zapcore.WarnLevel},
		{false, "debug", zapcore.DebugLevel},
	} {
		l, err := newBaseLogger(tc.production, tc.level)
		if err != nil {
			t.Fatalf("newBaseLogger(%v, %q): %v", tc.production, tc.level, err)
		}
		if !l.Core().Enabled(tc.want) || tc.want > zapcore.DebugLevel && l.Core().Enabled(tc.want-1) {
			t.Errorf("newBaseLogger(%v, %q) is not at level %v", tc.production, tc.level, tc.want)
		}
	}
	if _, err := newBaseLogger(true, "loud"); err == nil {
		t.Error("an unknown level was accepted")
	}
}
