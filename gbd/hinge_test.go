package gbd

import (
	"math"
	"testing"
)

// TestFindHinges: a hinge is a variable of positive linear cost in one row of its own with
// binaries of two stages; the rows the cuts keep primal (one binary, or one stage) are not.
func TestFindHinges(t *testing.T) {
	row := func(name string, x int, alpha float64, ys []int, coef []float64, k float64) Expr {
		return Expr{Name: name, Idx: []int{x}, Coef: []float64{-alpha}, YIdx: ys, YCoef: coef, Const: k}
	}
	p := &Problem{
		NX: 7, NY: 4,
		XLo: []float64{0, 0, 0, 0, 0, 0, 0.5},
		XHi: []float64{1, 1, 1, 1, 1, 1, 3},
		Objective: Expr{
			Idx:   []int{0, 1, 2, 3, 4, 5, 6, 0},
			Coef:  []float64{1.5, 1, 1, 1, -1, 1, 2, 0.5},
			Terms: []Term{{Weight: 1, Atom: AtomSquare, Idx: []int{2}, Coef: []float64{1}}},
		},
		Ineq: []Expr{
			row("start", 0, 1, []int{1, 0}, []float64{1, -1}, 0),  // x0: a hinge (cost 2)
			row("one", 1, 1, []int{2}, []float64{1}, 0),           // x1: one binary, kept primal
			row("square", 2, 1, []int{1, 0}, []float64{1, -1}, 0), // x2: a nonlinear cost
			row("twice-a", 3, 1, []int{1, 0}, []float64{1, -1}, 0),
			row("twice-b", 3, 1, []int{2}, []float64{1}, 0),     // x3: two rows
			row("gain", 4, 1, []int{1, 0}, []float64{1, -1}, 0), // x4: a negative cost
			row("stage", 5, 1, []int{3, 2}, []float64{1, -1}, 0),
			row("scaled", 6, 2, []int{3, 0}, []float64{4, -2}, 1), // x6: α = 2, lo = 0.5
		},
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	stages := [][]int{{0}, {1}, {2, 3}}
	h := FindHinges(p, stages)
	if h == nil || len(h.Terms) != 2 || h.Terms[0].Var != 0 || h.Terms[1].Var != 6 {
		t.Fatalf("hinges %+v: want x0 and x6", h)
	}
	for r := range p.Ineq {
		if want := r == 0 || r == 7; h.HingeRow(r) != want {
			t.Errorf("HingeRow(%d) = %v, want %v", r, h.HingeRow(r), want)
		}
	}
	// Without stages the row inside stage {2, 3} is a hinge's too.
	if all := FindHinges(p, nil); all == nil || len(all.Terms) != 3 || all.Terms[1].Var != 5 {
		t.Fatalf("without stages: %+v, want x0, x5 and x6", all)
	}
	// H(y) is the exact cost above the Lagrangian's x_j = lo: 2·max(0, y1 − y0) and
	// 2·max(0.5, (4·y3 − 2·y0 + 1)/2) − 2·0.5.
	for m := range 16 {
		y := []float64{float64(m & 1), float64(m >> 1 & 1), float64(m >> 2 & 1), float64(m >> 3 & 1)}
		want := 2*math.Max(0, y[1]-y[0]) + 2*math.Max(0.5, (4*y[3]-2*y[0]+1)/2) - 2*0.5
		if got := h.Eval(y); math.Abs(got-want) > 1e-12 {
			t.Errorf("H(%v) = %g, want %g", y, got, want)
		}
	}
	if !h.Equal(FindHinges(p, stages)) || h.Equal(FindHinges(p, nil)) || h.Equal(nil) {
		t.Error("Equal: a copy must equal, other hinges and nil must not")
	}
	// A cut that carries them adds them in Eval.
	c := Cut{Coef: []float64{1, 0, 0, 0}, Const: 0.25, Hinges: h}
	y := []float64{0, 1, 0, 1}
	if got, want := c.Eval(y), 0.25+h.Eval(y); math.Abs(got-want) > 1e-12 {
		t.Errorf("Cut.Eval = %g, want %g", got, want)
	}
}
