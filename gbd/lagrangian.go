package gbd

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"gbdmpc/internal/scratch"
)

// CutDuals are the multipliers behind one GBD cut: μ per row of Problem.Ineq and λ per row of
// Problem.Eq, as the subproblem (S(y) for an optimality cut, F(y) for a feasibility cut) returned
// them. They outlive the cut: re-evaluated on a later problem they give a cut for that problem
// (Lagrangian.Cut).
type CutDuals struct {
	Mu  []float64 // ≥ 0, len(Problem.Ineq)
	Lam []float64 // free, len(Problem.Eq)
}

// Clone returns a deep copy.
func (d CutDuals) Clone() CutDuals {
	return CutDuals{Mu: append([]float64(nil), d.Mu...), Lam: append([]float64(nil), d.Lam...)}
}

// Errors of Lagrangian.Cut: the multipliers give no usable cut for this problem.
var (
	// ErrNotSeparable: a nonlinear term with a non-zero multiplier couples several variables, so
	// the Lagrangian's minimum over X is not a sum of one-dimensional minimizations. Such cuts are
	// not carried (a general box-constrained convex solve would be needed).
	ErrNotSeparable = errors.New("lagrangian is not separable")
	// ErrNoMinimum: the Lagrangian is unbounded below over X (an infinite bound on a variable whose
	// Lagrangian keeps decreasing towards it), so the multipliers prove nothing about y.
	ErrNoMinimum = errors.New("lagrangian has no minimum over the variable box")
	// ErrNonFinite: the cut came out with a non-finite constant or coefficient.
	ErrNonFinite = errors.New("cut is not finite")
	// ErrDualsMismatch: the multipliers do not fit the problem's rows.
	ErrDualsMismatch = errors.New("multipliers do not fit the problem")
)

// Lagrangian turns stored multipliers into cuts of one Problem. Because y enters linearly, for any
// μ ≥ 0 and λ
//
//	q(y) = min_{x∈X} f(x) + cᵀy + μᵀ(g(x) + A y) + λᵀ(h(x) + B y)
//	     = L_min + (c + Aᵀμ + Bᵀλ)ᵀy,   L_min = min_{x∈X} f(x) + μᵀg(x) + λᵀh(x)  (y-free parts)
//
// is affine in y, and q(y) ≤ Z(y) for every y by weak duality (every x feasible for S(y) lies in X
// and makes the multiplied rows ≤ 0). So μ_B ≥ q(y) is a valid optimality cut whatever the
// multipliers' origin. For a feasibility cut the objective is left out: if y is feasible, some
// x ∈ X has g ≤ 0 and h = 0, so min_X μ̄ᵀ(g + A y) + λ̄ᵀ(h + B y) ≤ 0, and q_F(y) ≤ 0 is valid.
//
// L_min is computed exactly when the Lagrangian is separable (every nonlinear term with a non-zero
// weight has one variable, as in the pump station): one convex one-dimensional minimization per
// variable over its bounds, closed form for linear and quadratic ones, safeguarded Newton
// otherwise, each returning a certified lower bound within 1e-13 relative (min1d.go). A Lagrangian
// is safe for concurrent use.
type Lagrangian struct {
	p      *Problem
	objSep bool
	rowSep []bool      // per Ineq row: its terms are separable
	byVar  [][]termRef // per variable: the terms whose argument is a multiple of it
	consts []termRef   // terms whose argument does not depend on x
	// Rows that Strengthened keeps primal: per variable, the rows a·x_j + b·y_i + c ≤ 0 that bound
	// it (boxRows), all with the one binary gate[j] (−1: none of them has a binary); isBox marks
	// them by row.
	boxRows [][]boxRow
	gate    []int
	isBox   []bool
	// scratch holds *lagScratch: Carry re-evaluates hundreds of cuts per control step, and their
	// work arrays were most of the controller's allocation (and so of its GC cycles).
	scratch sync.Pool
}

// lagScratch is the work space of one Cut call.
type lagScratch struct {
	mu, lin []float64
	pieces  []piece
}

// termRef is term k of the objective (row −1) or of inequality row `row`, whose argument is
// a·x_j + Shift.
type termRef struct {
	row, k int
	a      float64
}

// NewLagrangian prepares p (which must pass Validate: every subproblem convex) for re-evaluating
// cuts.
func NewLagrangian(p *Problem) (*Lagrangian, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return indexLagrangian(p), nil
}

// indexLagrangian is NewLagrangian for a problem already validated (the engine's, whose Solve
// validated it): Validate formats a name per row, which a control step need not pay twice.
func indexLagrangian(p *Problem) *Lagrangian { return indexLagrangianBox(p, len(p.Ineq)) }

// indexLagrangianBox is indexLagrangian with only the inequality rows before boxBelow eligible to
// be kept primal by Strengthened: the rows after it are parts of rows dualized elsewhere (a stage
// cut's block, stagecut.go), which bound nothing on their own.
func indexLagrangianBox(p *Problem, boxBelow int) *Lagrangian {
	l := &Lagrangian{p: p, rowSep: make([]bool, len(p.Ineq)), byVar: make([][]termRef, p.NX)}
	l.objSep = l.index(-1, &p.Objective)
	for r := range p.Ineq {
		l.rowSep[r] = l.index(r, &p.Ineq[r])
	}
	l.indexBoxRows(boxBelow)
	return l
}

// index files the terms of e by variable and reports whether each has at most one variable.
func (l *Lagrangian) index(row int, e *Expr) bool {
	sep := true
	for k := range e.Terms {
		t := &e.Terms[k]
		j, a := -1, 0.0
		for kk, i := range t.Idx {
			if j >= 0 && i != j {
				sep = false
			}
			j = i
			a += t.Coef[kk]
		}
		switch {
		case !sep:
		case j < 0 || a == 0:
			l.consts = append(l.consts, termRef{row: row, k: k})
		default:
			l.byVar[j] = append(l.byVar[j], termRef{row: row, k: k, a: a})
		}
	}
	return sep
}

// Problem is the problem the Lagrangian was built for.
func (l *Lagrangian) Problem() *Problem { return l.p }

// Cut returns q (optimality, with the objective) or q_F (feasibility, without it) for the
// multipliers d, as a carried cut (Iter −1, Carried). A negative μ is taken as 0, which keeps the
// cut valid. The error wraps ErrDualsMismatch, ErrNotSeparable, ErrNoMinimum or ErrNonFinite.
func (l *Lagrangian) Cut(kind CutKind, d CutDuals) (Cut, error) { return l.cut(kind, d, false) }

// Strengthened returns the cut of Cut with the rows that bound one variable by a multiple of one
// binary (on/off limits q ≤ Q_max·y_i, q ≥ Q_min·y_i; rows with one variable and no binary too)
// kept primal instead of dualized, Zou, Ahmed & Sun's strengthened Benders cut applied to the
// Lagrangian:
//
//	q̃(y) = min { f(x) + cᵀy + μᵀ(g(x) + A y) + λᵀ(h(x) + B y) over the other rows :
//	              x ∈ X, every kept row holds at y }
//
// Separable as before, the minimum over x_j gated by binary i is taken over its box at y_i = 0
// and at y_i = 1, v⁰_j and v¹_j, so q̃ is affine in y again: its constant gains v⁰_j and the
// coefficient of y_i gains v¹_j − v⁰_j. For every binary y, q̃(y) ≥ q(y) (the kept rows'
// multiplier terms are ≤ 0 on the smaller set) and q̃(y) ≤ Z(y) (every feasible x satisfies the
// kept rows), for any multipliers: so the cut is valid, never weaker than Cut's at a binary y,
// and equal to Z at the y whose subproblem gave optimal multipliers. The rows kept must leave
// each box non-empty at both values; a variable whose box is empty at one value (that value of
// y_i is infeasible whatever the rest) has its rows dualized as in Cut.
func (l *Lagrangian) Strengthened(kind CutKind, d CutDuals) (Cut, error) { return l.cut(kind, d, true) }

func (l *Lagrangian) cut(kind CutKind, d CutDuals, strong bool) (Cut, error) {
	p := l.p
	if len(d.Mu) != len(p.Ineq) || len(d.Lam) != len(p.Eq) {
		return Cut{}, fmt.Errorf("%w: %d/%d multipliers for %d inequalities and %d equalities",
			ErrDualsMismatch, len(d.Mu), len(d.Lam), len(p.Ineq), len(p.Eq))
	}
	wObj := 0.0
	if kind == OptimalityCut {
		wObj = 1
		if !l.objSep {
			return Cut{}, fmt.Errorf("objective: %w", ErrNotSeparable)
		}
	}
	sc, _ := l.scratch.Get().(*lagScratch)
	if sc == nil {
		sc = &lagScratch{}
	}
	defer l.scratch.Put(sc)
	mu := scratch.Resize(sc.mu, len(d.Mu))
	sc.mu = mu
	for r, v := range d.Mu {
		if !finite(v) {
			return Cut{}, fmt.Errorf("μ of inequality %d is %g: %w", r, v, ErrNonFinite)
		}
		mu[r] = math.Max(0, v)
		if mu[r] > 0 && !l.rowSep[r] {
			return Cut{}, fmt.Errorf("inequality %d: %w", r, ErrNotSeparable)
		}
	}
	for r, v := range d.Lam {
		if !finite(v) {
			return Cut{}, fmt.Errorf("λ of equality %d is %g: %w", r, v, ErrNonFinite)
		}
	}
	weight := func(row int) float64 {
		if row < 0 {
			return wObj
		}
		return mu[row]
	}

	cut := Cut{Kind: kind, Coef: make([]float64, p.NY), Iter: -1, Carried: true}
	lin := scratch.Resize(sc.lin, p.NX)
	sc.lin = lin
	clear(lin)
	cst := 0.0
	add := func(e *Expr, w float64) {
		if w == 0 {
			return
		}
		cst += w * e.Const
		for k, i := range e.Idx {
			lin[i] += w * e.Coef[k]
		}
		addY(cut.Coef, e, w)
	}
	add(&p.Objective, wObj)
	for r := range p.Ineq {
		if strong && l.isBox[r] {
			continue // kept primal; added back per variable below if its box is empty
		}
		add(&p.Ineq[r], mu[r])
	}
	for r := range p.Eq {
		add(&p.Eq[r], d.Lam[r])
	}

	// Σ of the parts, and Σ of their magnitudes to bound the rounding of the sum.
	total, mag := cst, math.Abs(cst)
	for _, tr := range l.consts {
		w := weight(tr.row)
		if w == 0 {
			continue
		}
		t := l.term(tr)
		v, _, _ := atomExt(t.Atom, t.Shift, t.P)
		v *= w * t.Weight
		if !finite(v) {
			return Cut{}, fmt.Errorf("constant term: %w", ErrNonFinite)
		}
		total, mag = total+v, mag+math.Abs(v)
	}
	f := fn1{pieces: sc.pieces[:0]}
	defer func() { sc.pieces = f.pieces[:0] }()
	for j := range p.NX {
		f.lin, f.pieces = lin[j], f.pieces[:0]
		for _, tr := range l.byVar[j] {
			t := l.term(tr)
			if w := weight(tr.row) * t.Weight; w != 0 {
				f.pieces = append(f.pieces, piece{w: w, a: tr.a, s: t.Shift, p: t.P, atom: t.Atom})
			}
		}
		if !f.convex() {
			return Cut{}, fmt.Errorf("variable %s: %w", p.xname(j), ErrNotConvex)
		}
		if strong && len(l.boxRows[j]) > 0 {
			v0, v1, ok := l.boxMins(&f, j)
			if ok {
				if i := l.gate[j]; i >= 0 {
					cut.Coef[i] += v1 - v0
					mag += math.Abs(v1)
				}
				total, mag = total+v0, mag+math.Abs(v0)
				continue
			}
			// A box empty at one value of the gate: dualize this variable's rows after all.
			for _, br := range l.boxRows[j] {
				if w := mu[br.row]; w != 0 {
					e := &p.Ineq[br.row]
					total, mag = total+w*e.Const, mag+math.Abs(w*e.Const)
					f.lin += w * br.a
					addY(cut.Coef, e, w)
				}
			}
		}
		v, ok := f.minimize1D(p.XLo[j], p.XHi[j])
		if !ok {
			return Cut{}, fmt.Errorf("variable %s: %w", p.xname(j), ErrNoMinimum)
		}
		total, mag = total+v, mag+math.Abs(v)
	}
	// Summing n parts in floating point errs by at most about n·ε times their magnitudes; moving
	// the constant down by that much keeps the cut on the valid side.
	cut.Const = total - float64(p.NX+len(l.consts)+2)*0x1p-52*mag
	if !finite(cut.Const) {
		return Cut{}, ErrNonFinite
	}
	for _, v := range cut.Coef {
		if !finite(v) {
			return Cut{}, ErrNonFinite
		}
	}
	return cut, nil
}

// separable reports whether every cut of the problem can be computed: the objective and every
// inequality row are separable.
func (l *Lagrangian) separable() bool {
	if !l.objSep {
		return false
	}
	for _, ok := range l.rowSep {
		if !ok {
			return false
		}
	}
	return true
}

func (l *Lagrangian) term(tr termRef) *Term {
	if tr.row < 0 {
		return &l.p.Objective.Terms[tr.k]
	}
	return &l.p.Ineq[tr.row].Terms[tr.k]
}

// boxRow is inequality row `row` in the form a·x_j + b·y_i + c ≤ 0, y_i the variable's gate (b = 0
// without a binary): for fixed y a bound on x_j.
type boxRow struct {
	row     int
	a, b, c float64
}

// indexBoxRows finds the rows Strengthened keeps primal: no nonlinear term, one variable, at most
// one binary. A variable's rows must share their binary (its gate) for the minimum over x_j to be
// a function of one y_i; rows naming another binary stay dualized.
func (l *Lagrangian) indexBoxRows(boxBelow int) {
	p := l.p
	l.boxRows = make([][]boxRow, p.NX)
	l.gate = make([]int, p.NX)
	for j := range l.gate {
		l.gate[j] = -1
	}
	l.isBox = make([]bool, len(p.Ineq))
	for r := range p.Ineq[:boxBelow] {
		e := &p.Ineq[r]
		j, a, ok := isSingleVarRow(e)
		if !ok {
			continue
		}
		i, b := -1, 0.0
		for k, yi := range e.YIdx {
			if i >= 0 && yi != i {
				i = -2
				break
			}
			i = yi
			b += e.YCoef[k]
		}
		switch {
		case i == -2:
			continue
		case i >= 0 && b == 0:
			i = -1
		}
		if i >= 0 {
			if g := l.gate[j]; g >= 0 && g != i {
				continue
			}
			l.gate[j] = i
		}
		l.boxRows[j] = append(l.boxRows[j], boxRow{row: r, a: a, b: b, c: e.Const})
		l.isBox[r] = true
	}
}

// boxMins returns the minimum of f over x_j's box with its kept rows at y_gate = 0 and at
// y_gate = 1 (both the same without a gate), or ok=false when either box is empty or a minimum
// does not exist. Each bound a kept row gives is moved outwards by its rounding, so the box
// contains every x_j that satisfies the rows exactly and the minimum stays a lower bound.
func (l *Lagrangian) boxMins(f *fn1, j int) (v0, v1 float64, ok bool) {
	box := func(yv float64) (float64, float64) {
		lo, hi := l.p.XLo[j], l.p.XHi[j]
		for _, br := range l.boxRows[j] {
			rhs := -(br.c + br.b*yv)
			bnd := rhs / br.a
			slack := 4 * 0x1p-52 * (math.Abs(bnd) + (math.Abs(br.c)+math.Abs(br.b))/math.Abs(br.a))
			if br.a > 0 {
				hi = math.Min(hi, bnd+slack)
			} else {
				lo = math.Max(lo, bnd-slack)
			}
		}
		return lo, hi
	}
	lo0, hi0 := box(0)
	if !(lo0 <= hi0) {
		return 0, 0, false
	}
	if v0, ok = f.minimize1D(lo0, hi0); !ok {
		return 0, 0, false
	}
	if l.gate[j] < 0 {
		return v0, v0, true
	}
	lo1, hi1 := box(1)
	if !(lo1 <= hi1) {
		return 0, 0, false
	}
	if v1, ok = f.minimize1D(lo1, hi1); !ok {
		return 0, 0, false
	}
	return v0, v1, true
}
