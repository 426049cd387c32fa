package main

import (
	"runtime"
	"strings"
	"testing"

	"gbdmpc/gbd/master/cbc"
	"gbdmpc/gbd/nlp/ipopt"
)

// TestVersionCommand checks both spellings print what the Makefile injected and the linked solver
// versions, and that build info fills only what -ldflags left empty.
func TestVersionCommand(t *testing.T) {
	saved := [3]string{version, commit, buildDate}
	t.Cleanup(func() { version, commit, buildDate = saved[0], saved[1], saved[2] })
	version, commit, buildDate = "1.2.3-4-gabcdef0", "abcdef0123", "2026-01-02T03:04:05Z"
	for _, arg := range []string{"version", "--version"} {
		out, _, code := runCLI(t, "", arg)
		if code != 0 {
			t.Fatalf("%s: exit %d", arg, code)
		}
		for _, want := range []string{
			"gbdmpc 1.2.3-4-gabcdef0\n", "commit:  abcdef0123\n", "built:   2026-01-02T03:04:05Z\n",
			"go:      " + runtime.Version(), "ipopt:   " + ipopt.Version() + " ", "cbc:     " + cbc.Version() + " ",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %q:\n%s", arg, want, out)
			}
		}
	}
	if v, c := buildVersion("9.9.9", "cafe"); v != "9.9.9" || c != "cafe" {
		t.Errorf("buildVersion overrode -ldflags values: %q %q", v, c)
	}
	if v, _ := buildVersion("", ""); v == "" {
		t.Error("buildVersion left the version empty")
	}
}
