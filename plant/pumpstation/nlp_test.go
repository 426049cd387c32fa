package pumpstation

import (
	"math"
	"math/rand/v2"
	"testing"

	"gbdmpc/gbd"
	"gbdmpc/gbd/nlp"
	"gbdmpc/gbd/nlp/ipopt"
)

// derivChecker is an NLPSolver that, before solving, checks the compiled NLP's gradient, Jacobian
// and Hessian of the Lagrangian against finite differences of its own function values. gbd keeps
// the compiled NLP private; this is the public path to the derivatives Ipopt actually receives.
type derivChecker struct {
	t       *testing.T
	rng     *rand.Rand
	checked int
	// span, if set, draws the point within [lo, lo + span] of wide boxes: the soft problem's
	// penalties (in €, boxes up to 1e5) would otherwise make the objective so large that central
	// differences lose the digits the comparison needs.
	span float64
}

func (d *derivChecker) Solve(p *nlp.Problem, x0 []float64, opt nlp.Options) (nlp.Result, error) {
	d.check(p)
	d.checked++
	return ipopt.Solver{}.Solve(p, x0, opt)
}

func (d *derivChecker) check(p *nlp.Problem) {
	t := d.t
	t.Helper()
	n, m := p.N, p.M
	// A point strictly inside the bounds (unbounded slacks of F get a positive value).
	x := make([]float64, n)
	for i := range x {
		lo, hi := p.XL[i], p.XU[i]
		switch {
		case lo == hi:
			x[i] = lo
		case math.IsInf(hi, 1):
			x[i] = lo + 0.1 + d.rng.Float64()
		default:
			if d.span > 0 && hi-lo > d.span {
				hi = lo + d.span
			}
			x[i] = lo + (0.1+0.8*d.rng.Float64())*(hi-lo)
		}
	}
	ev := p.Eval
	fd := func(f func([]float64) []float64, j int) []float64 { return centralDiff(f, x, j, 1e-6) }
	obj := func(x []float64) []float64 { v, _ := ev.Objective(x); return []float64{v} }
	cons := func(x []float64) []float64 { g := make([]float64, m); ev.Constraints(x, g); return g }
	jac := func(x []float64) []float64 { // dense m×n
		v := make([]float64, len(p.JacRow))
		ev.Jacobian(x, v)
		dense := make([]float64, m*n)
		for k := range v {
			dense[int(p.JacRow[k])*n+int(p.JacCol[k])] += v[k]
		}
		return dense
	}
	lambda := make([]float64, m)
	for i := range lambda {
		lambda[i] = d.rng.NormFloat64()
	}
	const sigma = 0.7
	lagGrad := func(x []float64) []float64 {
		g := make([]float64, n)
		ev.Gradient(x, g)
		for i := range g {
			g[i] *= sigma
		}
		J := jac(x)
		for r := range m {
			for j := range n {
				g[j] += lambda[r] * J[r*n+j]
			}
		}
		return g
	}
	grad := make([]float64, n)
	ev.Gradient(x, grad)
	J := jac(x)
	hv := make([]float64, len(p.HessRow))
	ev.Hessian(x, sigma, lambda, hv)
	H := make([]float64, n*n)
	for k := range hv {
		i, j := int(p.HessRow[k]), int(p.HessCol[k])
		if i < j {
			t.Fatalf("Hessian entry %d is above the diagonal (%d,%d)", k, i, j)
		}
		H[i*n+j] += hv[k]
	}
	ok := func(a, b float64) bool { return math.Abs(a-b) <= 1e-5*(1+math.Abs(b)) }
	for j := range n {
		if g := fd(obj, j)[0]; !ok(grad[j], g) {
			t.Errorf("gradient[%d] = %v, finite difference %v", j, grad[j], g)
		}
		col := fd(cons, j)
		for r := range m {
			if !ok(J[r*n+j], col[r]) {
				t.Errorf("Jacobian[%d,%d] = %v, finite difference %v", r, j, J[r*n+j], col[r])
			}
		}
		hcol := fd(lagGrad, j)
		for i := j; i < n; i++ { // lower triangle
			if !ok(H[i*n+j], hcol[i]) {
				t.Errorf("Hessian[%d,%d] = %v, finite difference %v", i, j, H[i*n+j], hcol[i])
			}
		}
	}
}

// TestNLPDerivatives runs S(y) for a feasible assignment and S(y), F(y) for an infeasible one,
// checking every compiled NLP's derivatives on the way.
func TestNLPDerivatives(t *testing.T) {
	c := DefaultConfig()
	in := SampleAt(rand.New(rand.NewPCG(9, 10)), &c, ptr(DefaultProfile()), 18)
	p := Problem(&c, &in)
	dc := &derivChecker{t: t, rng: rand.New(rand.NewPCG(11, 12))}
	sub := gbd.NewSubproblems(p, dc, nlp.Options{})

	on := make([]float64, c.NY()) // pumps 2 and 3 throughout: enough for any sampled demand
	for b := range c.Blocks {
		on[c.YIndex(1, b)], on[c.YIndex(2, b)] = 1, 1
	}
	res, err := sub.Evaluate(on, 0)
	if err != nil || !res.Feasible {
		t.Fatalf("pumps 2+3: feasible=%v err=%v", res.Feasible, err)
	}
	off := make([]float64, c.NY()) // nothing runs through the evening peak: the tank empties
	res, err = sub.Evaluate(off, 0)
	if err != nil || res.Feasible {
		t.Fatalf("all off: feasible=%v err=%v", res.Feasible, err)
	}
	if dc.checked < 3 {
		t.Errorf("checked %d NLPs, want S and F", dc.checked)
	}
	// The feasibility cut must exclude the infeasible plan and be informative: running pumps
	// lowers the violation it predicts.
	if v := res.Cut.Eval(off); v <= 0 {
		t.Errorf("feasibility cut does not exclude all-off: φ_f = %v", v)
	}
	if res.NoGood {
		t.Errorf("feasibility cut fell back to a no-good cut")
	}
	if res.Cut.Eval(on) >= res.Cut.Eval(off) {
		t.Errorf("feasibility cut does not credit running pumps: φ_f(on) = %v ≥ φ_f(off) = %v", res.Cut.Eval(on), res.Cut.Eval(off))
	}
}
