package ipm_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"gbdmpc/gbd"
	"gbdmpc/gbd/nlp"
	"gbdmpc/gbd/nlp/ipm"
	"gbdmpc/plant/synthesis"
)

// The solver's own tests build their NLPs the way the engine does, with gbd's compiler
// (gbd.Subproblems.Compiled); gbd/nlp/nlpsuite compares them with Ipopt's on thousands more.

// sq is w·(x_j − c)², one Square term.
func sq(j int, w, c float64) gbd.Term {
	return gbd.Term{Weight: w, Atom: gbd.AtomSquare, Idx: []int{j}, Coef: []float64{1}, Shift: -c}
}

// compile is S(p) for its one binary at 0 (the problems here do not use it), with the engine's
// starting point.
func compile(t *testing.T, p *gbd.Problem) (*nlp.Problem, []float64) {
	t.Helper()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	q, x0, ok := gbd.NewSubproblems(p, nil, nlp.Options{}).Compiled([]float64{0}, false)
	if !ok {
		t.Fatal("bounds cross")
	}
	return q, x0
}

// kktOK checks stationarity, bounds and row feasibility of a Solved result to tol, directly from
// the problem's functions (not from the solver's own residuals).
func kktOK(t *testing.T, p *nlp.Problem, r nlp.Result, tol float64) {
	t.Helper()
	gr := make([]float64, p.N)
	p.Eval.Gradient(r.X, gr)
	jv := make([]float64, len(p.JacRow))
	p.Eval.Jacobian(r.X, jv)
	for k := range jv {
		gr[p.JacCol[k]] += jv[k] * r.MultG[p.JacRow[k]]
	}
	for j := range p.N {
		if d := gr[j] - r.MultXL[j] + r.MultXU[j]; math.Abs(d) > tol {
			t.Errorf("stationarity of x%d: %g", j, d)
		}
		if r.X[j] < p.XL[j]-tol || r.X[j] > p.XU[j]+tol || r.MultXL[j] < -tol || r.MultXU[j] < -tol {
			t.Errorf("x%d = %g outside [%g, %g] or multipliers %g %g negative", j, r.X[j], p.XL[j], p.XU[j], r.MultXL[j], r.MultXU[j])
		}
	}
	g := make([]float64, p.M)
	p.Eval.Constraints(r.X, g)
	for i := range p.M {
		if g[i] < p.GL[i]-tol || g[i] > p.GU[i]+tol {
			t.Errorf("row %d = %g outside [%g, %g]", i, g[i], p.GL[i], p.GU[i])
		}
	}
}

// TestEdgeCases: fixed and free variables, an active nonlinear row, a penalty variable with a
// tiny row coefficient, an infeasible problem, an unbounded one, the stop hook and bad options
// each end in their documented status.
func TestEdgeCases(t *testing.T) {
	inf := math.Inf(1)
	// min (x0−3)² + (x1+1)² + e^{x2} − x2 + x3 s.t. x0 + x1 ≤ 1, e^{x0} − x3 ≤ 2, x2 free, x3
	// fixed at 2 (so the second row is e^{x0} ≤ 4; with two variables it stays a row).
	base := func() *gbd.Problem {
		return &gbd.Problem{
			NX: 4, XLo: []float64{0, -5, -inf, 2}, XHi: []float64{10, 5, inf, 2}, NY: 1,
			Objective: gbd.Expr{Terms: []gbd.Term{sq(0, 1, 3), sq(1, 1, -1),
				{Weight: 1, Atom: gbd.AtomExp, Idx: []int{2}, Coef: []float64{1}}}, Idx: []int{2, 3}, Coef: []float64{-1, 1}},
			Ineq: []gbd.Expr{
				{Idx: []int{0, 1}, Coef: []float64{1, 1}, Const: -1},
				{Terms: []gbd.Term{{Weight: 1, Atom: gbd.AtomExp, Idx: []int{0}, Coef: []float64{1}}}, Idx: []int{3}, Coef: []float64{-1}, Const: -2},
			},
		}
	}
	s := ipm.New()
	t.Run("solved", func(t *testing.T) {
		p, x0 := compile(t, base())
		if p.M != 2 {
			t.Fatalf("%d rows compiled, want 2", p.M)
		}
		r, err := s.Solve(p, x0, nlp.Options{})
		if err != nil || r.Status != nlp.Solved {
			t.Fatalf("%v %v %s", r.Status, err, r.Message)
		}
		kktOK(t, p, r, 1e-8)
		// x2 free: e^{x2} = 1 → 0; x3 fixed; the optimum of the rest is x0 = ln 4 (row 1 active).
		if math.Abs(r.X[2]) > 1e-7 || r.X[3] != 2 || math.Abs(r.X[0]-math.Log(4)) > 1e-7 {
			t.Errorf("x = %v", r.X)
		}
		if math.Abs(r.MultG[1]) <= 1e-3 {
			t.Errorf("active row's multiplier %g", r.MultG[1])
		}
	})
	t.Run("penalty priced in currency", func(t *testing.T) {
		// min (x0−3)² + w s.t. x0 + 1e-7·w ≥ 5, x0 ∈ [0, 4], w ∈ [0, 1e9]: the shape of the pump
		// station's soft problem (a penalty in € carried by its row with a tiny coefficient). A
		// unit of row costs 1e7 through w and 2 through x0, so x0 = 4, w = 1e7, the row's
		// multiplier is 1e7 and the objective 1 + 1e7. Unscaled, that multiplier is above the
		// elastic penalty; w is rescaled to the row's units (colScale).
		p, _ := compile(t, &gbd.Problem{
			NX: 2, XLo: []float64{0, 0}, XHi: []float64{4, 1e9}, NY: 1,
			Objective: gbd.Expr{Terms: []gbd.Term{sq(0, 1, 3)}, Idx: []int{1}, Coef: []float64{1}},
			Ineq:      []gbd.Expr{{Idx: []int{0, 1}, Coef: []float64{-1, -1e-7}, Const: 5}},
		})
		r, err := s.Solve(p, []float64{1, 0}, nlp.Options{})
		if err != nil || r.Status != nlp.Solved {
			t.Fatalf("%v %v %s", r.Status, err, r.Message)
		}
		if math.Abs(r.Obj-(1+1e7)) > 1e-9*1e7 || math.Abs(r.X[0]-4) > 1e-9 || math.Abs(r.X[1]-1e7) > 1e-9*1e7 {
			t.Errorf("x = %v, objective %.12g", r.X, r.Obj)
		}
		if math.Abs(math.Abs(r.MultG[0])-1e7) > 1e-6*1e7 {
			t.Errorf("row multiplier %g, want 1e7", r.MultG[0])
		}
		kktOK(t, p, r, 1e-7*1e7)
		if a := testing.AllocsPerRun(10, func() { s.Solve(p, []float64{1, 0}, nlp.Options{}) }); a != 0 {
			t.Errorf("%v allocations per solve of a rescaled problem", a)
		}
	})
	t.Run("infeasible", func(t *testing.T) {
		b := base()
		b.Ineq[0] = gbd.Expr{Idx: []int{0, 1}, Coef: []float64{-1, -1}, Const: 20} // x0 + x1 ≥ 20, but x0 ≤ 10, x1 ≤ 5
		p, x0 := compile(t, b)
		r, err := s.Solve(p, x0, nlp.Options{})
		if err != nil || r.Status != nlp.Infeasible {
			t.Fatalf("%v %v %s", r.Status, err, r.Message)
		}
	})
	t.Run("unbounded", func(t *testing.T) {
		p, _ := compile(t, &gbd.Problem{NX: 1, XLo: []float64{-inf}, XHi: []float64{inf}, NY: 1,
			Objective: gbd.Expr{Idx: []int{0}, Coef: []float64{1}}})
		r, err := s.Solve(p, []float64{0}, nlp.Options{})
		// A linear objective over a free variable: the KKT residual cannot fall, so the solve ends
		// failed at once (or unbounded, had x grown past bigX first); never solved.
		if err != nil || (r.Status != nlp.Unbounded && r.Status != nlp.Failed) {
			t.Fatalf("%v %v %s", r.Status, err, r.Message)
		}
	})
	t.Run("stopped", func(t *testing.T) {
		p, x0 := compile(t, base())
		calls := 0
		r, err := s.Solve(p, x0, nlp.Options{Stop: func() bool { calls++; return calls > 2 }})
		if err != nil || r.Status != nlp.Stopped {
			t.Fatalf("%v %v %s", r.Status, err, r.Message)
		}
	})
	t.Run("bad options", func(t *testing.T) {
		p, x0 := compile(t, base())
		for _, o := range []nlp.Options{{Tol: math.NaN()}, {Tol: -1}, {MaxIter: -1}} {
			if _, err := s.Solve(p, x0, o); err == nil {
				t.Errorf("options %+v accepted", o)
			}
		}
		if _, err := s.Solve(p, []float64{1}, nlp.Options{}); err == nil {
			t.Error("a start point of the wrong length accepted")
		}
	})
}

// TestSynthesisAllAssignments: on random synthesis instances every S(y) ends solved (to the KKT
// tolerance, checked from the functions) or infeasible, and every F(y) solved.
func TestSynthesisAllAssignments(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	s := ipm.New()
	for range 10 {
		sp := gbd.NewSubproblems(synthesis.Problem(synthesis.Sample(rng)), nil, nlp.Options{})
		for c := range 32 {
			y := make([]float64, 5)
			for i := range 5 {
				y[i] = float64((c >> i) & 1)
			}
			for k, feas := range []bool{false, true} {
				p, x0, ok := sp.Compiled(y, feas)
				if !ok {
					continue // S(y)'s bounds cross: infeasible without a solve
				}
				r, err := s.Solve(p, x0, nlp.Options{})
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case r.Status == nlp.Solved:
					kktOK(t, p, r, 1e-7)
				case k == 0 && r.Status == nlp.Infeasible:
				default:
					t.Errorf("y %v %s: %v %s", y, []string{"S", "F"}[k], r.Status, r.Message)
				}
			}
		}
	}
}

// TestSteadyStateAllocs: once a Solver has seen a structure, solving it again allocates nothing.
func TestSteadyStateAllocs(t *testing.T) {
	sp := gbd.NewSubproblems(synthesis.Problem(synthesis.Sample(rand.New(rand.NewPCG(7, 8)))), nil, nlp.Options{})
	p, x0, _ := sp.Compiled([]float64{0, 1, 1, 0, 1}, true) // F(y) is always feasible
	s := ipm.New()
	if r, _ := s.Solve(p, x0, nlp.Options{}); r.Status != nlp.Solved {
		t.Fatalf("%v", r.Status)
	}
	if a := testing.AllocsPerRun(20, func() { s.Solve(p, x0, nlp.Options{}) }); a != 0 {
		t.Errorf("%v allocations per solve", a)
	}
}
