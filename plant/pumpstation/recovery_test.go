package pumpstation

import (
	"testing"

	"gbdmpc/gbd"
)

// TestRecoveryFromOutsideTheLimits: a measured level outside [1, 5] (after a fault or fallback)
// must still give a solvable MINLP whose plan heads back inside, not an infeasible one that would
// keep the controller on fallbacks while the tank runs dry or overflows.
func TestRecoveryFromOutsideTheLimits(t *testing.T) {
	c := DefaultConfig()
	ypb, err := Admissible(&c)
	if err != nil {
		t.Fatal(err)
	}
	demand := make([]float64, c.Horizon)
	price := make([]float64, c.Horizon)
	for i := range demand {
		demand[i], price[i] = 120, 0.2
	}
	for _, h0 := range []float64{0, 0.4, 5.6} {
		in := Instance{V: 1, Level: h0, PumpsOn: []int{0, 0, 0}, Demand: demand, Price: price}
		if err := in.Validate(&c); err != nil {
			t.Fatal(err)
		}
		p := Problem(&c, &in)
		r, err := (&gbd.Engine{}).Solve(p, ypb, gbd.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != gbd.StatusOptimal {
			t.Fatalf("h0 = %g: status %s (%s), want a recovery plan", h0, r.Status, r.Message)
		}
		h1 := r.X[c.HIndex(1)]
		hN := r.X[c.HIndex(c.Horizon)]
		if (h0 < c.LevelMin && !(h1 > h0 && hN >= c.LevelMin-1e-6)) || (h0 > c.LevelMax && !(h1 < h0 && hN <= c.LevelMax+1e-6)) {
			t.Errorf("h0 = %g: plan goes to h[1] = %g, h[N] = %g", h0, h1, hN)
		}
	}
	// Inside the limits nothing changes: the rows are the spec's 1 ≤ h ≤ 5.
	lo, hi := levelBand(&c, &Instance{Level: 3, Demand: demand})
	for i, v := range lo {
		if v != c.LevelMin || hi[i] != c.LevelMax {
			t.Fatalf("step %d: band [%g, %g] from a level inside the limits", i+1, v, hi[i])
		}
	}
}
