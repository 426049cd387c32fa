package policy

import "testing"

// TestRatio: a share of nothing is no percentage (a held-out slice without feasibility cuts is
// not "0 % feasible"); otherwise n/d with the percentage to the precision asked.
func TestRatio(t *testing.T) {
	for _, c := range []struct {
		n, d, prec int
		want       string
	}{
		{0, 0, 1, "0/0 (—)"},
		{0, 4, 1, "0/4 (0.0%)"},
		{4, 4, 1, "4/4 (100.0%)"},
		{8, 148, 1, "8/148 (5.4%)"},
		{1, 3, 2, "1/3 (33.33%)"},
	} {
		if got := Ratio(c.n, c.d, c.prec); got != c.want {
			t.Errorf("Ratio(%d, %d, %d) = %q, want %q", c.n, c.d, c.prec, got, c.want)
		}
	}
}
