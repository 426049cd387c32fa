package policy

import (
	"path/filepath"
	"strings"
	"testing"

	"gbdmpc/gbd"
	"gbdmpc/gbd/agent"
)

// TestResolve: the empty spec is classical GBD, a built-in name gives that policy with the spec as
// its version, an unknown built-in and a missing or wrong file are refused with the reason.
func TestResolve(t *testing.T) {
	ypb, err := gbd.EnumerateAdmissible(3, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p, v, err := Resolve("", 1, "synthesis", ypb); p != nil || v != "" || err != nil {
		t.Errorf(`"": %v %q %v`, p, v, err)
	}
	if p, v, err := Resolve(agent.BuiltinPrefix+"random", 7, "synthesis", ypb); p == nil || v != "builtin:random" || err != nil {
		t.Errorf("builtin:random: %v %q %v", p, v, err)
	}
	if _, _, err := Resolve(agent.BuiltinPrefix+"nope", 1, "synthesis", ypb); err == nil {
		t.Error("an unknown built-in was accepted")
	}
	missing := filepath.Join(t.TempDir(), "none.policy")
	if _, _, err := Resolve(missing, 1, "synthesis", ypb); err == nil || !strings.Contains(err.Error(), "none.policy") {
		t.Errorf("a missing file: %v", err)
	}
}
