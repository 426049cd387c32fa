package policy

import (
	"math"
	"math/rand/v2"
	"testing"

	"gbdmpc/gbd"
)

// TestLabellerIsTheExactMaster: along growing masters of several solves, in an interleaved order
// that defeats the prefix reuse, every label is the brute-force argmin over Y_pb of the largest
// optimality cut subject to the feasibility cuts (ties to the earliest), and it does not depend on
// whether the labeller reused its master.
func TestLabellerIsTheExactMaster(t *testing.T) {
	ypb, err := gbd.EnumerateAdmissible(6, []gbd.PureRow{{Idx: []int{0, 1, 2, 3, 4, 5}, Coef: []float64{1, 1, 1, 1, 1, 1}, RHS: 4}}, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	cut := func(kind gbd.CutKind) gbd.Cut {
		c := gbd.Cut{Kind: kind, Coef: make([]float64, ypb.NY), Const: rng.NormFloat64()}
		for i := range c.Coef {
			c.Coef[i] = rng.NormFloat64()
		}
		if kind == gbd.FeasibilityCut {
			c.Const = -math.Abs(c.Const) - 0.5 // leaves part of Y_pb feasible
		}
		return c
	}
	brute := func(cuts []gbd.Cut) (int, bool) {
		best, bestV := -1, math.Inf(1)
		y := make([]float64, ypb.NY)
		for j := range ypb.Count() {
			ypb.Float(j, y)
			v, ok := math.Inf(-1), true
			for k := range cuts {
				e := cuts[k].Eval(y)
				if cuts[k].Kind == gbd.FeasibilityCut {
					ok = ok && e <= gbd.FeasTol
				} else {
					v = max(v, e)
				}
			}
			if ok && v < bestV {
				best, bestV = j, v
			}
		}
		return best, best >= 0
	}
	solves := make([][]gbd.Cut, 3)
	var reused, fresh Labeller
	for step := range 60 {
		s := rng.IntN(len(solves))
		kind := gbd.OptimalityCut
		if rng.IntN(4) == 0 {
			kind = gbd.FeasibilityCut
		}
		solves[s] = append(solves[s], cut(kind))
		want, wantOK := brute(solves[s])
		got, _, ok := reused.Label(s, solves[s], ypb)
		fresh = Labeller{}
		again, _, okAgain := fresh.Label(s, solves[s], ypb)
		if ok != wantOK || got != want || again != got || okAgain != ok {
			t.Fatalf("step %d solve %d: label %d (%v), fresh %d (%v), brute force %d (%v)", step, s, got, ok, again, okAgain, want, wantOK)
		}
	}
}
