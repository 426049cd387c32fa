package pumpstation

import (
	"testing"
	"time"

	"gbdmpc/mpc"
)

// stepFresh runs the first step of a new controller (default options, no deadline) on in.
func stepFresh(t *testing.T, fam *Family, in Instance) (*mpc.Controller, mpc.Decision, error) {
	t.Helper()
	m, err := fam.Measure(in)
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := mpc.NewController(fam, mpc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := ctl.Step(m, time.Time{})
	return ctl, d, err
}

// TestRecoveryFromOutsideTheLimits: a measured level outside [1, 5] (after a fault or fallback)
// gets a plan that heads back inside, never a fallback that would leave the tank to run dry or
// overflow. Where no plan can be back inside by the end of the first step, the hard problem is
// infeasible and the plan is the soft problem's, marked relaxed; where one can, the hard problem
// holds the spec's limits from the first step on.
func TestRecoveryFromOutsideTheLimits(t *testing.T) {
	fam, c := specFamily(t)
	for _, tc := range []struct {
		h0      float64
		relaxed bool
	}{{0, true}, {0.3, true}, {0.9, false}, {5.9, true}, {5.5, false}} {
		ctl, d, err := stepFresh(t, fam, constant(&c, tc.h0, 120, []int{0, 0, 0}))
		if err != nil || d.Status == mpc.StatusFallback {
			t.Fatalf("h0 = %g: %v, status %s (%s)", tc.h0, err, d.Status, d.Reason)
		}
		if (d.Relaxed != nil) != tc.relaxed {
			t.Errorf("h0 = %g: relaxed %+v, want relaxed %v", tc.h0, d.Relaxed, tc.relaxed)
		}
		pl := ctl.Plan().(*Plan)
		h1, hN := pl.Level[0], pl.Level[c.Horizon-1]
		if (tc.h0 < c.LevelMin && !(h1 > tc.h0 && hN >= c.LevelMin-1e-6)) || (tc.h0 > c.LevelMax && !(h1 < tc.h0 && hN <= c.LevelMax+1e-6)) {
			t.Errorf("h0 = %g: plan goes to h[1] = %g, h[N] = %g", tc.h0, h1, hN)
		}
		if d.Relaxed != nil && d.Relaxed.FirstStep != 0 {
			t.Errorf("h0 = %g: the first violation is at plan step %d, want 0", tc.h0, d.Relaxed.FirstStep)
		}
		if d.Relaxed != nil {
			t.Logf("h0 = %g: %s (%s)", tc.h0, d.Relaxed.Shortfall, d.Relaxed.Proof)
		}
	}
}
