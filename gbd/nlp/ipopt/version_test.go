package ipopt

import (
	"regexp"
	"testing"
)

func TestVersion(t *testing.T) {
	if v := Version(); !regexp.MustCompile(`^3\.\d+\.\d+$`).MatchString(v) {
		t.Fatalf("IPOPT_VERSION = %q, want 3.x.y", v)
	}
}
