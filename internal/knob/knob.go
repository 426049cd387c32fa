// Package knob sets how much a test does: less under -short, or what a GBDMPC_* environment
// variable asks for in a measurement run. It imports nothing of gbdmpc, so any package's
// internal tests can use it.
package knob

import (
	"os"
	"strconv"
	"testing"
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
