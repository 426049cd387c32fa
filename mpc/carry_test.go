package mpc

import (
	"math"
	"testing"

	"gbdmpc/gbd"
)

// TestCarryCuts: by default the second step starts with the first step's cuts re-evaluated for
// its own problem (the toy family has no DualShifter: multipliers as stored), and reaches the same
// optimum as a controller with NoCarry, which starts every step without cuts.
func TestCarryCuts(t *testing.T) {
	carry, err := NewController(newToy(t), Options{Settings: gbd.Settings{Eps: 1e-9}})
	if err != nil {
		t.Fatal(err)
	}
	scratch, err := NewController(newToy(t), Options{Settings: gbd.Settings{Eps: 1e-9}, NoCarry: true})
	if err != nil {
		t.Fatal(err)
	}
	for k, a := range []float64{4, 0.5, 6, 3} {
		dc, err := carry.Step(toyMeas(a), far())
		if err != nil {
			t.Fatal(err)
		}
		ds, err := scratch.Step(toyMeas(a), far())
		if err != nil {
			t.Fatal(err)
		}
		if ds.Carry != (gbd.CarryStats{}) || ds.Result == nil || countCarried(ds.Result) != 0 {
			t.Errorf("step %d: NoCarry carried %+v", k, ds.Carry)
		}
		if k > 0 && (dc.Carry.Carried == 0 || countCarried(dc.Result) != dc.Carry.Carried) {
			t.Errorf("step %d: carried %+v, the solve started with %d carried cuts", k, dc.Carry, countCarried(dc.Result))
		}
		if math.Abs(dc.Objective-ds.Objective) > 1e-6*(1+math.Abs(ds.Objective)) {
			t.Errorf("step %d (a=%g): objective %g with carried cuts, %g without", k, a, dc.Objective, ds.Objective)
		}
		// Every carried cut is a valid lower bound at the optimum.
		for _, c := range dc.Result.Cuts {
			if c.Carried && c.Kind == gbd.OptimalityCut && c.Eval(dc.Y) > dc.Objective+1e-9 {
				t.Errorf("step %d: carried cut %g above the optimum %g", k, c.Eval(dc.Y), dc.Objective)
			}
		}
	}
	if _, err := NewController(newToy(t), Options{CarryPool: -1}); err == nil {
		t.Error("negative CarryPool accepted")
	}
}

func countCarried(r *gbd.Result) int {
	n := 0
	for _, c := range r.Cuts {
		if c.Carried {
			n++
		}
	}
	return n
}
