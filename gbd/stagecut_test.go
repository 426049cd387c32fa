package gbd

import (
	"errors"
	"testing"
)

// TestStageCutterNeedsASplit: a Y_pb without stages, and a problem whose objective couples the
// variables of two stages by a nonlinear term, make no stage cutter; a problem that splits does,
// and its cut of zero multipliers is the sum of the stages' own minima (tables of the minima per
// pattern above the affine part).
func TestStageCutterNeedsASplit(t *testing.T) {
	// x0 gated by y0 (stage 0), x1 gated by y1 (stage 1): min (x0−1)² + (x1−2)² + x0 + x1 with
	// 0 ≤ x_i ≤ 3·y_i.
	p := &Problem{
		Name: "two stages", NX: 2, XLo: []float64{0, 0}, XHi: []float64{3, 3}, NY: 2,
		Objective: Expr{
			Terms: []Term{{Weight: 1, Atom: AtomSquare, Idx: []int{0}, Coef: []float64{1}, Shift: -1},
				{Weight: 1, Atom: AtomSquare, Idx: []int{1}, Coef: []float64{1}, Shift: -2}},
			Idx: []int{0, 1}, Coef: []float64{1, 1},
		},
		Ineq: []Expr{
			{Idx: []int{0}, Coef: []float64{1}, YIdx: []int{0}, YCoef: []float64{-3}},
			{Idx: []int{1}, Coef: []float64{1}, YIdx: []int{1}, YCoef: []float64{-3}},
		},
	}
	if _, err := NewStageCutter(p, &Admissible{NY: 2}); err == nil {
		t.Error("a Y_pb without stages gave a stage cutter")
	}
	staged := &Admissible{NY: 2, Stages: [][]int{{0}, {1}}}
	sc, err := NewStageCutter(p, staged)
	if err != nil {
		t.Fatal(err)
	}
	c, err := sc.Cut(CutDuals{Mu: make([]float64, 2), Lam: nil})
	if err != nil {
		t.Fatal(err)
	}
	// Stage 0: off 1 (x0 = 0), on min (x0−1)²+x0 = 0.75 at x0 = 0.5; stage 1: off 4, on 1.75.
	want := map[[2]float64]float64{{0, 0}: 5, {1, 0}: 4.75, {0, 1}: 2.75, {1, 1}: 2.5}
	for y, v := range want {
		if got := c.Eval(y[:]); got < v-1e-9 || got > v+1e-9 {
			t.Errorf("cut at %v = %.12g, want %g", y, got, v)
		}
	}
	q := *p
	q.Objective.Terms = append(q.Objective.Terms, Term{Weight: 1, Atom: AtomSquare, Idx: []int{0, 1}, Coef: []float64{1, -1}})
	if _, err := NewStageCutter(&q, staged); err == nil {
		t.Error("an objective term over two stages gave a stage cutter")
	}
	if _, err := sc.Cut(CutDuals{Mu: make([]float64, 1)}); !errors.Is(err, ErrDualsMismatch) {
		t.Errorf("wrong-sized multipliers: %v", err)
	}
}
