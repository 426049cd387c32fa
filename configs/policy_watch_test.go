package configs

import (
	"testing"
	"time"
)

// policy_watch defaults to DefaultPolicyWatch when absent, while an explicit 0 (no watch) survives
// the defaults.
func TestPolicyWatchDefaultAndOff(t *testing.T) {
	c, err := Load(Source{File: "testdata/good/minimal.yaml", NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.PolicyWatch != DefaultPolicyWatch {
		t.Errorf("policy_watch = %v, want the default %v", c.PolicyWatch, DefaultPolicyWatch)
	}
	for _, tc := range []struct {
		set  any
		want time.Duration
	}{{"0s", 0}, {"500ms", 500 * time.Millisecond}} {
		c, err := Load(Source{File: "testdata/good/minimal.yaml", NoEnv: true, Overrides: map[string]any{"policy_watch": tc.set}})
		if err != nil {
			t.Fatal(err)
		}
		if c.PolicyWatch != tc.want {
			t.Errorf("policy_watch %v read as %v", tc.set, c.PolicyWatch)
		}
	}
}
