package ipopt

import (
	"math"
	"testing"
)

// funcEval builds an Evaluator from closures so each test problem is written in one place.
// Nil con/jac are fine for M == 0, nil hess for an empty Hessian structure.
type funcEval struct {
	f    func(x []float64) float64
	grad func(x, g []float64)
	con  func(x, g []float64)
	jac  func(x, v []float64)
	hess func(x []float64, sigma float64, lambda, v []float64)
	// domain, when set, makes every method report failure outside it.
	domain func(x []float64) bool
	fails  int // how many times domain rejected a point
}

func (e *funcEval) ok(x []float64) bool {
	if e.domain != nil && !e.domain(x) {
		e.fails++
		return false
	}
	return true
}

func (e *funcEval) Objective(x []float64) (float64, bool) {
	if !e.ok(x) {
		return 0, false
	}
	return e.f(x), true
}

func (e *funcEval) Gradient(x, g []float64) bool { return e.apply(x, e.grad, g) }

func (e *funcEval) Constraints(x, g []float64) bool { return e.apply(x, e.con, g) }

func (e *funcEval) Jacobian(x, v []float64) bool { return e.apply(x, e.jac, v) }

func (e *funcEval) Hessian(x []float64, sigma float64, lambda, v []float64) bool {
	if !e.ok(x) {
		return false
	}
	if e.hess != nil {
		e.hess(x, sigma, lambda, v)
	}
	return true
}

// apply evaluates fn (when set) at x into out, inside the domain.
func (e *funcEval) apply(x []float64, fn func(x, out []float64), out []float64) bool {
	if !e.ok(x) {
		return false
	}
	if fn != nil {
		fn(x, out)
	}
	return true
}

func inf() float64 { return math.Inf(1) }

func fill(n int, v float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// checkKKT verifies the first-order conditions in the sign convention documented in doc.go:
//
//	∇f + Jᵀλ − z_L + z_U = 0,  z_L, z_U ≥ 0,
//	z_L·(x − x_L) = 0,  z_U·(x_U − x) = 0,
//	λ_i > 0 only at g_i = GU_i,  λ_i < 0 only at g_i = GL_i,
//
// evaluating f's gradient and the Jacobian afresh at r.X, so it also checks that Result.G and the
// multipliers belong to Result.X. Fixed variables (XL == XU) are skipped in the stationarity
// rows because Ipopt 3.11 returns zero bound multipliers for them.
func checkKKT(t *testing.T, p *Problem, r Result, tol float64) {
	t.Helper()
	grad := make([]float64, p.N)
	if !p.Eval.Gradient(r.X, grad) {
		t.Fatalf("gradient failed at solution")
	}
	jac := make([]float64, len(p.JacRow))
	if p.M > 0 && !p.Eval.Jacobian(r.X, jac) {
		t.Fatalf("jacobian failed at solution")
	}
	g := make([]float64, p.M)
	if p.M > 0 && !p.Eval.Constraints(r.X, g) {
		t.Fatalf("constraints failed at solution")
	}
	stat := append([]float64(nil), grad...)
	for k, v := range jac {
		stat[p.JacCol[k]] += v * r.MultG[p.JacRow[k]]
	}
	for j := range p.N {
		if p.XL[j] == p.XU[j] {
			continue
		}
		stat[j] += -r.MultXL[j] + r.MultXU[j]
		if math.Abs(stat[j]) > tol*(1+math.Abs(grad[j])) {
			t.Errorf("stationarity row %d: ∇f+Jᵀλ−zL+zU = %g", j, stat[j])
		}
		if r.MultXL[j] < -tol || r.MultXU[j] < -tol {
			t.Errorf("bound multipliers of x%d negative: zL=%g zU=%g", j, r.MultXL[j], r.MultXU[j])
		}
		if c := r.MultXL[j] * (r.X[j] - p.XL[j]); !math.IsInf(p.XL[j], -1) && math.Abs(c) > tol {
			t.Errorf("complementarity zL%d·(x−xL) = %g", j, c)
		}
		if c := r.MultXU[j] * (p.XU[j] - r.X[j]); !math.IsInf(p.XU[j], 1) && math.Abs(c) > tol {
			t.Errorf("complementarity zU%d·(xU−x) = %g", j, c)
		}
	}
	for i := range p.M {
		if math.Abs(g[i]-r.G[i]) > tol*(1+math.Abs(g[i])) {
			t.Errorf("Result.G[%d] = %g, g(X) = %g", i, r.G[i], g[i])
		}
		if g[i] < p.GL[i]-tol || g[i] > p.GU[i]+tol {
			t.Errorf("constraint %d violated: %g ∉ [%g,%g]", i, g[i], p.GL[i], p.GU[i])
		}
		// Complementarity with sign: a positive λ needs the upper bound active, a negative one
		// the lower bound.
		if l := r.MultG[i]; l > 0 && math.Abs(l*(p.GU[i]-g[i])) > tol {
			t.Errorf("λ%d = %g > 0 but g−GU = %g", i, l, g[i]-p.GU[i])
		} else if l < 0 && math.Abs(l*(g[i]-p.GL[i])) > tol {
			t.Errorf("λ%d = %g < 0 but g−GL = %g", i, l, g[i]-p.GL[i])
		}
	}
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*(1+math.Abs(b)) }

func checkVec(t *testing.T, name string, got, want []float64, tol float64) {
	t.Helper()
	if want == nil {
		return
	}
	if len(got) != len(want) {
		t.Errorf("%s: len %d, want %d", name, len(got), len(want))
		return
	}
	for i := range want {
		if !near(got[i], want[i], tol) {
			t.Errorf("%s[%d] = %.10g, want %.10g", name, i, got[i], want[i])
		}
	}
}
