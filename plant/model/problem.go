package model

import (
	"fmt"
	"math"

	"gbdmpc/gbd"
	"gbdmpc/mpc"
)

// layout is where every variable and row of a model's transcription lives (doc.go,
// "Transcription"). It depends on the model only, never on a measurement, so that rows keep their
// meaning from one control step to the next (ShiftDuals).
type layout struct {
	m          *Model
	n, nb, L   int
	nx, ny     int
	stateBase  int
	start      []int         // per unit: index of s[u,0], or −1 without a start cost
	softLo     []int         // per state: index of v⁻[s,1], or −1
	softHi     []int         // per state: index of v⁺[s,1], or −1
	epi        []int         // per cost: index of its first epigraph variable, or −1
	costVar    []ref         // per cost: its variable
	costTimes  []int         // per cost: forecast index, or −1
	rows       *mpc.RowTimes // what time each row describes (ShiftDuals)
	unitIdx    map[string]int
	inputUnit  []int // per input: gating unit index, or −1
	pure       []gbd.PureRow
	stageable  bool
	xnames     []string
	ynames     []string
	xlo, xhi   []float64
	costRanges [][2]float64 // per cost: argument range of the atom over the variable's box
	limits     []limitRow   // the hard-limit rows, in row order (the soft problem relaxes them)
	subst      [][]bool     // [unit][unit]: substitutes (Alternates)
}

// limitRow is the hard-limit row min_s − x_s[t] ≤ 0 (upper false) or x_s[t] − max_s ≤ 0.
type limitRow struct {
	row, state, t int
	upper         bool
}

func (l *layout) inputIndex(i, t int) int { return i*l.n + t }

// stateIndex is x_s[t], t = 1..N.
func (l *layout) stateIndex(s, t int) int { return l.stateBase + s*l.n + t - 1 }

func (l *layout) yIndex(u, b int) int { return u*l.nb + b }

// costSteps are the (time, forecast step) pairs a cost term covers: inputs at t = 0..N−1 with the
// forecast of step t, states at t = 1..N (or N alone) with the forecast of step t−1.
func (l *layout) costSteps(k int) []int {
	c := &l.m.Costs[k]
	var ts []int
	switch {
	case l.costVar[k].kind == kindInput:
		for t := range l.n {
			ts = append(ts, t)
		}
	case c.Terminal:
		ts = []int{l.n}
	default:
		for t := 1; t <= l.n; t++ {
			ts = append(ts, t)
		}
	}
	return ts
}

func (l *layout) costVarIndex(k, t int) int {
	r := l.costVar[k]
	if r.kind == kindInput {
		return l.inputIndex(r.idx, t)
	}
	return l.stateIndex(r.idx, t)
}

// costForecastStep is the forecast step that multiplies a cost term at time t.
func (l *layout) costForecastStep(k, t int) int {
	if l.costVar[k].kind == kindInput {
		return t
	}
	return t - 1
}

func newLayout(m *Model) *layout {
	l := &layout{m: m, n: m.Horizon, nb: m.Blocks, L: m.Horizon / m.Blocks, unitIdx: map[string]int{}}
	n := l.n
	for u, unit := range m.Units {
		l.unitIdx[unit.Name] = u
	}
	addX := func(name string, lo, hi float64) int {
		l.xnames = append(l.xnames, name)
		l.xlo, l.xhi = append(l.xlo, lo), append(l.xhi, hi)
		return len(l.xnames) - 1
	}
	for _, in := range m.Inputs {
		u := -1
		if in.Unit != "" {
			u = l.unitIdx[in.Unit]
		}
		l.inputUnit = append(l.inputUnit, u)
		for t := range n {
			addX(fmt.Sprintf("%s[%d]", in.Name, t), in.Lo, in.Hi)
		}
	}
	l.stateBase = len(l.xnames)
	for _, s := range m.States {
		for t := 1; t <= n; t++ {
			addX(fmt.Sprintf("%s[%d]", s.Name, t), s.Lo, s.Hi)
		}
	}
	for _, u := range m.Units {
		l.start = append(l.start, -1)
		if u.StartCost > 0 {
			for b := range l.nb {
				i := addX(fmt.Sprintf("start_%s[%d]", u.Name, b), 0, 1)
				if b == 0 {
					l.start[len(l.start)-1] = i
				}
			}
		}
		for b := range l.nb {
			l.ynames = append(l.ynames, fmt.Sprintf("%s[%d]", u.Name, b))
		}
	}
	for _, s := range m.States {
		l.softLo, l.softHi = append(l.softLo, -1), append(l.softHi, -1)
		if s.HasSoftMin {
			for t := 1; t <= n; t++ {
				i := addX(fmt.Sprintf("below_%s[%d]", s.Name, t), 0, math.Max(0, s.SoftMin-s.Lo))
				if t == 1 {
					l.softLo[len(l.softLo)-1] = i
				}
			}
		}
		if s.HasSoftMax {
			for t := 1; t <= n; t++ {
				i := addX(fmt.Sprintf("above_%s[%d]", s.Name, t), 0, math.Max(0, s.Hi-s.SoftMax))
				if t == 1 {
					l.softHi[len(l.softHi)-1] = i
				}
			}
		}
	}
	for k, c := range m.Costs {
		l.costVar = append(l.costVar, m.names[c.Var])
		ft := -1
		if c.Times != "" {
			ft = m.names[c.Times].idx
		}
		l.costTimes = append(l.costTimes, ft)
		lo, hi := l.varBox(l.costVar[k])
		a, b := c.Scale*(lo-c.Ref), c.Scale*(hi-c.Ref)
		l.costRanges = append(l.costRanges, [2]float64{math.Min(a, b), math.Max(a, b)})
		l.epi = append(l.epi, -1)
		if c.Atom != AtomAbs && c.Atom != AtomPWL {
			continue
		}
		zlo, zhi := epiBox(&c, l.costRanges[k])
		for j, t := range l.costSteps(k) {
			i := addX(fmt.Sprintf("cost%d_%s[%d]", k, c.Var, t), zlo, zhi)
			if j == 0 {
				l.epi[k] = i
			}
		}
	}
	l.nx = len(l.xnames)
	l.ny = len(m.Units) * l.nb
	l.pure, l.stageable = pureRows(m, l)
	l.subst = substitutes(m, l)
	l.tagRows()
	return l
}

func (l *layout) varBox(r ref) (lo, hi float64) {
	if r.kind == kindInput {
		return l.m.Inputs[r.idx].Lo, l.m.Inputs[r.idx].Hi
	}
	return l.m.States[r.idx].Lo, l.m.States[r.idx].Hi
}

// epiBox is the range of an epigraph variable: the atom's values over its argument's range.
func epiBox(c *Cost, r [2]float64) (lo, hi float64) {
	if c.Atom == AtomAbs {
		return 0, math.Max(math.Abs(r[0]), math.Abs(r[1]))
	}
	lo, hi = math.Min(pwl(c.Points, r[0]), pwl(c.Points, r[1])), math.Max(pwl(c.Points, r[0]), pwl(c.Points, r[1]))
	for _, p := range c.Points {
		if p[0] > r[0] && p[0] < r[1] {
			lo = math.Min(lo, p[1])
		}
	}
	return lo, hi
}

// pwl evaluates the convex piecewise-linear function through pts (extended linearly beyond its
// ends) at a: the largest of its pieces.
func pwl(pts [][2]float64, a float64) float64 {
	v := math.Inf(-1)
	for k := 1; k < len(pts); k++ {
		s := (pts[k][1] - pts[k-1][1]) / (pts[k][0] - pts[k-1][0])
		v = math.Max(v, pts[k-1][1]+s*(a-pts[k-1][0]))
	}
	return v
}

// tagRows fixes the order of the rows and what time each describes; transcribe writes them in
// the same order.
func (l *layout) tagRows() {
	m := l.m
	g := 0
	var ineqTags, eqTags []mpc.RowTime
	add := func(tags *[]mpc.RowTime, group, t int, block bool) {
		*tags = append(*tags, mpc.RowTime{Group: group, T: t, Block: block})
	}
	for s := range m.States {
		for t := range l.n {
			add(&eqTags, g+s, t, false)
		}
	}
	g = len(m.States)
	for k, c := range m.Constraints {
		if c.Op != "eq" {
			continue
		}
		for t := range l.n {
			add(&eqTags, g+k, t, false)
		}
	}
	g = 0
	for i := range m.Inputs {
		if l.inputUnit[i] < 0 {
			continue
		}
		for t := range l.n {
			add(&ineqTags, g+2*i, t, false)
			add(&ineqTags, g+2*i+1, t, false)
		}
	}
	g += 2 * len(m.Inputs)
	for s, st := range m.States {
		for t := 1; t <= l.n; t++ {
			if st.HasMin {
				l.limits = append(l.limits, limitRow{len(ineqTags), s, t, false})
				add(&ineqTags, g+2*s, t-1, false)
			}
			if st.HasMax {
				l.limits = append(l.limits, limitRow{len(ineqTags), s, t, true})
				add(&ineqTags, g+2*s+1, t-1, false)
			}
		}
	}
	g += 2 * len(m.States)
	for u := range m.Units {
		if l.start[u] < 0 {
			continue
		}
		for b := range l.nb {
			add(&ineqTags, g+u, b, true)
		}
	}
	g += len(m.Units)
	for s := range m.States {
		for t := 1; t <= l.n; t++ {
			if l.softLo[s] >= 0 {
				add(&ineqTags, g+2*s, t-1, false)
			}
			if l.softHi[s] >= 0 {
				add(&ineqTags, g+2*s+1, t-1, false)
			}
		}
	}
	g += 2 * len(m.States)
	for k, c := range m.Costs {
		if l.epi[k] < 0 {
			continue
		}
		pieces := 2
		if c.Atom == AtomPWL {
			pieces = len(c.Points) - 1
		}
		for _, t := range l.costSteps(k) {
			tt := l.costForecastStep(k, t)
			for j := range pieces {
				add(&ineqTags, g+j, tt, false)
			}
		}
		g += pieces
	}
	for k, c := range m.Constraints {
		if c.Op == "eq" {
			continue
		}
		for t := range l.n {
			add(&ineqTags, g+k, t, false)
		}
	}
	l.rows = mpc.NewRowTimes(mpc.Blocking{Steps: l.n, Blocks: l.nb}, ineqTags, eqTags)
}

// substitutes marks pairs of units that gate inputs entering one state's dynamics or one
// constraint with the same sign.
func substitutes(m *Model, l *layout) [][]bool {
	nu := len(m.Units)
	out := make([][]bool, nu)
	for u := range out {
		out[u] = make([]bool, nu)
	}
	rows := make([][]Coef, 0, len(m.States)+len(m.Constraints))
	for _, s := range m.States {
		rows = append(rows, s.Next)
	}
	for _, c := range m.Constraints {
		rows = append(rows, c.Sum)
	}
	for _, row := range rows {
		for _, a := range row {
			for _, b := range row {
				ra, rb := m.names[a.Name], m.names[b.Name]
				if ra.kind != kindInput || rb.kind != kindInput {
					continue
				}
				ua, ub := l.inputUnit[ra.idx], l.inputUnit[rb.idx]
				if ua >= 0 && ub >= 0 && ua != ub && a.Value*b.Value > 0 {
					out[ua][ub] = true
				}
			}
		}
	}
	return out
}

// pureRows are the rules as K y ≤ b, the same in every block, and whether every row touches at
// most three consecutive blocks (what the staged master needs).
func pureRows(m *Model, l *layout) ([]gbd.PureRow, bool) {
	var rows []gbd.PureRow
	stageable := len(m.Units) <= 16
	for _, r := range m.Rules {
		for b := range l.nb {
			row := gbd.PureRow{RHS: float64(r.K)}
			for _, name := range r.Units {
				row.Idx = append(row.Idx, l.yIndex(l.unitIdx[name], b))
				row.Coef = append(row.Coef, 1)
			}
			rows = append(rows, row)
		}
	}
	for u, unit := range m.Units {
		if unit.MustRun {
			for b := range l.nb {
				rows = append(rows, gbd.PureRow{Idx: []int{l.yIndex(u, b)}, Coef: []float64{-1}, RHS: -1})
			}
		}
		// Switched on in block b ≥ 1 (inside the horizon): on in the next MinUp−1 blocks. Off
		// likewise. A switch at block 0 is measured, so it would make Y_pb measurement-dependent.
		for b := 1; b < l.nb; b++ {
			for j := 1; j < unit.MinUp && b+j < l.nb; j++ {
				rows = append(rows, gbd.PureRow{Idx: []int{l.yIndex(u, b), l.yIndex(u, b-1), l.yIndex(u, b+j)},
					Coef: []float64{1, -1, -1}})
				stageable = stageable && j <= 1
			}
			for j := 1; j < unit.MinDown && b+j < l.nb; j++ {
				rows = append(rows, gbd.PureRow{Idx: []int{l.yIndex(u, b-1), l.yIndex(u, b), l.yIndex(u, b+j)},
					Coef: []float64{1, -1, 1}, RHS: 1})
				stageable = stageable && j <= 1
			}
		}
	}
	return rows, stageable
}

// Instance is one validated measurement of a model: the measured states, the units' current
// on/off states and every forecast, in the model's order.
type Instance struct {
	States    []float64
	On        []int
	Forecasts [][]float64 // [forecast][step]
}

// transcribe writes the model's MINLP for one instance (doc.go, "Transcription").
func (l *layout) transcribe(in *Instance) *gbd.Problem {
	m := l.m
	p := &gbd.Problem{Name: m.Name, NX: l.nx, NY: l.ny,
		XLo: append([]float64(nil), l.xlo...), XHi: append([]float64(nil), l.xhi...),
		XNames: l.xnames, YNames: l.ynames}
	obj := gbd.Expr{Name: "cost"}

	// Dynamics: x_s[t+1] − Σ a·x[t] − Σ b·u[t] − Σ e·d[t] − const = 0, x[0] measured.
	for s, st := range m.States {
		for t := range l.n {
			e := gbd.Expr{Name: fmt.Sprintf("next_%s[%d]", st.Name, t),
				Idx: []int{l.stateIndex(s, t+1)}, Coef: []float64{1}, Const: -st.Const}
			for _, c := range st.Next {
				r := m.names[c.Name]
				switch r.kind {
				case kindState:
					if t == 0 {
						e.Const -= c.Value * in.States[r.idx]
					} else {
						e.Idx, e.Coef = append(e.Idx, l.stateIndex(r.idx, t)), append(e.Coef, -c.Value)
					}
				case kindInput:
					e.Idx, e.Coef = append(e.Idx, l.inputIndex(r.idx, t)), append(e.Coef, -c.Value)
				case kindForecast:
					e.Const -= c.Value * in.Forecasts[r.idx][t]
				}
			}
			p.Eq = append(p.Eq, e)
		}
	}
	// Constraints as equalities, after the dynamics (tagRows).
	for _, c := range m.Constraints {
		if c.Op == "eq" {
			for t := range l.n {
				p.Eq = append(p.Eq, l.constraintRow(&c, in, t, 1))
			}
		}
	}
	// Gating, one input and one binary per row: on_min·y − u ≤ 0 and u − max·y ≤ 0.
	for i, inp := range m.Inputs {
		u := l.inputUnit[i]
		if u < 0 {
			continue
		}
		for t := range l.n {
			x, y := l.inputIndex(i, t), l.yIndex(u, t/l.L)
			p.Ineq = append(p.Ineq,
				gbd.Expr{Name: fmt.Sprintf("on_min_%s[%d]", inp.Name, t), Idx: []int{x}, Coef: []float64{-1},
					YIdx: []int{y}, YCoef: []float64{inp.OnMin}},
				gbd.Expr{Name: fmt.Sprintf("on_max_%s[%d]", inp.Name, t), Idx: []int{x}, Coef: []float64{1},
					YIdx: []int{y}, YCoef: []float64{-inp.Hi}})
		}
	}
	// Hard limits.
	for s, st := range m.States {
		for t := 1; t <= l.n; t++ {
			x := l.stateIndex(s, t)
			if st.HasMin {
				p.Ineq = append(p.Ineq, gbd.Expr{Name: fmt.Sprintf("min_%s[%d]", st.Name, t), Idx: []int{x}, Coef: []float64{-1}, Const: st.Min})
			}
			if st.HasMax {
				p.Ineq = append(p.Ineq, gbd.Expr{Name: fmt.Sprintf("max_%s[%d]", st.Name, t), Idx: []int{x}, Coef: []float64{1}, Const: -st.Max})
			}
		}
	}
	// Starts: y[u,0] − s[u,0] ≤ on0[u], y[u,b] − y[u,b−1] − s[u,b] ≤ 0.
	for u, unit := range m.Units {
		if l.start[u] < 0 {
			continue
		}
		for b := range l.nb {
			sIdx := l.start[u] + b
			e := gbd.Expr{Name: fmt.Sprintf("start_%s[%d]", unit.Name, b), Idx: []int{sIdx}, Coef: []float64{-1}}
			if b == 0 {
				e.YIdx, e.YCoef, e.Const = []int{l.yIndex(u, 0)}, []float64{1}, -float64(in.On[u])
			} else {
				e.YIdx, e.YCoef = []int{l.yIndex(u, b), l.yIndex(u, b-1)}, []float64{1, -1}
			}
			p.Ineq = append(p.Ineq, e)
			obj.Idx, obj.Coef = append(obj.Idx, sIdx), append(obj.Coef, unit.StartCost)
		}
	}
	for u, unit := range m.Units {
		if unit.RunCost == 0 {
			continue
		}
		for b := range l.nb {
			obj.YIdx, obj.YCoef = append(obj.YIdx, l.yIndex(u, b)), append(obj.YCoef, unit.RunCost*float64(l.L)*m.Dt)
		}
	}
	// Soft limits: soft_min − x − v⁻ ≤ 0, x − soft_max − v⁺ ≤ 0, each v priced soft_penalty.
	for s, st := range m.States {
		for t := 1; t <= l.n; t++ {
			x := l.stateIndex(s, t)
			if l.softLo[s] >= 0 {
				v := l.softLo[s] + t - 1
				p.Ineq = append(p.Ineq, gbd.Expr{Name: fmt.Sprintf("soft_min_%s[%d]", st.Name, t),
					Idx: []int{x, v}, Coef: []float64{-1, -1}, Const: st.SoftMin})
				obj.Idx, obj.Coef = append(obj.Idx, v), append(obj.Coef, st.SoftPenalty)
			}
			if l.softHi[s] >= 0 {
				v := l.softHi[s] + t - 1
				p.Ineq = append(p.Ineq, gbd.Expr{Name: fmt.Sprintf("soft_max_%s[%d]", st.Name, t),
					Idx: []int{x, v}, Coef: []float64{1, -1}, Const: -st.SoftMax})
				obj.Idx, obj.Coef = append(obj.Idx, v), append(obj.Coef, st.SoftPenalty)
			}
		}
	}
	// Costs.
	for k := range m.Costs {
		l.addCost(k, in, p, &obj)
	}
	// Constraints as inequalities, last: Σ − rhs ≤ 0 (le), rhs − Σ ≤ 0 (ge).
	for _, c := range m.Constraints {
		if c.Op == "eq" {
			continue
		}
		sign := 1.0
		if c.Op == "ge" {
			sign = -1
		}
		for t := range l.n {
			p.Ineq = append(p.Ineq, l.constraintRow(&c, in, t, sign))
		}
	}
	p.Objective = obj
	p.Pure = l.pure
	return p
}

// constraintRow is sign·(Σ coef·(input, forecast)[t] − rhs).
func (l *layout) constraintRow(c *Constraint, in *Instance, t int, sign float64) gbd.Expr {
	e := gbd.Expr{Name: fmt.Sprintf("%s[%d]", c.Name, t), Const: -sign * c.RHS}
	for _, k := range c.Sum {
		r := l.m.names[k.Name]
		if r.kind == kindInput {
			e.Idx, e.Coef = append(e.Idx, l.inputIndex(r.idx, t)), append(e.Coef, sign*k.Value)
		} else {
			e.Const += sign * k.Value * in.Forecasts[r.idx][t]
		}
	}
	return e
}

// addCost writes cost term k: w·f[t]·φ(scale·(v − ref)) at every step it covers; |·| and pwl
// through an epigraph variable z ≥ each affine piece, priced w·f[t].
func (l *layout) addCost(k int, in *Instance, p *gbd.Problem, obj *gbd.Expr) {
	c := &l.m.Costs[k]
	for j, t := range l.costSteps(k) {
		w := c.Weight
		if ft := l.costTimes[k]; ft >= 0 {
			w *= in.Forecasts[ft][l.costForecastStep(k, t)]
		}
		v := l.costVarIndex(k, t)
		shift := -c.Scale * c.Ref
		switch c.Atom {
		case AtomLinear:
			obj.Idx, obj.Coef = append(obj.Idx, v), append(obj.Coef, w*c.Scale)
			obj.Const += w * shift
		case AtomQuadratic:
			obj.Terms = append(obj.Terms, gbd.Term{Weight: w, Atom: gbd.AtomSquare, Idx: []int{v}, Coef: []float64{c.Scale}, Shift: shift})
		case AtomPower:
			switch c.P {
			case 1:
				obj.Idx, obj.Coef = append(obj.Idx, v), append(obj.Coef, w*c.Scale)
				obj.Const += w * shift
			case 2:
				obj.Terms = append(obj.Terms, gbd.Term{Weight: w, Atom: gbd.AtomSquare, Idx: []int{v}, Coef: []float64{c.Scale}, Shift: shift})
			case 3:
				obj.Terms = append(obj.Terms, gbd.Term{Weight: w, Atom: gbd.AtomCube, Idx: []int{v}, Coef: []float64{c.Scale}, Shift: shift})
			default:
				obj.Terms = append(obj.Terms, gbd.Term{Weight: w, Atom: gbd.AtomPower, P: c.P, Idx: []int{v}, Coef: []float64{c.Scale}, Shift: shift})
			}
		case AtomAbs:
			z := l.epi[k] + j
			name := fmt.Sprintf("abs%d_%s[%d]", k, c.Var, t)
			p.Ineq = append(p.Ineq,
				gbd.Expr{Name: name, Idx: []int{v, z}, Coef: []float64{c.Scale, -1}, Const: shift},
				gbd.Expr{Name: name, Idx: []int{v, z}, Coef: []float64{-c.Scale, -1}, Const: -shift})
			obj.Idx, obj.Coef = append(obj.Idx, z), append(obj.Coef, w)
		case AtomPWL:
			z := l.epi[k] + j
			// piece i: c_i + s_i·(a − a_i) − z ≤ 0 with a = scale·v + shift.
			for i := 1; i < len(c.Points); i++ {
				a0, c0 := c.Points[i-1][0], c.Points[i-1][1]
				s := (c.Points[i][1] - c0) / (c.Points[i][0] - a0)
				p.Ineq = append(p.Ineq, gbd.Expr{Name: fmt.Sprintf("pwl%d_%s[%d,%d]", k, c.Var, t, i),
					Idx: []int{v, z}, Coef: []float64{s * c.Scale, -1}, Const: c0 + s*(shift-a0)})
			}
			obj.Idx, obj.Coef = append(obj.Idx, z), append(obj.Coef, w)
		}
	}
}
