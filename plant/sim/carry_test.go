package sim

import (
	"math"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/internal/knob"
	"gbdmpc/mpc"
	"gbdmpc/plant/pumpstation"
)

// TestCarriedCutsKeepOptimum closes the loop with carried cuts (the controller's default) and
// solves every step's measurement again from scratch: the objectives agree to 1e-6 relative, so
// carrying cuts changes how fast GBD certifies a step, never what it returns.
func TestCarriedCutsKeepOptimum(t *testing.T) {
	steps := knob.Size(10, 6)
	cfg := DefaultConfig()
	plant, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fam, err := pumpstation.NewFamily(cfg.Plant)
	if err != nil {
		t.Fatal(err)
	}
	// A tight ε, so that both solves end at the optimum rather than anywhere within 1e-3 of it.
	set := gbd.Settings{Eps: 1e-7}
	ctrl, err := mpc.NewController(fam, mpc.Options{Settings: set})
	if err != nil {
		t.Fatal(err)
	}
	pc := fam.Config()
	itCarry, itScratch := 0, 0
	for k := range steps {
		m, err := fam.DecodeMeasurement(plant.Measurement())
		if err != nil {
			t.Fatal(err)
		}
		d, err := ctrl.Step(m, time.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if d.Status == mpc.StatusFallback {
			t.Fatalf("step %d: fallback (%s)", k, d.Reason)
		}
		if k > 0 && d.Carry.Carried == 0 {
			t.Errorf("step %d: no cut carried (%+v)", k, d.Carry)
		}
		p, err := m.Problem()
		if err != nil {
			t.Fatal(err)
		}
		r, err := (&gbd.Engine{Master: &enum.Master{}}).Solve(p, fam.Admissible(), set)
		if err != nil {
			t.Fatal(err)
		}
		if r.Y == nil {
			t.Fatalf("step %d: the from-scratch solve ended %v", k, r.Status)
		}
		if math.Abs(d.Objective-r.Objective) > 1e-6*math.Abs(r.Objective) {
			t.Errorf("step %d: objective %.10g with %d carried cuts, %.10g from scratch", k, d.Objective, d.Carry.Carried, r.Objective)
		}
		if d.LBD > r.Objective+1e-6*math.Abs(r.Objective) {
			t.Errorf("step %d: lower bound %.10g above the optimum %.10g", k, d.LBD, r.Objective)
		}
		itCarry += d.Iterations
		itScratch += r.Iterations
		act, err := pumpstation.DecodeApply(d.Apply, &pc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := plant.Step(act.PumpsOn, act.Flow); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d steps: %d GBD iterations with carried cuts, %d from scratch", steps, itCarry, itScratch)
	if itCarry >= itScratch {
		t.Errorf("carried cuts did not save iterations: %d vs %d from scratch", itCarry, itScratch)
	}
}
