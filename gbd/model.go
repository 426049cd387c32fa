package gbd

import (
	"errors"
	"fmt"
	"math"
)

// Term is Weight·atom(Coef·x[Idx] + Shift).
type Term struct {
	Weight float64
	Atom   Atom
	P      float64 // exponent, AtomPower only
	Idx    []int
	Coef   []float64
	Shift  float64
}

// Expr is a function convex in x and affine in y:
//
//	Σ_k Terms[k](x) + Σ_i Coef[i]·x[Idx[i]] + Σ_i YCoef[i]·y[YIdx[i]] + Const.
//
// It is the building block of the objective f(x) + cᵀy and of every constraint row.
type Expr struct {
	Terms []Term
	Idx   []int
	Coef  []float64
	YIdx  []int
	YCoef []float64
	Const float64
	Name  string // optional, used in error messages and traces
}

// Problem is a convex MINLP in the form of the paper's problem (1), with y entering linearly:
//
//	min  f(x) + cᵀy                      (Objective)
//	s.t. g_i(x) + A_i y ≤ 0              (Ineq, g_i convex)
//	     h_j(x) + B_j y = 0              (Eq, h_j affine: no Terms)
//	     x ∈ X = [XLo, XHi]
//	     K y ≤ b                         (Pure, pure binary constraints: master only)
//	     y ∈ {0,1}^NY
//
// For fixed y every subproblem is then a convex NLP, which Validate checks term by term.
type Problem struct {
	Name      string
	NX        int
	XLo, XHi  []float64 // ±Inf allowed
	XNames    []string  // optional
	NY        int
	YNames    []string // optional
	Objective Expr
	Ineq      []Expr
	Eq        []Expr
	Pure      []PureRow
}

// ErrNotConvex is wrapped by Validate's error when a term is not convex over the variable box.
var ErrNotConvex = errors.New("not convex")

// Validate checks dimensions, finiteness and convexity for fixed y. It returns the first problem
// found, naming the row and term.
func (p *Problem) Validate() error {
	if p.NX < 0 || p.NY <= 0 {
		return fmt.Errorf("problem %q: need NX ≥ 0 and NY ≥ 1, got NX=%d NY=%d", p.Name, p.NX, p.NY)
	}
	if len(p.XLo) != p.NX || len(p.XHi) != p.NX {
		return fmt.Errorf("problem %q: bounds have lengths %d/%d, want %d", p.Name, len(p.XLo), len(p.XHi), p.NX)
	}
	for i := range p.NX {
		lo, hi := p.XLo[i], p.XHi[i]
		if math.IsNaN(lo) || math.IsNaN(hi) || lo > hi || math.IsInf(lo, 1) || math.IsInf(hi, -1) {
			return fmt.Errorf("problem %q: variable %s has bounds [%g, %g]", p.Name, p.xname(i), lo, hi)
		}
	}
	// Row names are formatted only for an error: a control step validates its problem, and a
	// name per row was a measurable share of a fleet's CPU.
	if err := p.checkExpr(func() string { return "objective" }, &p.Objective, true); err != nil {
		return err
	}
	for r := range p.Ineq {
		if err := p.checkExpr(func() string { return p.rowName("inequality", r, p.Ineq[r].Name) }, &p.Ineq[r], true); err != nil {
			return err
		}
	}
	for r := range p.Eq {
		e := &p.Eq[r]
		name := func() string { return p.rowName("equality", r, e.Name) }
		if len(e.Terms) > 0 {
			return fmt.Errorf("problem %q: %s has nonlinear terms; equalities must be affine in x for the subproblem to be convex: %w", p.Name, name(), ErrNotConvex)
		}
		if err := p.checkExpr(name, e, false); err != nil {
			return err
		}
	}
	for r, row := range p.Pure {
		if len(row.Idx) != len(row.Coef) {
			return fmt.Errorf("problem %q: pure binary row %d has %d indices and %d coefficients", p.Name, r, len(row.Idx), len(row.Coef))
		}
		for _, i := range row.Idx {
			if i < 0 || i >= p.NY {
				return fmt.Errorf("problem %q: pure binary row %d: binary index %d out of range", p.Name, r, i)
			}
		}
	}
	return nil
}

func (p *Problem) rowName(kind string, r int, name string) string {
	if name != "" {
		return fmt.Sprintf("%s %d (%s)", kind, r, name)
	}
	return fmt.Sprintf("%s %d", kind, r)
}

func (p *Problem) xname(i int) string {
	if i < len(p.XNames) && p.XNames[i] != "" {
		return p.XNames[i]
	}
	return fmt.Sprintf("x[%d]", i)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func (p *Problem) checkIdx(where func() string, idx []int, coef []float64, n int, what string) error {
	if len(idx) != len(coef) {
		return fmt.Errorf("problem %q: %s: %d %s indices but %d coefficients", p.Name, where(), len(idx), what, len(coef))
	}
	for k, i := range idx {
		if i < 0 || i >= n {
			return fmt.Errorf("problem %q: %s: %s index %d out of range [0,%d)", p.Name, where(), what, i, n)
		}
		if !finite(coef[k]) {
			return fmt.Errorf("problem %q: %s: coefficient %g of %s %d is not finite", p.Name, where(), coef[k], what, i)
		}
	}
	return nil
}

func (p *Problem) checkExpr(where func() string, e *Expr, convex bool) error {
	if err := p.checkIdx(where, e.Idx, e.Coef, p.NX, "x"); err != nil {
		return err
	}
	if err := p.checkIdx(where, e.YIdx, e.YCoef, p.NY, "y"); err != nil {
		return err
	}
	if !finite(e.Const) {
		return fmt.Errorf("problem %q: %s: constant %g is not finite", p.Name, where(), e.Const)
	}
	for k := range e.Terms {
		t := &e.Terms[k]
		tw := func() string { return fmt.Sprintf("%s term %d (%s)", where(), k, t.Atom) }
		if err := p.checkIdx(tw, t.Idx, t.Coef, p.NX, "x"); err != nil {
			return err
		}
		if !finite(t.Weight) || !finite(t.Shift) || (t.Atom == AtomPower && !finite(t.P)) {
			return fmt.Errorf("problem %q: %s: weight, shift or exponent not finite", p.Name, tw())
		}
		if !convex || t.Weight == 0 {
			continue
		}
		lo, hi := p.argRange(t)
		c, why := t.Atom.curvature(lo, hi, t.P)
		if c == 0 {
			return fmt.Errorf("problem %q: %s: %s: %w", p.Name, tw(), why, ErrNotConvex)
		}
		if float64(c)*t.Weight < 0 {
			return fmt.Errorf("problem %q: %s: weight %g times a %s atom is concave; the subproblem must be convex: %w",
				p.Name, tw(), t.Weight, map[int]string{1: "convex", -1: "concave"}[c], ErrNotConvex)
		}
	}
	return nil
}

// argRange is the interval the term's argument covers over the variable box.
func (p *Problem) argRange(t *Term) (lo, hi float64) {
	lo, hi = t.Shift, t.Shift
	for k, i := range t.Idx {
		a := t.Coef[k]
		if a >= 0 {
			lo += a * p.XLo[i]
			hi += a * p.XHi[i]
		} else {
			lo += a * p.XHi[i]
			hi += a * p.XLo[i]
		}
	}
	return lo, hi
}

// Eval returns the expression's value at (x, y), and false when a term is outside its domain.
func (e *Expr) Eval(x, y []float64) (float64, bool) {
	v, ok := e.EvalX(x)
	for k, i := range e.YIdx {
		v += e.YCoef[k] * y[i]
	}
	return v, ok
}

// EvalX is the x-part of the expression including its constant (everything but the y terms).
func (e *Expr) EvalX(x []float64) (float64, bool) {
	v := e.Const
	for k, i := range e.Idx {
		v += e.Coef[k] * x[i]
	}
	for k := range e.Terms {
		t := &e.Terms[k]
		u := t.arg(x)
		f, _, _, ok := t.Atom.eval(u, t.P)
		if !ok {
			return math.NaN(), false
		}
		v += t.Weight * f
	}
	return v, true
}

// YPart is Σ YCoef·y.
func (e *Expr) YPart(y []float64) float64 { return sparseDot(e.YCoef, e.YIdx, y) }

func (t *Term) arg(x []float64) float64 { return t.Shift + sparseDot(t.Coef, t.Idx, x) }

// Gradient adds ∂e/∂x at x, scaled by w, into g (len NX).
func (e *Expr) Gradient(x []float64, w float64, g []float64) bool {
	for k, i := range e.Idx {
		g[i] += w * e.Coef[k]
	}
	for k := range e.Terms {
		t := &e.Terms[k]
		_, d1, _, ok := t.Atom.eval(t.arg(x), t.P)
		if !ok {
			return false
		}
		s := w * t.Weight * d1
		for kk, i := range t.Idx {
			g[i] += s * t.Coef[kk]
		}
	}
	return true
}
