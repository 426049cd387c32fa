package gbd

import (
	"fmt"
	"math"
	"sort"

	"gbdmpc/gbd/nlp"
)

// compiled is the subproblem S(y) (or the feasibility subproblem F(y)) of a Problem compiled once
// into the back-ends' sparse form (nlp.Problem); only the bounds change with y.
//
// Inequality rows that are linear in a single x variable (q − q_max·y ≤ 0, q_min·y − q ≤ 0, level
// limits, …) are not passed to the back-end as rows: for fixed y they are variable bounds, so a
// switched-off pump's flows become fixed variables. Their multipliers, which the Benders cut
// needs, are recovered afterwards from the reduced gradient (see rowMultipliers).
type compiled struct {
	p    *Problem
	feas bool // F(y): slack per kept inequality, two per equality, minimize their sum

	n, m     int
	kept     []int // index into p.Ineq for each kept inequality row, in row order
	conv     []convRow
	convByX  [][]int // per x variable, indices into conv
	nSlack   int
	rowPos   [][]int32 // per constraint row: Jacobian position of each row's Idx entry
	termPos  [][][]int32
	slackPos []int32 // Jacobian position of the slack entries (feas only), 1 or 2 per row
	objTerm  [][]int32
	jacRow   []int32
	jacCol   []int32
	hessRow  []int32
	hessCol  []int32
	hessPos  map[[2]int]int32
	objHess  [][]int32   // per objective term: Hessian positions for each (k,l) pair, k≥l
	rowHess  [][][]int32 // per constraint row, per term

	prob nlp.Problem // the back-end's view: bounds alias xl/xu/gl/gu, updated in place by setY

	// per-y state
	y      []float64
	xl, xu []float64
	gl, gu []float64
	lam    []float64 // scratch for the Hessian callback
}

// convRow is an inequality a·x_j + (A y + c) ≤ 0 turned into a bound on x_j.
type convRow struct {
	row int // index into p.Ineq
	j   int
	a   float64
}

func isSingleVarRow(e *Expr) (j int, a float64, ok bool) {
	if len(e.Terms) > 0 {
		return 0, 0, false
	}
	j = -1
	for k, i := range e.Idx {
		if j >= 0 && i != j {
			return 0, 0, false
		}
		j = i
		a += e.Coef[k]
	}
	if j < 0 || a == 0 {
		return 0, 0, false
	}
	return j, a, true
}

// compileNLP builds the sparse structure. convert chooses whether single-variable rows become bounds.
func compileNLP(p *Problem, feas, convert bool) *compiled {
	c := &compiled{p: p, feas: feas, convByX: make([][]int, p.NX), hessPos: map[[2]int]int32{}}
	for r := range p.Ineq {
		if convert {
			if j, a, ok := isSingleVarRow(&p.Ineq[r]); ok {
				c.convByX[j] = append(c.convByX[j], len(c.conv))
				c.conv = append(c.conv, convRow{row: r, j: j, a: a})
				continue
			}
		}
		c.kept = append(c.kept, r)
	}
	c.m = len(c.kept) + len(p.Eq)
	if feas {
		c.nSlack = len(c.kept) + 2*len(p.Eq)
	}
	c.n = p.NX + c.nSlack

	// Jacobian structure, row by row: the row's distinct x columns in ascending order, then slacks.
	slack := p.NX
	for r := 0; r < c.m; r++ {
		e := c.rowExpr(r)
		cols := map[int]bool{}
		for _, i := range e.Idx {
			cols[i] = true
		}
		for k := range e.Terms {
			for _, i := range e.Terms[k].Idx {
				cols[i] = true
			}
		}
		sorted := make([]int, 0, len(cols))
		for i := range cols {
			sorted = append(sorted, i)
		}
		sort.Ints(sorted)
		pos := map[int]int32{}
		for _, i := range sorted {
			pos[i] = int32(len(c.jacRow))
			c.jacRow = append(c.jacRow, int32(r))
			c.jacCol = append(c.jacCol, int32(i))
		}
		lin := make([]int32, len(e.Idx))
		for k, i := range e.Idx {
			lin[k] = pos[i]
		}
		c.rowPos = append(c.rowPos, lin)
		tp := make([][]int32, len(e.Terms))
		for k := range e.Terms {
			tp[k] = make([]int32, len(e.Terms[k].Idx))
			for kk, i := range e.Terms[k].Idx {
				tp[k][kk] = pos[i]
			}
		}
		c.termPos = append(c.termPos, tp)
		if feas {
			nsl := 1
			if r >= len(c.kept) {
				nsl = 2
			}
			for range nsl {
				c.slackPos = append(c.slackPos, int32(len(c.jacRow)))
				c.jacRow = append(c.jacRow, int32(r))
				c.jacCol = append(c.jacCol, int32(slack))
				slack++
			}
		}
	}
	// Hessian structure: every pair of variables that share a nonlinear term.
	c.objHess = c.termHess(p.Objective.Terms)
	if feas {
		c.objHess = nil // F's objective is linear in the slacks
	}
	for r := 0; r < c.m; r++ {
		c.rowHess = append(c.rowHess, c.termHess(c.rowExpr(r).Terms))
	}
	c.y = make([]float64, p.NY)
	c.xl = make([]float64, c.n)
	c.xu = make([]float64, c.n)
	c.gl = make([]float64, c.m)
	c.gu = make([]float64, c.m)
	c.lam = make([]float64, c.m)
	c.prob = nlp.Problem{
		N: c.n, M: c.m,
		XL: c.xl, XU: c.xu, GL: c.gl, GU: c.gu,
		JacRow: c.jacRow, JacCol: c.jacCol,
		HessRow: c.hessRow, HessCol: c.hessCol,
		Eval: c,
	}
	return c
}

func (c *compiled) termHess(terms []Term) [][]int32 {
	out := make([][]int32, len(terms))
	for k := range terms {
		t := &terms[k]
		for a := range t.Idx {
			for b := 0; b <= a; b++ {
				i, j := t.Idx[a], t.Idx[b]
				if i < j {
					i, j = j, i
				}
				key := [2]int{i, j}
				pos, ok := c.hessPos[key]
				if !ok {
					pos = int32(len(c.hessRow))
					c.hessPos[key] = pos
					c.hessRow = append(c.hessRow, int32(i))
					c.hessCol = append(c.hessCol, int32(j))
				}
				out[k] = append(out[k], pos)
			}
		}
	}
	return out
}

// rowExpr is the expression of constraint row r: kept inequalities first, then equalities.
func (c *compiled) rowExpr(r int) *Expr {
	if r < len(c.kept) {
		return &c.p.Ineq[c.kept[r]]
	}
	return &c.p.Eq[r-len(c.kept)]
}

// setY fixes the binaries and computes bounds. It reports false when the converted bounds of some
// variable cross (the subproblem is then infeasible without solving anything).
func (c *compiled) setY(y []float64) bool {
	copy(c.y, y)
	p := c.p
	copy(c.xl, p.XLo)
	copy(c.xu, p.XHi)
	for i := p.NX; i < c.n; i++ {
		c.xl[i], c.xu[i] = 0, math.Inf(1)
	}
	consistent := true
	for _, cr := range c.conv {
		e := &p.Ineq[cr.row]
		b := -(e.Const + e.YPart(y)) / cr.a // a·x_j ≤ −(Ay+c)
		if cr.a > 0 {
			c.xu[cr.j] = math.Min(c.xu[cr.j], b)
		} else {
			c.xl[cr.j] = math.Max(c.xl[cr.j], b)
		}
	}
	for j := 0; j < p.NX; j++ {
		if c.xl[j] > c.xu[j] {
			if c.xl[j]-c.xu[j] <= 1e-9*(1+math.Abs(c.xu[j])) {
				c.xl[j] = c.xu[j]
			} else {
				consistent = false
			}
		}
	}
	for r := 0; r < c.m; r++ {
		e := c.rowExpr(r)
		rhs := -e.YPart(y)
		if r < len(c.kept) {
			c.gl[r], c.gu[r] = math.Inf(-1), rhs
		} else {
			c.gl[r], c.gu[r] = rhs, rhs
		}
	}
	return consistent
}

// problem is the NLP for the y of the last setY. It is the same value for every y, so a back-end
// sees one structure per compiled problem.
func (c *compiled) problem() *nlp.Problem { return &c.prob }

// Objective implements nlp.Evaluator. In S(y) it is f(x) + cᵀy, so the NLP's objective is Z(y).
func (c *compiled) Objective(x []float64) (float64, bool) {
	if c.feas {
		s := 0.0
		for i := c.p.NX; i < c.n; i++ {
			s += x[i]
		}
		return s, true
	}
	v, ok := c.p.Objective.EvalX(x)
	return v + c.p.Objective.YPart(c.y), ok
}

func (c *compiled) Gradient(x, g []float64) bool {
	clear(g)
	if c.feas {
		for i := c.p.NX; i < c.n; i++ {
			g[i] = 1
		}
		return true
	}
	return c.p.Objective.Gradient(x, 1, g)
}

func (c *compiled) Constraints(x, g []float64) bool {
	nk := len(c.kept)
	sl := c.p.NX
	for r := 0; r < c.m; r++ {
		v, ok := c.rowExpr(r).EvalX(x)
		if !ok {
			return false
		}
		if c.feas {
			if r < nk {
				v -= x[sl]
				sl++
			} else {
				v += -x[sl] + x[sl+1]
				sl += 2
			}
		}
		g[r] = v
	}
	return true
}

func (c *compiled) Jacobian(x, vals []float64) bool {
	clear(vals)
	for r := 0; r < c.m; r++ {
		e := c.rowExpr(r)
		for k, pos := range c.rowPos[r] {
			vals[pos] += e.Coef[k]
		}
		for k := range e.Terms {
			t := &e.Terms[k]
			_, d1, _, ok := t.Atom.eval(t.arg(x), t.P)
			if !ok {
				return false
			}
			s := t.Weight * d1
			for kk, pos := range c.termPos[r][k] {
				vals[pos] += s * t.Coef[kk]
			}
		}
	}
	if c.feas {
		nk := len(c.kept)
		for s, pos := range c.slackPos {
			switch {
			case s < nk:
				vals[pos] = -1
			case (s-nk)%2 == 0:
				vals[pos] = -1
			default:
				vals[pos] = 1
			}
		}
	}
	return true
}

func (c *compiled) Hessian(x []float64, objFactor float64, lambda, vals []float64) bool {
	clear(vals)
	if !c.feas && !addTermHess(c.p.Objective.Terms, c.objHess, objFactor, x, vals) {
		return false
	}
	for r := 0; r < c.m; r++ {
		if lambda[r] == 0 {
			continue
		}
		if !addTermHess(c.rowExpr(r).Terms, c.rowHess[r], lambda[r], x, vals) {
			return false
		}
	}
	return true
}

func addTermHess(terms []Term, pos [][]int32, w float64, x, vals []float64) bool {
	for k := range terms {
		t := &terms[k]
		_, _, d2, ok := t.Atom.eval(t.arg(x), t.P)
		if !ok {
			return false
		}
		s := w * t.Weight * d2
		q := 0
		for a := range t.Idx {
			for b := 0; b <= a; b++ {
				v := s * t.Coef[a] * t.Coef[b]
				if a != b && t.Idx[a] == t.Idx[b] {
					v *= 2 // both orderings of a repeated index land on the same diagonal entry
				}
				vals[pos[k][q]] += v
				q++
			}
		}
	}
	return true
}

// rowMultipliers returns the multiplier of every row of p.Ineq and p.Eq at an NLP solution: the
// back-end's constraint multipliers for rows it saw, and for rows turned into bounds the share of the reduced
// gradient that their active bound carries. When the binding bound of a variable comes from the box X
// rather than from a row, the reduced gradient belongs to X and no row multiplier is set (X is kept in
// the master's Lagrangian minimization, so the cut stays valid either way).
func (c *compiled) rowMultipliers(x, multG []float64, mu, lam []float64) {
	p := c.p
	clear(mu)
	for r, row := range c.kept {
		mu[row] = math.Max(0, multG[r])
	}
	for r := range p.Eq {
		lam[r] = multG[len(c.kept)+r]
	}
	if len(c.conv) == 0 {
		return
	}
	// Reduced gradient ∇obj + Jᵀλ over the original variables.
	red := make([]float64, p.NX)
	if !c.feas {
		p.Objective.Gradient(x, 1, red)
	}
	for r := 0; r < c.m; r++ {
		if multG[r] != 0 {
			c.rowExpr(r).Gradient(x, multG[r], red)
		}
	}
	for j, list := range c.convByX {
		if len(list) == 0 || red[j] == 0 {
			continue
		}
		// red > 0: the objective would decrease by lowering x_j, so a lower bound is binding.
		lower := red[j] > 0
		best, bestB := -1, 0.0
		for _, ci := range list {
			cr := c.conv[ci]
			if (cr.a < 0) != lower {
				continue
			}
			e := &p.Ineq[cr.row]
			b := -(e.Const + e.YPart(c.y)) / cr.a
			if best < 0 || (lower && b > bestB) || (!lower && b < bestB) {
				best, bestB = ci, b
			}
		}
		if best < 0 {
			continue
		}
		box := p.XLo[j]
		if !lower {
			box = p.XHi[j]
		}
		tol := 1e-7 * (1 + math.Abs(bestB))
		if (lower && box > bestB+tol) || (!lower && box < bestB-tol) {
			continue // the box is tighter: X carries this multiplier
		}
		// No distance test: an interior-point solution sits slightly inside an active bound
		// (1e-5 was seen), and dropping its multiplier there made cuts overestimate min over X
		// by up to 4e-4. At a truly interior x_j the reduced gradient is ~0, so is the multiplier.
		cr := c.conv[best]
		mu[cr.row] = math.Max(0, -red[j]/cr.a)
	}
}

// cut builds the GBD cut from a solution of S(y) (optimality: μ_B ≥ φ_o(y)) or F(y) (feasibility:
// φ_f(y) ≤ 0), as the Lagrangian at x* with y left free:
//
//	φ_o(y) = f(x*) + cᵀy + Σ_i μ_i (g_i(x*) + A_i y) + Σ_j λ_j (h_j(x*) + B_j y)
//	φ_f(y) =               Σ_i μ̄_i (g_i(x̄) + A_i y) + Σ_j λ̄_j (h_j(x̄) + B_j y)
func (c *compiled) cut(x, mu, lam []float64) (Cut, error) {
	p := c.p
	cut := Cut{Coef: make([]float64, p.NY), Kind: OptimalityCut}
	if c.feas {
		cut.Kind = FeasibilityCut
	} else {
		v, ok := p.Objective.EvalX(x)
		if !ok {
			return Cut{}, fmt.Errorf("objective not defined at the subproblem solution")
		}
		cut.Const = v
		addY(cut.Coef, &p.Objective, 1)
	}
	add := func(e *Expr, w float64) error {
		if w == 0 {
			return nil
		}
		v, ok := e.EvalX(x)
		if !ok {
			return fmt.Errorf("row %q not defined at the subproblem solution", e.Name)
		}
		cut.Const += w * v
		addY(cut.Coef, e, w)
		return nil
	}
	for r := range p.Ineq {
		if err := add(&p.Ineq[r], mu[r]); err != nil {
			return Cut{}, err
		}
	}
	for r := range p.Eq {
		if err := add(&p.Eq[r], lam[r]); err != nil {
			return Cut{}, err
		}
	}
	return cut, nil
}

func addY(coef []float64, e *Expr, w float64) {
	for k, i := range e.YIdx {
		coef[i] += w * e.YCoef[k]
	}
}
