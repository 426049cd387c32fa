package ipm

import (
	"fmt"
	"math"

	"gbdmpc/gbd/nlp"
)

// Solver is the native interior-point back-end. It keeps the symbolic analysis of the last
// problem structure and a workspace sized for it, so it must be used by one goroutine at a time;
// give every goroutine that solves its own Solver.
type Solver struct {
	st    structure
	ready bool // st describes a structure
	w     work
}

// New returns a Solver with an empty workspace; the first Solve of a structure sizes it.
func New() *Solver { return &Solver{} }

var _ nlp.Solver = (*Solver)(nil)

// Solve minimizes p from x0 (see doc.go for the method and the statuses). The returned slices
// belong to the Solver and stay valid until its next Solve. An error is returned only for a
// problem or options that cannot be run.
func (s *Solver) Solve(p *nlp.Problem, x0 []float64, opt nlp.Options) (nlp.Result, error) {
	if err := p.Validate(x0); err != nil {
		return nlp.Result{}, err
	}
	if math.IsNaN(opt.Tol) || math.IsInf(opt.Tol, 0) || opt.Tol < 0 || opt.MaxIter < 0 {
		return nlp.Result{}, fmt.Errorf("ipm: invalid options: Tol %v, MaxIter %d", opt.Tol, opt.MaxIter)
	}
	opt = opt.WithDefaults()
	if !s.ready || !s.st.same(p) {
		s.st.analyse(p)
		s.ready = true
	}
	s.w.resize(&s.st)
	r := s.run(p, x0, opt)
	if !opt.Conservative && (r.Status == nlp.Failed || r.Status == nlp.IterationLimit) && (opt.Stop == nil || !opt.Stop()) {
		// The predictor–corrector's adaptive barrier target can stall on a degenerate problem
		// near the tolerance; the monotone rule, slower but steadier, usually finishes it.
		opt.Conservative = true
		r2 := s.run(p, x0, opt)
		r2.Iterations += r.Iterations
		return r2, nil
	}
	return r, nil
}

// evalAt evaluates g, ∇f and the Jacobian at the iterate's x̃ into the given slices, with the
// variable scaling applied and the function scaling not yet. It reports
// false when the Evaluator declines or returns a value that is not finite.
func (s *Solver) evalAt(p *nlp.Problem, x, g, gr, jv []float64) bool {
	ev, w := p.Eval, &s.w
	x = w.unscale(x)
	if w.m > 0 && !ev.Constraints(x, g) {
		return false
	}
	if !ev.Gradient(x, gr) {
		return false
	}
	if len(jv) > 0 && !ev.Jacobian(x, jv) {
		return false
	}
	if w.colScaled {
		for j, c := range w.cs {
			gr[j] *= c
		}
		for k, j := range s.st.jacCol {
			jv[k] *= w.cs[j]
		}
	}
	return allFinite(g) && allFinite(gr) && allFinite(jv)
}

func allFinite(v []float64) bool {
	for _, a := range v {
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return false
		}
	}
	return true
}

// result assembles the Result from the current iterate, unscaling functions and multipliers.
func (s *Solver) result(p *nlp.Problem, status nlp.Status, iter int, msg string) nlp.Result {
	st, w := &s.st, &s.w
	n, m := w.n, w.m
	prim, dual, compl := s.kktError()
	for j := range n {
		w.xOut[j] = w.cs[j] * w.y[j]
		if w.fix[j] {
			w.xOut[j] = p.XL[j]
		}
	}
	obj, ok := p.Eval.Objective(w.xOut)
	if !ok {
		obj = math.NaN()
	}
	lamScale := 1 / w.fs
	if w.omega == 0 {
		lamScale = 1 // feasibility phase: the certificate's multipliers, |λ̃| ≤ 1
	}
	for i := range m {
		w.gOut[i] = w.g[i] / w.rs[i]
		w.multG[i] = w.lam[i] * w.rs[i] * lamScale
	}
	clear(w.multXL)
	clear(w.multXU)
	for k := range w.np {
		if !w.xpair[k] {
			continue
		}
		j := w.pv[k]
		if w.sg[k] > 0 {
			w.multXL[j] = w.z[k] * lamScale / w.cs[j]
		} else {
			w.multXU[j] = w.z[k] * lamScale / w.cs[j]
		}
	}
	// A fixed variable's bound multiplier is its reduced gradient (it carries all of it).
	r := w.tn
	for j := range n {
		r[j] = w.omega * w.gr[j]
	}
	for k, j := range st.jacCol {
		r[j] += w.jv[k] * w.lam[st.jacRow[k]]
	}
	for j := range n {
		if w.fix[j] {
			if r[j] >= 0 {
				w.multXL[j] = r[j] * lamScale
			} else {
				w.multXU[j] = -r[j] * lamScale
			}
		}
	}
	return nlp.Result{
		Status: status, X: w.xOut, Obj: obj, G: w.gOut,
		MultG: w.multG, MultXL: w.multXL, MultXU: w.multXU,
		Iterations: iter, PrimalInf: prim, DualInf: dual, Compl: compl, Message: msg,
	}
}
