// Package knob sets how much a test does: less under -short, or what a GBDMPC_* environment
// variable asks for in a measurement run. It imports nothing of gbdmpc, so any package's
// internal tests can use it.
package knob

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Size is full, or short under -short.
func Size(full, short int) int {
	if testing.Short() {
		return short
	}
	return full
}

// Env is the integer in environment variable name, def when it is unset or empty; a value that is
// not an integer ≥ least fails the test.
func Env(t testing.TB, name string, def, least int) int {
	t.Helper()
	s, ok := os.LookupEnv(name)
	if !ok || s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < least {
		t.Fatalf("%s=%q: want an integer ≥ %d", name, s, least)
	}
	return n
}

// Measurement skips a test that is a measurement rather than a check of the default suite unless
// environment variable name is set.
func Measurement(t testing.TB, name string) {
	t.Helper()
	if os.Getenv(name) == "" {
		t.Skipf("measurement: set %s=1", name)
	}
}

// Durations is the comma-separated list of positive durations in environment variable name, def
// when it is unset or empty; anything else fails the test.
func Durations(t testing.TB, name string, def ...time.Duration) []time.Duration {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	var ds []time.Duration
	for _, f := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want positive durations separated by commas", name, s)
		}
		ds = append(ds, d)
	}
	return ds
}
