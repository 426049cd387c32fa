package knob

import "testing"

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
