package ipm

import (
	"math"
	"math/rand/v2"
	"testing"

	"gbdmpc/gbd/ipm/internal/model"
	"gbdmpc/gbd/nlp"
)

// sq is w·(x_j − c)², one Square term.
func sq(j int, w, c float64) model.Term {
	return model.Term{W: w, Atom: model.Square, Idx: []int{j}, Coef: []float64{1}, Shift: -c}
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
	// min (x0−3)² + (x1+1)² + e^{x2} − x2 s.t. x0 + x1 ≤ 1, e^{x0} ≤ 4, x2 free, x3 fixed at 2.
	base := func() *model.Model {
		return &model.Model{
			N: 4, XL: []float64{0, -5, -inf, 2}, XU: []float64{10, 5, inf, 2},
			Obj: model.Expr{Terms: []model.Term{sq(0, 1, 3), sq(1, 1, -1),
				{W: 1, Atom: model.Exp, Idx: []int{2}, Coef: []float64{1}}}, Idx: []int{2, 3}, Coef: []float64{-1, 1}},
			Rows: []model.Expr{
				{Idx: []int{0, 1}, Coef: []float64{1, 1}},
				{Terms: []model.Term{{W: 1, Atom: model.Exp, Idx: []int{0}, Coef: []float64{1}}}},
			},
			GL: []float64{-inf, -inf}, GU: []float64{1, 4},
		}
	}
	s := New()
	t.Run("solved", func(t *testing.T) {
		m := base()
		p := m.Problem()
		r, err := s.Solve(p, model.Start(m), nlp.Options{})
		if err != nil || r.Status != nlp.Solved {
			t.Fatalf("%v %v %s", r.Status, err, r.Message)
		}
		kktOK(t, p, r, 1e-8)
		// x2 free: e^{x2} = 1 → 0; x3 fixed; the optimum of the rest is x0 = ln 4 (row 1 active).
		if math.Abs(r.X[2]) > 1e-7 || r.X[3] != 2 || math.Abs(r.X[0]-math.Log(4)) > 1e-7 {
			t.Errorf("x = %v", r.X)
		}
		if r.MultG[1] <= 1e-3 {
			t.Errorf("active row's multiplier %g", r.MultG[1])
		}
	})
	t.Run("penalty priced in currency", func(t *testing.T) {
		// min (x0−3)² + w s.t. x0 + 1e-7·w ≥ 5, x0 ∈ [0, 4], w ∈ [0, 1e9]: the shape of the pump
		// station's soft problem (a penalty in € carried by its row with a tiny coefficient). A
		// unit of row costs 1e7 through w and 2 through x0, so x0 = 4, w = 1e7, the row's
		// multiplier is 1e7 and the objective 1 + 1e7. Unscaled, that multiplier is above the
		// elastic penalty; w is rescaled to the row's units (colScale).
		m := &model.Model{
			N: 2, XL: []float64{0, 0}, XU: []float64{4, 1e9},
			Obj:  model.Expr{Terms: []model.Term{sq(0, 1, 3)}, Idx: []int{1}, Coef: []float64{1}},
			Rows: []model.Expr{{Idx: []int{0, 1}, Coef: []float64{1, 1e-7}}},
			GL:   []float64{5}, GU: []float64{inf},
		}
		p := m.Problem()
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
		m := base()
		m.GL[0], m.GU[0] = 20, inf // x0 + x1 ≥ 20 but x0 ≤ 10, x1 ≤ 5
		r, err := s.Solve(m.Problem(), model.Start(m), nlp.Options{})
		if err != nil || r.Status != nlp.Infeasible {
			t.Fatalf("%v %v %s", r.Status, err, r.Message)
		}
	})
	t.Run("unbounded", func(t *testing.T) {
		m := &model.Model{N: 1, XL: []float64{-inf}, XU: []float64{inf}, Obj: model.Expr{Idx: []int{0}, Coef: []float64{1}}}
		r, err := s.Solve(m.Problem(), []float64{0}, nlp.Options{})
		// A linear objective over a free variable: the KKT residual cannot fall, so the solve ends
		// failed at once (or unbounded, had x grown past bigX first); never solved.
		if err != nil || (r.Status != nlp.Unbounded && r.Status != nlp.Failed) {
			t.Fatalf("%v %v %s", r.Status, err, r.Message)
		}
	})
	t.Run("stopped", func(t *testing.T) {
		m := base()
		calls := 0
		r, err := s.Solve(m.Problem(), model.Start(m), nlp.Options{Stop: func() bool { calls++; return calls > 2 }})
		if err != nil || r.Status != nlp.Stopped {
			t.Fatalf("%v %v %s", r.Status, err, r.Message)
		}
	})
	t.Run("bad options", func(t *testing.T) {
		m := base()
		for _, o := range []nlp.Options{{Tol: math.NaN()}, {Tol: -1}, {MaxIter: -1}} {
			if _, err := s.Solve(m.Problem(), model.Start(m), o); err == nil {
				t.Errorf("options %+v accepted", o)
			}
		}
		if _, err := s.Solve(m.Problem(), []float64{1}, nlp.Options{}); err == nil {
			t.Error("a start point of the wrong length accepted")
		}
	})
}

// TestSynthesisAllAssignments: on random synthesis instances every S(y) ends solved (to the KKT
// tolerance, checked from the functions) or infeasible, and every F(y) solved.
func TestSynthesisAllAssignments(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	s := New()
	for range 10 {
		syn := model.SampleSynthesis(rng)
		for c := range 32 {
			var y [5]float64
			for i := range 5 {
				y[i] = float64((c >> i) & 1)
			}
			for k, m := range []*model.Model{syn.S(y), syn.F(y)} {
				p := m.Problem()
				r, err := s.Solve(p, model.Start(m), nlp.Options{})
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
	syn := model.SampleSynthesis(rand.New(rand.NewPCG(7, 8)))
	m := syn.F([5]float64{0, 1, 1, 0, 1}) // F(y) is always feasible
	p, x0 := m.Problem(), model.Start(m)
	s := New()
	if r, _ := s.Solve(p, x0, nlp.Options{}); r.Status != nlp.Solved {
		t.Fatalf("%v", r.Status)
	}
	if a := testing.AllocsPerRun(20, func() { s.Solve(p, x0, nlp.Options{}) }); a != 0 {
		t.Errorf("%v allocations per solve", a)
	}
}
