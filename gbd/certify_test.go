package gbd_test

import (
	"strings"
	"testing"

	"gbdmpc/gbd"
	"gbdmpc/plant/synthesis"
)

// An invalid cut must never end in a certified answer. Both tests inject one as a carried cut (the
// only way a cut enters the engine from outside) and expect StatusFailed with the reason, the
// incumbent kept as a feasible point.

// TestInvalidOptimalityCutFailsTheSolve: a cut μ_B ≥ Z* + 10 for every y lifts LBD above every
// incumbent. Before, the engine clamped LBD to UBD silently and reported optimal.
func TestInvalidOptimalityCutFailsTheSolve(t *testing.T) {
	p := synthesis.Problem(faultInstance)
	ypb := synthesis.Admissible()
	for name, mk := range masters() {
		ref, err := (&gbd.Engine{Master: mk()}).Solve(p, ypb, gbd.Settings{})
		if err != nil || ref.Status != gbd.StatusOptimal {
			t.Fatalf("%s: reference solve: %v %v", name, err, ref)
		}
		bad := gbd.Cut{Kind: gbd.OptimalityCut, Coef: make([]float64, p.NY), Const: ref.Objective + 10}
		r, err := (&gbd.Engine{Master: mk()}).Solve(p, ypb, gbd.Settings{Cuts: []gbd.Cut{bad}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if r.Status != gbd.StatusFailed || !strings.Contains(r.Message, "cut is invalid") {
			t.Fatalf("%s: status %v %q, want failed naming the invalid cut", name, r.Status, r.Message)
		}
		if r.Crossing < 9 || r.Crossing > 10+1e-6 {
			t.Errorf("%s: crossing %g, want about 10 (or less, once UBD is above Z*)", name, r.Crossing)
		}
		if r.Y == nil || r.LBD > r.UBD {
			t.Errorf("%s: incumbent %v, LBD %g UBD %g: want the feasible incumbent and LBD ≤ UBD", name, r.Y, r.LBD, r.UBD)
		}
	}
}

// TestInvalidFeasibilityCutFailsTheSolve: a feasibility cut 1 ≤ 0 excludes every assignment, the
// incumbent's too. Before, "master infeasible with an incumbent" was reported optimal.
func TestInvalidFeasibilityCutFailsTheSolve(t *testing.T) {
	p := synthesis.Problem(faultInstance)
	ypb := synthesis.Admissible()
	y0 := feasibleY(t)
	for name, mk := range masters() {
		bad := gbd.Cut{Kind: gbd.FeasibilityCut, Coef: make([]float64, p.NY), Const: 1}
		r, err := (&gbd.Engine{Master: mk()}).Solve(p, ypb, gbd.Settings{Y0: y0, Cuts: []gbd.Cut{bad}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if r.Status != gbd.StatusFailed || !strings.Contains(r.Message, "feasibility cut is invalid") {
			t.Fatalf("%s: status %v %q, want failed naming the invalid feasibility cut", name, r.Status, r.Message)
		}
		if r.Y == nil {
			t.Errorf("%s: the feasible incumbent was dropped", name)
		}
	}
}
