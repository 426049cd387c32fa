package gbd

import (
	"errors"
	"math"
	"slices"

	"gbdmpc/gbd/nlp"
)

// Stage cuts (issue: "cuts that know what each binary is worth").
//
// A staged Y_pb splits the binaries into stages (a plan's move blocks). A stagePlan splits the
// continuous variables the same way and dualizes only the rows that tie one stage to another (a
// level at a block boundary, a start that compares two blocks); every other row stays inside its
// stage. For multipliers w of the tying rows,
//
//	Z(y) ≥ A(y) + Σ_s T_s(y_s),   T_s(p) = min { f_s(x_s) + Σ_r w_r·g_r,s(x_s) : x_s ∈ X_s,
//	                                              the rows of stage s hold at y_s = p }
//
// where A is affine in y (the objective's y terms and constant, the tying rows' constants and y
// terms), f_s and g_r,s the parts of the objective and of tying row r on stage s's variables: every
// x feasible for S(y) makes Σ_r w_r·(g_r(x) + …) ≤ 0 and satisfies every stage's rows. T_s is a
// table over the stage's patterns, exact within the stage. Each entry is computed as a certified
// lower bound: the stage's NLP at p is solved for its own rows' multipliers, and the Lagrangian of
// the stage with those multipliers (and w) is minimized exactly over the box with the on/off rows
// kept primal (Lagrangian.Strengthened, which is affine in y_s and valid for any multipliers).
// Every entry takes the largest of the stage's affine minorants at p — the one of the solve's own
// multipliers (the strengthened cut's part) among them — so the stage cut is never below the
// strengthened cut, is tight at y^k, and is valid for any multipliers whatever the NLP returned.
//
// The stage cut is carried as the strengthened cut's affine part plus, per stage, the excess
// T_s(p) − G_s(p) ≥ 0 over that part (Cut.Tables): the staged master adds the tables to its stage
// values (one lookup per stage), every other consumer keeps the valid affine part.

// stagePlan is a Problem split by the stages of Y_pb.
type stagePlan struct {
	p      *Problem
	stages [][]int
	// linkIneq and linkEq are the rows dualized: rows whose variables or binaries lie in more
	// than one stage.
	linkIneq, linkEq []int
	blocks           []*stageBlock
	solver           nlp.Solver
	opt              nlp.Options
}

// stageBlock is one stage: its variables and binaries renumbered, its own rows and the parts of
// the tying rows on its variables.
type stageBlock struct {
	xs, ys   []int // global indices of the stage's variables and binaries (ys = the stage)
	ineq, eq []int // global indices of the rows inside the stage
	// linkI and linkE are the tying rows with a part on this stage, and iPart, ePart those parts
	// (renumbered, x terms only).
	linkI, linkE []int
	iPart, ePart []Expr
	obj          Expr   // the objective's x part on the stage (renumbered)
	rows         []Expr // the stage's inequality rows (renumbered)
	eqs          []Expr // the stage's equalities (renumbered)
	pats         []uint32
	// lag is the Lagrangian of the stage: objective obj, inequalities rows then iPart, equalities
	// eqs then ePart; only rows may be kept primal.
	lag *Lagrangian
}

// newStagePlan splits p by stages, or returns nil when p does not split: a nonlinear term of
// the objective or of a dualized row over variables of two stages, a stage of more binaries than
// the staged master takes, or a Lagrangian that is not separable. pure are the pure rows (the
// stages' patterns are those that satisfy the rows lying inside one stage).
func newStagePlan(p *Problem, stages [][]int, gate []int) *stagePlan {
	if len(stages) < 2 {
		return nil
	}
	sm, err := NewStageModel(p.NY, stages, p.Pure)
	if err != nil {
		return nil
	}
	yStage := make([]int, p.NY)
	for s, st := range stages {
		for _, i := range st {
			yStage[i] = s
		}
	}
	xStage := assignStages(p, yStage, gate)
	stageOf := func(e *Expr) (lo, hi int, withVars bool) {
		lo, hi = math.MaxInt, -1
		see := func(s int) { lo, hi = min(lo, s), max(hi, s) }
		for _, j := range e.Idx {
			see(xStage[j])
			withVars = true
		}
		for k := range e.Terms {
			for _, j := range e.Terms[k].Idx {
				see(xStage[j])
				withVars = true
			}
		}
		for _, i := range e.YIdx {
			see(yStage[i])
		}
		return lo, hi, withVars
	}
	termsInOneStage := func(e *Expr) bool {
		for k := range e.Terms {
			s := -1
			for _, j := range e.Terms[k].Idx {
				if s >= 0 && xStage[j] != s {
					return false
				}
				s = xStage[j]
			}
		}
		return true
	}
	if !termsInOneStage(&p.Objective) {
		return nil
	}
	pl := &stagePlan{p: p, stages: stages, blocks: make([]*stageBlock, len(stages))}
	local := make([]int, p.NX)
	for s := range stages {
		pl.blocks[s] = &stageBlock{ys: stages[s], pats: sm.Patterns(s)}
	}
	for j, s := range xStage {
		b := pl.blocks[s]
		local[j] = len(b.xs)
		b.xs = append(b.xs, j)
	}
	yLocal := make([]int, p.NY)
	for _, st := range stages {
		for k, i := range st {
			yLocal[i] = k
		}
	}
	for r := range p.Ineq {
		lo, hi, vars := stageOf(&p.Ineq[r])
		switch {
		case vars && lo == hi:
			pl.blocks[lo].ineq = append(pl.blocks[lo].ineq, r)
		case !termsInOneStage(&p.Ineq[r]):
			return nil
		default:
			pl.linkIneq = append(pl.linkIneq, r)
		}
	}
	for r := range p.Eq {
		lo, hi, vars := stageOf(&p.Eq[r])
		if vars && lo == hi {
			pl.blocks[lo].eq = append(pl.blocks[lo].eq, r)
		} else {
			pl.linkEq = append(pl.linkEq, r)
		}
	}
	for s, b := range pl.blocks {
		if len(b.xs) == 0 {
			return nil
		}
		b.obj = localPart(&p.Objective, s, xStage, local, nil, false)
		for _, r := range b.ineq {
			b.rows = append(b.rows, localPart(&p.Ineq[r], s, xStage, local, yLocal, true))
		}
		for _, r := range b.eq {
			b.eqs = append(b.eqs, localPart(&p.Eq[r], s, xStage, local, yLocal, true))
		}
		for _, r := range pl.linkIneq {
			if e := localPart(&p.Ineq[r], s, xStage, local, nil, false); len(e.Idx) > 0 || len(e.Terms) > 0 {
				b.linkI, b.iPart = append(b.linkI, r), append(b.iPart, e)
			}
		}
		for _, r := range pl.linkEq {
			if e := localPart(&p.Eq[r], s, xStage, local, nil, false); len(e.Idx) > 0 {
				b.linkE, b.ePart = append(b.linkE, r), append(b.ePart, e)
			}
		}
		lp := b.problem(p, b.obj)
		lp.Ineq = append(lp.Ineq, b.iPart...)
		lp.Eq = append(lp.Eq, b.ePart...)
		b.lag = indexLagrangianBox(lp, len(b.rows))
		if !b.lag.separable() {
			return nil
		}
	}
	return pl
}

// problem is the stage's NLP with objective obj: its variables and box, its binaries, its rows.
func (b *stageBlock) problem(p *Problem, obj Expr) *Problem {
	q := &Problem{
		Name: p.Name + " (stage)", NX: len(b.xs), NY: len(b.ys),
		XLo: make([]float64, len(b.xs)), XHi: make([]float64, len(b.xs)),
		Objective: obj,
		Ineq:      slices.Clip(b.rows),
		Eq:        slices.Clip(b.eqs),
	}
	for k, j := range b.xs {
		q.XLo[k], q.XHi[k] = p.XLo[j], p.XHi[j]
	}
	return q
}

// assignStages gives every variable a stage: a variable gated by a binary (Lagrangian's gate)
// takes its binary's stage; then a row whose variables and binaries of known stage all lie in one
// stage gives that stage to its other variables, until nothing changes; a variable still without
// one takes the latest stage of the binaries of its rows, or stage 0. Any assignment gives valid
// cuts; this one keeps the rows of a move block inside its stage.
func assignStages(p *Problem, yStage, gate []int) []int {
	x := make([]int, p.NX)
	for j := range x {
		x[j] = -1
		if gate[j] >= 0 {
			x[j] = yStage[gate[j]]
		}
	}
	rows := make([]*Expr, 0, len(p.Ineq)+len(p.Eq))
	for r := range p.Ineq {
		rows = append(rows, &p.Ineq[r])
	}
	for r := range p.Eq {
		rows = append(rows, &p.Eq[r])
	}
	vars := func(e *Expr, f func(j int)) {
		for _, j := range e.Idx {
			f(j)
		}
		for k := range e.Terms {
			for _, j := range e.Terms[k].Idx {
				f(j)
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for _, e := range rows {
			s, one, open := -1, true, false
			see := func(v int) {
				if s >= 0 && v != s {
					one = false
				}
				s = v
			}
			vars(e, func(j int) {
				if x[j] >= 0 {
					see(x[j])
				} else {
					open = true
				}
			})
			for _, i := range e.YIdx {
				see(yStage[i])
			}
			if !open || !one || s < 0 {
				continue
			}
			vars(e, func(j int) {
				if x[j] < 0 {
					x[j], changed = s, true
				}
			})
		}
	}
	for _, e := range rows {
		late := -1
		for _, i := range e.YIdx {
			late = max(late, yStage[i])
		}
		if late >= 0 {
			vars(e, func(j int) {
				if x[j] < 0 {
					x[j] = late
				}
			})
		}
	}
	for j := range x {
		x[j] = max(x[j], 0)
	}
	return x
}

// localPart is e's part on stage s, renumbered: its terms and linear entries over stage s's
// variables; with whole, its binaries (renumbered by yLocal) and constant too.
func localPart(e *Expr, s int, xStage, local, yLocal []int, whole bool) Expr {
	out := Expr{Name: e.Name}
	for k, j := range e.Idx {
		if xStage[j] == s {
			out.Idx = append(out.Idx, local[j])
			out.Coef = append(out.Coef, e.Coef[k])
		}
	}
	for k := range e.Terms {
		t := e.Terms[k]
		if len(t.Idx) == 0 || xStage[t.Idx[0]] != s {
			continue
		}
		idx := make([]int, len(t.Idx))
		for kk, j := range t.Idx {
			idx[kk] = local[j]
		}
		t.Idx = idx
		out.Terms = append(out.Terms, t)
	}
	if whole {
		out.Const = e.Const
		for k, i := range e.YIdx {
			out.YIdx = append(out.YIdx, yLocal[i])
			out.YCoef = append(out.YCoef, e.YCoef[k])
		}
	}
	return out
}

// cut returns the stage cut of the optimality multipliers d (of the whole problem), built on the
// strengthened cut's affine part, or ok=false when a stage's Lagrangian has no minimum. stop, if
// not nil, is asked between the stages' NLPs; once it reports true the remaining entries keep the
// solve's own multipliers (still a valid cut).
func (pl *stagePlan) cut(d CutDuals, stop func() bool) (Cut, bool) {
	p := pl.p
	cut := Cut{Kind: OptimalityCut, Coef: make([]float64, p.NY)}
	cst, mag := p.Objective.Const, math.Abs(p.Objective.Const)
	addY(cut.Coef, &p.Objective, 1)
	for _, r := range pl.linkIneq {
		if w := math.Max(0, d.Mu[r]); w != 0 {
			cst += w * p.Ineq[r].Const
			mag += math.Abs(w * p.Ineq[r].Const)
			addY(cut.Coef, &p.Ineq[r], w)
		}
	}
	for _, r := range pl.linkEq {
		if w := d.Lam[r]; w != 0 {
			cst += w * p.Eq[r].Const
			mag += math.Abs(w * p.Eq[r].Const)
			addY(cut.Coef, &p.Eq[r], w)
		}
	}
	tabs := &StageTables{Stages: pl.stages, Excess: make([][]float64, len(pl.blocks))}
	for s, b := range pl.blocks {
		g, ex, ok := pl.block(b, d, stop)
		if !ok {
			return Cut{}, false
		}
		for k, i := range b.ys {
			cut.Coef[i] += g.Coef[k]
		}
		cst += g.Const
		mag += math.Abs(g.Const)
		tabs.Excess[s] = ex
	}
	cut.Const = cst - float64(len(pl.blocks)+len(pl.linkIneq)+len(pl.linkEq)+2)*0x1p-52*mag
	if !finite(cut.Const) {
		return Cut{}, false
	}
	cut.Tables = tabs
	return cut, true
}

// block returns stage b's affine minorant of the solve's multipliers d, G, and the table of the
// excess of its best minorant over G at each admissible pattern.
func (pl *stagePlan) block(b *stageBlock, d CutDuals, stop func() bool) (Cut, []float64, bool) {
	mu := make([]float64, 0, len(b.rows)+len(b.iPart))
	for _, r := range b.ineq {
		mu = append(mu, d.Mu[r])
	}
	for _, r := range b.linkI {
		mu = append(mu, math.Max(0, d.Mu[r]))
	}
	lam := make([]float64, 0, len(b.eqs)+len(b.ePart))
	for _, r := range b.eq {
		lam = append(lam, d.Lam[r])
	}
	for _, r := range b.linkE {
		lam = append(lam, d.Lam[r])
	}
	g, err := b.lag.Strengthened(OptimalityCut, CutDuals{Mu: mu, Lam: lam})
	if err != nil {
		return Cut{}, nil, false
	}
	ex := make([]float64, 1<<len(b.ys))
	if stop != nil && stop() {
		return g, ex, true
	}
	// The stage's NLP: its objective plus the tying rows' parts at their multipliers.
	obj := Expr{Idx: slices.Clone(b.obj.Idx), Coef: slices.Clone(b.obj.Coef), Terms: slices.Clone(b.obj.Terms)}
	addPart := func(e *Expr, w float64) {
		if w == 0 {
			return
		}
		for k, j := range e.Idx {
			obj.Idx = append(obj.Idx, j)
			obj.Coef = append(obj.Coef, w*e.Coef[k])
		}
		for _, t := range e.Terms {
			t.Weight *= w
			obj.Terms = append(obj.Terms, t)
		}
	}
	nI, nE := len(b.rows), len(b.eqs)
	for k := range b.iPart {
		addPart(&b.iPart[k], mu[nI+k])
	}
	for k := range b.ePart {
		addPart(&b.ePart[k], lam[nE+k])
	}
	sub := NewSubproblems(b.problem(pl.p, obj), pl.solver, pl.opt)
	sub.lag = nil // the stage's own cut is b.lag's (with the tying rows); its S(y) cut is not used
	y := make([]float64, len(b.ys))
	var minorants []Cut
	for _, pat := range b.pats {
		if stop != nil && stop() {
			break
		}
		for k := range y {
			y[k] = float64(pat >> k & 1)
		}
		res, err := sub.Evaluate(y, 0)
		if err != nil || !res.Feasible || res.Duals == nil {
			continue
		}
		copy(mu, res.Duals.Mu)
		copy(lam, res.Duals.Lam)
		if c, err := b.lag.Strengthened(OptimalityCut, CutDuals{Mu: mu, Lam: lam}); err == nil {
			minorants = append(minorants, c)
		}
	}
	for _, pat := range b.pats {
		for k := range y {
			y[k] = float64(pat >> k & 1)
		}
		base := g.Eval(y)
		best := base
		for k := range minorants {
			best = math.Max(best, minorants[k].Eval(y))
		}
		// The excess is a difference of two certified bounds: its own rounding goes down.
		ex[pat] = math.Max(0, best-base-4*0x1p-52*(math.Abs(best)+math.Abs(base)))
	}
	return g, ex, true
}

// StageCutter makes stage cuts of one Problem over the stages of its Y_pb from any optimality
// multipliers, as the engine does with Settings.StageCuts (for tests and studies of the cuts).
type StageCutter struct {
	pl *stagePlan
}

// NewStageCutter prepares p (which must pass Validate) for stage cuts over ypb's stages; it fails
// when Y_pb has no stages or p does not split by them.
func NewStageCutter(p *Problem, ypb *Admissible) (*StageCutter, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if ypb == nil || len(ypb.Stages) < 2 {
		return nil, errors.New("gbd: stage cuts need a Y_pb of at least two stages")
	}
	lag := indexLagrangian(p)
	if !lag.separable() {
		return nil, ErrNotSeparable
	}
	pl := newStagePlan(p, ypb.Stages, lag.gate)
	if pl == nil {
		return nil, errors.New("gbd: the problem does not split by the stages of Y_pb")
	}
	pl.solver = NewNLP()
	return &StageCutter{pl: pl}, nil
}

// Cut returns the stage cut of the optimality multipliers d (a carried cut: Iter −1).
func (sc *StageCutter) Cut(d CutDuals) (Cut, error) {
	p := sc.pl.p
	if len(d.Mu) != len(p.Ineq) || len(d.Lam) != len(p.Eq) {
		return Cut{}, ErrDualsMismatch
	}
	c, ok := sc.pl.cut(d, nil)
	if !ok {
		return Cut{}, ErrNoMinimum
	}
	c.Iter, c.Carried = -1, true
	return c, nil
}
