package knob

import (
	"slices"
	"testing"
	"time"
)

func TestEnv(t *testing.T) {
	t.Setenv("GBDMPC_KNOB_TEST", "")
	if n := Env(t, "GBDMPC_KNOB_TEST", 7, 1); n != 7 {
		t.Errorf("unset: %d, want the default 7", n)
	}
	t.Setenv("GBDMPC_KNOB_TEST", "12")
	if n := Env(t, "GBDMPC_KNOB_TEST", 7, 1); n != 12 {
		t.Errorf("12: got %d", n)
	}
	if n := Size(40, 8); testing.Short() != (n == 8) {
		t.Errorf("Size(40, 8) = %d with -short %v", n, testing.Short())
	}
}

func TestDurations(t *testing.T) {
	t.Setenv("GBDMPC_KNOB_TEST", "")
	if d := Durations(t, "GBDMPC_KNOB_TEST", time.Second); !slices.Equal(d, []time.Duration{time.Second}) {
		t.Errorf("unset: %v, want the default", d)
	}
	t.Setenv("GBDMPC_KNOB_TEST", "150ms, 2s")
	if d := Durations(t, "GBDMPC_KNOB_TEST"); !slices.Equal(d, []time.Duration{150 * time.Millisecond, 2 * time.Second}) {
		t.Errorf("150ms, 2s: got %v", d)
	}
}
