package cbc

import (
	"regexp"
	"testing"
)

// The loaded library must report a dotted version, the form `gbdmpc version` prints.
func TestVersion(t *testing.T) {
	if v := Version(); !regexp.MustCompile(`^\d+\.\d+(\.\d+)?`).MatchString(v) {
		t.Fatalf("Cbc_getVersion = %q, want a dotted version", v)
	}
}
