package controller

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap"
)

// TestLoggerSamplesRepeatedLines: a burst of one repeated warning (a junk flood's rejections)
// writes its first lines and then a sample, in both formats, while a different line still gets
// through.
func TestLoggerSamplesRepeatedLines(t *testing.T) {
	for _, production := range []bool{false, true} {
		cfg, err := baseLoggerConfig(production, "info")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "log")
		cfg.OutputPaths = []string{path}
		log, err := cfg.Build()
		if err != nil {
			t.Fatal(err)
		}
		const burst = 5000
		for range burst {
			log.Warn("measurement rejected", zap.String("reason", "malformed"))
		}
		log.Warn("fallback")
		log.Sync()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Count(b, []byte("measurement rejected"))
		// The burst may straddle a one-second tick: at most two seconds' worth.
		if max := 2 * (logSampleFirst + burst/logSampleThereafter); lines > max || lines < logSampleFirst {
			t.Errorf("production=%v: %d of %d repeated warnings written (want %d..%d)", production, lines, burst, logSampleFirst, max)
		}
		if !bytes.Contains(b, []byte("fallback")) {
			t.Errorf("production=%v: the other line was dropped", production)
		}
	}
}
