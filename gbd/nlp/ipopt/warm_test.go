package ipopt

import (
	"math"
	"testing"
)

// TestWarmStartFromSolution restarts from a converged point with its multipliers: with the small
// warm-start pushes Solve sets, Ipopt should recognise the solution almost at once.
func TestWarmStartFromSolution(t *testing.T) {
	for _, mono := range []bool{false, true} {
		p := newSynthesis(synthesisY).problem()
		cold, err := Solve(p, synthesisX0, nil, Options{MonotoneMu: mono})
		if err != nil || cold.Status != Solved {
			t.Fatalf("cold: %v %v", cold.Status, err)
		}
		ws := &WarmStart{MultG: cold.MultG, MultXL: cold.MultXL, MultXU: cold.MultXU}
		warm, err := Solve(p, cold.X, ws, Options{MonotoneMu: mono, WarmStart: true})
		if err != nil || warm.Status != Solved {
			t.Fatalf("warm: %v %v", warm.Status, err)
		}
		t.Logf("monotone=%v: cold %d iterations, warm %d", mono, cold.Iterations, warm.Iterations)
		if warm.Iterations >= cold.Iterations {
			t.Errorf("monotone=%v: warm start took %d iterations, cold %d", mono, warm.Iterations, cold.Iterations)
		}
		if !near(warm.Obj, cold.Obj, 1e-8) {
			t.Errorf("warm Obj %.12g, cold %.12g", warm.Obj, cold.Obj)
		}
		checkKKT(t, p, warm, 1e-6)
		// The warm start input must not be modified: Solve writes into its own slices.
		if &ws.MultG[0] == &warm.MultG[0] {
			t.Error("Result aliases the WarmStart slices")
		}
	}
}

// TestWarmStartWithoutConstraints covers M == 0, where Ipopt still needs a non-NULL mult_g.
func TestWarmStartWithoutConstraints(t *testing.T) {
	p := boxQuad()
	cold, err := Solve(p, []float64{1, 0}, nil, Options{})
	if err != nil || cold.Status != Solved {
		t.Fatalf("cold: %v %v", cold.Status, err)
	}
	ws := &WarmStart{MultXL: cold.MultXL, MultXU: cold.MultXU}
	warm, err := Solve(p, cold.X, ws, Options{WarmStart: true})
	if err != nil || warm.Status != Solved {
		t.Fatalf("warm: %v %v", warm.Status, err)
	}
	if warm.Iterations >= cold.Iterations {
		t.Errorf("warm start took %d iterations, cold %d", warm.Iterations, cold.Iterations)
	}
	checkVec(t, "MultXL", warm.MultXL, []float64{2, 0}, 1e-6)
	checkVec(t, "MultXU", warm.MultXU, []float64{0, 2}, 1e-6)
}

// TestWarmStartIgnoredWhenOff checks that multipliers are only read with Options.WarmStart.
func TestWarmStartIgnoredWhenOff(t *testing.T) {
	p := expSum()
	bad := &WarmStart{MultG: []float64{math.NaN()}}
	r, err := Solve(p, []float64{2, 2}, bad, Options{})
	if err != nil || r.Status != Solved {
		t.Fatalf("%v %v", r.Status, err)
	}
}
