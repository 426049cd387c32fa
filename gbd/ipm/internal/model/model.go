// Package model writes test NLPs in gbd's atom form — weighted sums of univariate convex atoms
// of affine arguments plus linear parts — and compiles them into nlp.Problems with exact first
// and second derivatives. It exists so that the native solver's tests, the cross-checks against
// Ipopt and the benchmarks build their problems the way gbd does (sparsity per row, Hessian
// pattern from the nonlinear terms) without importing gbd, which will import the solver.
package model

import (
	"math"
	"slices"

	"gbdmpc/gbd/nlp"
)

// Atom is a univariate function.
type Atom uint8

const (
	Exp    Atom = iota + 1 // e^u
	Log                    // ln u, u > 0
	Square                 // u²
	Cube                   // u³
	Power                  // u^P, u ≥ 0
)

// eval returns the atom's value and two derivatives, ok = false outside its domain.
func (a Atom) eval(u, p float64) (v, d1, d2 float64, ok bool) {
	switch a {
	case Exp:
		v = math.Exp(u)
		return v, v, v, !math.IsInf(v, 0)
	case Log:
		if !(u > 0) {
			return 0, 0, 0, false
		}
		return math.Log(u), 1 / u, -1 / (u * u), true
	case Square:
		return u * u, 2 * u, 2, true
	case Cube:
		return u * u * u, 3 * u * u, 6 * u, true
	case Power:
		if u < 0 {
			return 0, 0, 0, false
		}
		if u == 0 {
			if p < 2 && p != 1 {
				return 0, 0, 0, false
			}
			d1, d2 = 0, 0
			if p == 1 {
				d1 = 1
			}
			if p == 2 {
				d2 = 2
			}
			return 0, d1, d2, true
		}
		v = math.Pow(u, p)
		return v, p * v / u, p * (p - 1) * v / (u * u), true
	}
	return 0, 0, 0, false
}

// Term is W·atom(Σ Coef_k x[Idx_k] + Shift).
type Term struct {
	W     float64
	Atom  Atom
	P     float64
	Idx   []int
	Coef  []float64
	Shift float64
}

func (t *Term) arg(x []float64) float64 {
	u := t.Shift
	for k, j := range t.Idx {
		u += t.Coef[k] * x[j]
	}
	return u
}

// Expr is Σ Terms + Σ Coef_k x[Idx_k] + Const.
type Expr struct {
	Terms []Term
	Idx   []int
	Coef  []float64
	Const float64
}

// Model is min Obj s.t. GL ≤ Rows ≤ GU, XL ≤ x ≤ XU.
type Model struct {
	N      int
	XL, XU []float64
	Obj    Expr
	Rows   []Expr
	GL, GU []float64
}

// eval is the compiled Evaluator of a Model.
type eval struct {
	m        *Model
	rowPos   [][]int32   // per row, per linear entry: Jacobian position
	termPos  [][][]int32 // per row, per term, per index: Jacobian position
	objHess  [][]int32   // per objective term: Hessian positions of its (a,b) pairs, a ≥ b
	rowHess  [][][]int32
	hessKeys map[[2]int]int32
	hessRow  []int32
	hessCol  []int32
	// Calls counts Evaluator calls, for tests that check the solver's economy.
	Calls int
}

// Problem compiles m. The Jacobian has one entry per distinct (row, variable) pair, columns
// ascending within a row; the Hessian one entry per pair of variables sharing a nonlinear term.
func (m *Model) Problem() *nlp.Problem {
	e := &eval{m: m, hessKeys: map[[2]int]int32{}}
	p := &nlp.Problem{N: m.N, M: len(m.Rows), XL: m.XL, XU: m.XU, GL: m.GL, GU: m.GU, Eval: e}
	for r := range m.Rows {
		row := &m.Rows[r]
		var cols []int
		cols = append(cols, row.Idx...)
		for _, t := range row.Terms {
			cols = append(cols, t.Idx...)
		}
		slices.Sort(cols)
		cols = slices.Compact(cols)
		pos := map[int]int32{}
		for _, j := range cols {
			pos[j] = int32(len(p.JacRow))
			p.JacRow = append(p.JacRow, int32(r))
			p.JacCol = append(p.JacCol, int32(j))
		}
		lin := make([]int32, len(row.Idx))
		for k, j := range row.Idx {
			lin[k] = pos[j]
		}
		e.rowPos = append(e.rowPos, lin)
		tp := make([][]int32, len(row.Terms))
		for k, t := range row.Terms {
			for _, j := range t.Idx {
				tp[k] = append(tp[k], pos[j])
			}
		}
		e.termPos = append(e.termPos, tp)
	}
	e.objHess = e.termHess(m.Obj.Terms)
	for r := range m.Rows {
		e.rowHess = append(e.rowHess, e.termHess(m.Rows[r].Terms))
	}
	p.HessRow, p.HessCol = e.hessRow, e.hessCol
	return p
}

func (e *eval) termHess(terms []Term) [][]int32 {
	out := make([][]int32, len(terms))
	for k, t := range terms {
		for a := range t.Idx {
			for b := 0; b <= a; b++ {
				i, j := t.Idx[a], t.Idx[b]
				if i < j {
					i, j = j, i
				}
				key := [2]int{i, j}
				pos, ok := e.hessKeys[key]
				if !ok {
					pos = int32(len(e.hessRow))
					e.hessKeys[key] = pos
					e.hessRow = append(e.hessRow, int32(i))
					e.hessCol = append(e.hessCol, int32(j))
				}
				out[k] = append(out[k], pos)
			}
		}
	}
	return out
}

func (x *Expr) value(v []float64) (float64, bool) {
	s := x.Const
	for k, j := range x.Idx {
		s += x.Coef[k] * v[j]
	}
	for k := range x.Terms {
		t := &x.Terms[k]
		f, _, _, ok := t.Atom.eval(t.arg(v), t.P)
		if !ok {
			return 0, false
		}
		s += t.W * f
	}
	return s, true
}

func (e *eval) Objective(x []float64) (float64, bool) {
	e.Calls++
	return e.m.Obj.value(x)
}

func (e *eval) Gradient(x, g []float64) bool {
	e.Calls++
	clear(g)
	o := &e.m.Obj
	for k, j := range o.Idx {
		g[j] += o.Coef[k]
	}
	for k := range o.Terms {
		t := &o.Terms[k]
		_, d1, _, ok := t.Atom.eval(t.arg(x), t.P)
		if !ok {
			return false
		}
		for kk, j := range t.Idx {
			g[j] += t.W * d1 * t.Coef[kk]
		}
	}
	return true
}

func (e *eval) Constraints(x, g []float64) bool {
	e.Calls++
	for r := range e.m.Rows {
		v, ok := e.m.Rows[r].value(x)
		if !ok {
			return false
		}
		g[r] = v
	}
	return true
}

func (e *eval) Jacobian(x, vals []float64) bool {
	e.Calls++
	clear(vals)
	for r := range e.m.Rows {
		row := &e.m.Rows[r]
		for k, pos := range e.rowPos[r] {
			vals[pos] += row.Coef[k]
		}
		for k := range row.Terms {
			t := &row.Terms[k]
			_, d1, _, ok := t.Atom.eval(t.arg(x), t.P)
			if !ok {
				return false
			}
			for kk, pos := range e.termPos[r][k] {
				vals[pos] += t.W * d1 * t.Coef[kk]
			}
		}
	}
	return true
}

func (e *eval) Hessian(x []float64, objFactor float64, lambda, vals []float64) bool {
	e.Calls++
	clear(vals)
	if !addHess(e.m.Obj.Terms, e.objHess, objFactor, x, vals) {
		return false
	}
	for r := range e.m.Rows {
		if lambda[r] != 0 && !addHess(e.m.Rows[r].Terms, e.rowHess[r], lambda[r], x, vals) {
			return false
		}
	}
	return true
}

func addHess(terms []Term, pos [][]int32, w float64, x, vals []float64) bool {
	for k := range terms {
		t := &terms[k]
		_, _, d2, ok := t.Atom.eval(t.arg(x), t.P)
		if !ok {
			return false
		}
		s := w * t.W * d2
		q := 0
		for a := range t.Idx {
			for b := 0; b <= a; b++ {
				v := s * t.Coef[a] * t.Coef[b]
				if a != b && t.Idx[a] == t.Idx[b] {
					v *= 2
				}
				vals[pos[k][q]] += v
				q++
			}
		}
	}
	return true
}

// Calls returns the number of Evaluator calls made on a Problem built by Model.Problem.
func Calls(p *nlp.Problem) int { return p.Eval.(*eval).Calls }

// Inf is +∞, for bounds.
var Inf = math.Inf(1)

// Fill returns n copies of v.
func Fill(n int, v float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = v
	}
	return s
}
