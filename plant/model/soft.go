package model

import (
	"fmt"
	"math"

	"gbdmpc/gbd"
	"gbdmpc/mpc"
)

// The soft problem (mpc.Softener): the hard limits min and max of the states with their violation
// priced, everything else as in the hard problem, in the same places. Its variables are the hard
// problem's followed by one w = ρ·v per hard-limit row (v the violation, in the state's unit; w in
// cost units so that its objective coefficient is 1 and a solver's bound tolerance on it is worth
// next to nothing), box [0, ρ·(min − lo)] or [0, ρ·(hi − max)]: the physical range stays hard, so a
// model whose dynamics can leave it has soft problems without a feasible point as well.
//
// ρ = (Bound − Floor + 1)/SoftTol with Bound and Floor the most and the least the hard objective
// can be over the box: a plan that violates the limits by SoftTol in total costs more than every
// plan within them, so the soft optimum holds the limits whenever some plan does, up to SoftTol.

// SoftTol is the total violation (summed over rows, in the states' units) below which the soft
// problem may prefer a plan to every plan within the limits.
const SoftTol = 1e-3

// violationTol is a violation below solver tolerance: a plan within it holds the limit.
const violationTol = 1e-6

var (
	_ mpc.Softener = (*Measurement)(nil)
)

func (l *layout) softNX() int { return l.nx + len(l.limits) }

// objectiveRange bounds the hard problem's objective over its box and y ∈ {0,1}: every linear part
// at its worse end, every atom (convex, one variable) at the worse end of its argument's range.
func objectiveRange(p *gbd.Problem) (lo, hi float64) {
	e := &p.Objective
	lo, hi = e.Const, e.Const
	for k, i := range e.Idx {
		a, b := e.Coef[k]*p.XLo[i], e.Coef[k]*p.XHi[i]
		lo, hi = lo+math.Min(a, b), hi+math.Max(a, b)
	}
	for _, c := range e.YCoef {
		lo, hi = lo+math.Min(0, c), hi+math.Max(0, c)
	}
	x := make([]float64, p.NX)
	for _, t := range e.Terms {
		one := gbd.Expr{Terms: []gbd.Term{t}}
		var vals []float64
		for _, end := range [2]bool{false, true} {
			for k, i := range t.Idx {
				if (t.Coef[k] >= 0) == end {
					x[i] = p.XHi[i]
				} else {
					x[i] = p.XLo[i]
				}
			}
			if v, ok := one.EvalX(x); ok {
				vals = append(vals, v)
			}
		}
		if len(vals) == 0 {
			continue
		}
		hi += max(vals[0], vals[len(vals)-1])
		// A convex term's minimum is at least its weight times 0 for the atoms the model uses
		// (square, |·|-free powers of a non-negative argument): all are ≥ 0.
		lo += math.Min(0, min(vals[0], vals[len(vals)-1]))
	}
	return lo, hi
}

// softPenalty is ρ for a hard problem, and the Bound of mpc.Softener.
func softPenalty(p *gbd.Problem) (rho, bound float64) {
	lo, hi := objectiveRange(p)
	return (hi - lo + 1) / SoftTol, hi
}

// SoftProblem implements mpc.Softener.
func (m *Measurement) SoftProblem() (*gbd.Problem, float64, error) {
	l := m.fam.l
	p := l.transcribe(&m.Inst)
	if len(l.limits) == 0 {
		return nil, 0, fmt.Errorf("model %s has no hard limits to relax", l.m.Name)
	}
	rho, bound := softPenalty(p)
	p.NX = l.softNX()
	p.XNames = append(append([]string(nil), p.XNames...), make([]string, len(l.limits))...)
	for j, lr := range l.limits {
		st := &l.m.States[lr.state]
		i := l.nx + j
		room := st.Min - st.Lo
		name := "min"
		if lr.upper {
			room, name = st.Hi-st.Max, "max"
		}
		p.XLo = append(p.XLo, 0)
		p.XHi = append(p.XHi, rho*math.Max(0, room))
		p.XNames[i] = fmt.Sprintf("violation_%s_%s[%d]", name, st.Name, lr.t)
		row := &p.Ineq[lr.row]
		row.Idx = append(append([]int(nil), row.Idx...), i)
		row.Coef = append(append([]float64(nil), row.Coef...), -1/rho)
		p.Objective.Idx = append(p.Objective.Idx, i)
		p.Objective.Coef = append(p.Objective.Coef, 1)
	}
	return p, bound, nil
}

// SoftStart implements mpc.Softener: the hard layout's values in place, every violation 0.
func (m *Measurement) SoftStart(x []float64) []float64 {
	l := m.fam.l
	if len(x) != l.nx {
		return nil
	}
	out := make([]float64, l.softNX())
	copy(out, x)
	return out
}

// Unholdable implements mpc.Softener by interval reachability: from the measured states, with
// every input anywhere in its range (rules and gating ignored, so it never claims too much), the
// interval of each state that the hard limits and the physical range allow at the end of every
// step. An empty interval proves the hard problem infeasible.
func (m *Measurement) Unholdable() string {
	l, md := m.fam.l, m.fam.m
	lo := append([]float64(nil), m.Inst.States...)
	hi := append([]float64(nil), m.Inst.States...)
	nlo, nhi := make([]float64, len(lo)), make([]float64, len(hi))
	for t := range l.n {
		for s, st := range md.States {
			a, b := st.Const, st.Const
			for _, c := range st.Next {
				r := md.names[c.Name]
				var x, y float64
				switch r.kind {
				case kindState:
					x, y = lo[r.idx], hi[r.idx]
				case kindInput:
					x, y = md.Inputs[r.idx].Lo, md.Inputs[r.idx].Hi
				case kindForecast:
					x, y = m.Inst.Forecasts[r.idx][t], m.Inst.Forecasts[r.idx][t]
				}
				a, b = addScaled(a, b, c.Value, x, y)
			}
			a, b = math.Max(a, st.Lo), math.Min(b, st.Hi)
			if st.HasMin {
				a = math.Max(a, st.Min)
			}
			if st.HasMax {
				b = math.Min(b, st.Max)
			}
			// A margin of solver tolerance: only a clear gap is a proof.
			if a > b+violationTol*math.Max(1, math.Abs(b)) {
				return fmt.Sprintf("state %s cannot be kept within [%v, %v] by the end of step %d, whatever the inputs",
					st.Name, limitOr(st.HasMin, st.Min, st.Lo), limitOr(st.HasMax, st.Max, st.Hi), t)
			}
			nlo[s], nhi[s] = a, math.Max(a, b)
		}
		lo, nlo = nlo, lo
		hi, nhi = nhi, hi
	}
	return ""
}

func limitOr(has bool, v, def float64) float64 {
	if has {
		return v
	}
	return def
}

// Relaxation implements mpc.Softener: the hard limits' violations read off the planned states.
func (m *Measurement) Relaxation(x []float64) (mpc.Relaxation, bool) {
	l, md := m.fam.l, m.fam.m
	if len(x) != l.nx && len(x) != l.softNX() {
		return mpc.Relaxation{}, false
	}
	r := mpc.Relaxation{FirstStep: -1, WorstStep: -1}
	worst := 0.0
	for _, lr := range l.limits {
		st := &md.States[lr.state]
		v := math.Min(math.Max(x[l.stateIndex(lr.state, lr.t)], st.Lo), st.Hi)
		viol, bound, name := st.Min-v, st.Min, "min_"+st.Name
		if lr.upper {
			viol, bound, name = v-st.Max, st.Max, "max_"+st.Name
		}
		if viol <= violationTol*math.Max(1, math.Abs(bound)) {
			continue
		}
		if r.FirstStep < 0 || lr.t-1 < r.FirstStep {
			r.FirstStep = lr.t - 1
		}
		if viol > worst {
			worst, r.Limit, r.Bound, r.WorstStep = viol, name, bound, lr.t-1
		}
	}
	r.MaxViolation = worst
	if worst == 0 {
		r.FirstStep, r.WorstStep = 0, 0
		r.Shortfall = "the plan holds the limits"
		return r, false
	}
	r.Shortfall = fmt.Sprintf("%s %g broken by up to %.6g (plan step %d, first violation at step %d)",
		r.Limit, r.Bound, r.MaxViolation, r.WorstStep, r.FirstStep)
	return r, true
}
