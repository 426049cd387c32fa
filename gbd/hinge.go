package gbd

import (
	"math"
	"slices"
)

// Hinges: costs of the binaries that a cut can carry exactly.
//
// Some continuous variables only measure a function of the binaries: a start indicator s with
// cost γ·s and the one row y[b] − y[b−1] − s ≤ 0 is s = max(0, y[b] − y[b−1]) at every optimum of
// S(y), whatever else the plan does. Any Lagrangian cut prices such a row with one multiplier μ,
// affinely in y: it charges a start μ and credits a stop μ, so a plan that stops a pump and starts
// it again looks no dearer than one that keeps it running, however large γ — on the pump stations
// the start costs (1–2 € each) are of the size of the gaps GBD cannot close at 60 binaries.
//
// A variable x_j is a hinge when it enters the objective only as c·x_j with c > 0 and one
// inequality row only, as a·y + k − α·x_j ≤ 0 (α > 0, no other variable), over a box [lo, hi].
// At fixed y it is then x_j = max(lo, (a·y + k)/α) at every optimum (or the row cannot hold), so
//
//	Z(y) = c·lo + H(y) + Z'(y),  H(y) = c·max(0, (a·y + k)/α − lo),
//
// Z' being the problem without x_j and its row. A cut made with the row's multiplier set to 0 is
// a cut of c·lo + Z' (x_j then sits at lo in its Lagrangian), so that cut plus H is a valid cut of
// Z, and one never below the cut of any multiplier of the row: H exceeds the row's Lagrangian
// part, μ·(a·y + k) + min over the box of (c − μα)·x_j, at every y. Such a cut says so with
// Cut.Hinges; H is a sum of hinge functions of a few binaries each (two consecutive move blocks on
// the pump stations), which a master that takes them (HingeTaker) adds exactly: the staged master
// in its stage-by-stage search, the enum master per assignment. Every other consumer reads
// Cut.Eval, which adds H, or the affine part alone, which is still a valid (weaker) cut.

// Hinge is one hinge's exact cost: Weight·max(0, Coef·y[Idx] + Const), Weight = c, Coef = a/α
// and Const = k/α − lo of the text above.
type Hinge struct {
	Var, Row int // the variable x_j and its row (Problem.Ineq)
	Weight   float64
	Idx      []int
	Coef     []float64
	Const    float64
}

// At is the hinge's cost at y (binaries read as set when above ½).
func (h *Hinge) At(y []float64) float64 {
	v := h.Const
	for k, i := range h.Idx {
		if y[i] > 0.5 {
			v += h.Coef[k]
		}
	}
	return h.Weight * math.Max(0, v)
}

// Hinges are a problem's hinges (FindHinges), read only once made and shared by every cut that
// carries them.
type Hinges struct {
	Terms []Hinge
	rows  []bool // rows[r]: Ineq row r is a hinge's
}

// Eval is H(y), the sum of the hinges' costs.
func (h *Hinges) Eval(y []float64) float64 {
	v := 0.0
	for k := range h.Terms {
		v += h.Terms[k].At(y)
	}
	return v
}

// Equal reports whether h and o are the same hinges (a carried cut's, made from its own copy of
// the problem, and the solve's).
func (h *Hinges) Equal(o *Hinges) bool {
	if h == o {
		return true
	}
	if h == nil || o == nil {
		return false
	}
	return slices.EqualFunc(h.Terms, o.Terms, func(a, b Hinge) bool {
		return a.Var == b.Var && a.Row == b.Row && a.Weight == b.Weight && a.Const == b.Const &&
			slices.Equal(a.Idx, b.Idx) && slices.Equal(a.Coef, b.Coef)
	})
}

// Carries reports whether c is an optimality cut that carries the hinges h (not nil): a master
// that took h adds their cost to it.
func (c *Cut) Carries(h *Hinges) bool {
	return c.Kind == OptimalityCut && h != nil && c.Hinges.Equal(h)
}

// HingesOf is the hinges that cuts carry (the first cut's that does: one solve's cuts share one
// set), nil when none does.
func HingesOf(cuts []Cut) *Hinges {
	for k := range cuts {
		if h := cuts[k].Hinges; h != nil {
			return h
		}
	}
	return nil
}

// HingeRow reports whether Ineq row r is a hinge's.
func (h *Hinges) HingeRow(r int) bool { return h != nil && r < len(h.rows) && h.rows[r] }

// zeroRows sets the hinge rows' multipliers in mu to 0 (the cut of c·lo + Z').
func (h *Hinges) zeroRows(mu []float64) {
	for r, on := range h.rows {
		if on && r < len(mu) {
			mu[r] = 0
		}
	}
}

// FindHinges returns p's hinges, or nil when it has none. p must pass Validate. A hinge's row
// must name two binaries or more, and with stages (Y_pb's, nil: none) binaries of two stages or
// more: every cut dualizes such a row, where a row of one binary is kept primal by the
// strengthened cut (Lagrangian.Strengthened) and a row inside one stage by the stage cut, which
// then hold its cost already.
func FindHinges(p *Problem, stages [][]int) *Hinges {
	stageOf := make([]int, p.NY)
	for s, st := range stages {
		for _, i := range st {
			if i >= 0 && i < p.NY {
				stageOf[i] = s
			}
		}
	}
	// spans reports whether the row names two binaries, of two stages when there are stages.
	spans := func(e *Expr) bool {
		for _, i := range e.YIdx[1:] {
			if i != e.YIdx[0] && (stages == nil || stageOf[i] != stageOf[e.YIdx[0]]) {
				return true
			}
		}
		return false
	}
	// uses[j] counts x_j's appearances outside the objective's linear part; row[j] is the one
	// inequality row it appears in (−1: none, or more than one).
	uses := make([]int, p.NX)
	row := make([]int, p.NX)
	for j := range row {
		row[j] = -1
	}
	count := func(e *Expr, r int) {
		for _, j := range e.Idx {
			uses[j]++
			row[j] = r
		}
		for t := range e.Terms {
			for _, j := range e.Terms[t].Idx {
				uses[j] += 2 // a nonlinear appearance is never a hinge's
			}
		}
	}
	for t := range p.Objective.Terms {
		for _, j := range p.Objective.Terms[t].Idx {
			uses[j] += 2
		}
	}
	for r := range p.Ineq {
		count(&p.Ineq[r], r)
	}
	for r := range p.Eq {
		count(&p.Eq[r], -1)
	}
	cost := make([]float64, p.NX)
	for k, j := range p.Objective.Idx {
		cost[j] += p.Objective.Coef[k]
	}
	h := &Hinges{rows: make([]bool, len(p.Ineq))}
	for j := range p.NX {
		r := row[j]
		if uses[j] != 1 || r < 0 || !(cost[j] > 0) || math.IsInf(p.XLo[j], -1) {
			continue
		}
		e := &p.Ineq[r]
		if len(e.Idx) != 1 || len(e.Terms) != 0 || len(e.YIdx) == 0 || h.rows[r] || !spans(e) {
			continue
		}
		alpha := -e.Coef[0]
		if !(alpha > 0) {
			continue
		}
		hg := Hinge{Var: j, Row: r, Weight: cost[j], Const: e.Const/alpha - p.XLo[j]}
		for k, i := range e.YIdx {
			hg.Idx = append(hg.Idx, i)
			hg.Coef = append(hg.Coef, e.YCoef[k]/alpha)
		}
		h.Terms = append(h.Terms, hg)
		h.rows[r] = true
	}
	if len(h.Terms) == 0 {
		return nil
	}
	return h
}

// HingeTaker is a Master that adds a problem's hinges to the cuts that carry them
// (Cut.Hinges): TakeHinges, called after Reset and before the solve's first cut, reports whether
// it does for these (false: the engine makes its cuts without them).
type HingeTaker interface {
	TakeHinges(h *Hinges) bool
}
