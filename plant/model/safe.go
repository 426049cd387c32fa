package model

import (
	"math"

	"gbdmpc/mpc"
)

// The safe action applies when the controller has no plan left. By default it is fixed: every unit
// in its safe_on state, every input at its safe value. A model with safe_hold makes it depend on
// the measurement, as the built-in pump station's level-holding rule does:
//
//	safe_hold: {state: level_m, ref: 3}
//
// brings the state to ref by the end of the step. The hold units, the units that gate an input
// entering the state's dynamics, choose among themselves by mpc.HoldSet: of the sets of them that
// Y_pb admits (held over the horizon, every other unit in its safe_on state), the one whose range
// comes closest to what the step needs, given the measured states, the first step's forecasts and
// every other input at its safe value; the fewest units on a tie. Every input of a running hold
// unit runs at the same fraction of its range [on_min, max]. The rule looks at one state's dynamics
// only: constraints among the inputs (a power balance) are not part of it. A configured safe_action
// (WithSafeAction) replaces it.

// holdRule is a model's safe_hold prepared for its family.
type holdRule struct {
	state int
	units []int // the hold units, in the model's order
}

// checkSafeHold validates safe_hold against the names and ranges of the model.
func (m *Model) checkSafeHold(bad badFunc) error {
	h := m.SafeHold
	r, ok := m.names[h.State]
	switch {
	case !ok:
		return bad(h.line, "safe_hold: state %q is not defined", h.State)
	case r.kind != kindState:
		return bad(h.line, "safe_hold: %q is not a state but the %s on line %d", h.State, kindNames[r.kind], r.line)
	}
	st := &m.States[r.idx]
	lo, hi := st.Lo, st.Hi
	if st.HasMin {
		lo = math.Max(lo, st.Min)
	}
	if st.HasMax {
		hi = math.Min(hi, st.Max)
	}
	if h.Ref < lo || h.Ref > hi {
		return bad(h.line, "safe_hold: ref %v is outside the limits [%v, %v] of state %s", h.Ref, lo, hi, st.Name)
	}
	units := m.holdUnits(r.idx)
	switch {
	case len(units) == 0:
		return bad(h.line, "safe_hold: no unit gates an input in the dynamics of %s, so the rule has no unit to choose", st.Name)
	case len(units) > mpc.MaxHoldUnits:
		return bad(h.line, "safe_hold: %d units gate inputs in the dynamics of %s, more than the %d the rule chooses among", len(units), st.Name, mpc.MaxHoldUnits)
	}
	for _, u := range units {
		if m.Units[u].SafeOn {
			return bad(m.Units[u].line, "unit %s: safe_on, but safe_hold chooses whether it runs (it gates an input of %s's dynamics)", m.Units[u].Name, st.Name)
		}
	}
	return nil
}

// holdUnits are the units gating an input with a non-zero coefficient in state s's dynamics.
func (m *Model) holdUnits(s int) []int {
	gates := make([]bool, len(m.Units))
	for _, c := range m.States[s].Next {
		r := m.names[c.Name]
		if r.kind != kindInput || c.Value == 0 || m.Inputs[r.idx].Unit == "" {
			continue
		}
		gates[m.names[m.Inputs[r.idx].Unit].idx] = true
	}
	var out []int
	for u, g := range gates {
		if g {
			out = append(out, u)
		}
	}
	return out
}

// newHoldRule prepares safe_hold and checks that Y_pb admits some set of its units; nil without
// safe_hold.
func (f *Family) newHoldRule() (*holdRule, error) {
	m := f.m
	if m.SafeHold == nil {
		return nil, nil
	}
	h := &holdRule{state: m.names[m.SafeHold.State].idx, units: m.holdUnits(m.names[m.SafeHold.State].idx)}
	_, on := f.safeValues()
	if _, _, ok := mpc.HoldSet(0, make([]mpc.HoldUnit, len(h.units)), f.holdAdmits(h, on)); !ok {
		return nil, &Error{File: m.file, Line: m.SafeHold.line,
			Msg: "safe_hold: the rules admit no set of the units it chooses among with every other unit in its safe_on state"}
	}
	return h, nil
}

// holdAdmits is HoldSet's may: the hold units' choice, every other unit as in on, held over the
// horizon, in Y_pb.
func (f *Family) holdAdmits(h *holdRule, on []int) func(run []bool) bool {
	held := append([]int(nil), on...)
	bl := f.l.rows.Blocking
	return func(run []bool) bool {
		for k, u := range h.units {
			held[u] = 0
			if run[k] {
				held[u] = 1
			}
		}
		return f.ypb.Contains(bl.Hold(held))
	}
}

// safeValues are the fixed safe action's inputs and unit states, in the model's order.
func (f *Family) safeValues() (in []float64, on []int) {
	m := f.m
	in, on = make([]float64, len(m.Inputs)), make([]int, len(m.Units))
	for i, x := range m.Inputs {
		in[i] = x.Safe
	}
	for u, x := range m.Units {
		if x.SafeOn {
			on[u] = 1
		}
	}
	return in, on
}

var _ mpc.SafeActioner = (*Family)(nil)

// SafeActionFor implements mpc.SafeActioner: with safe_hold, the action that brings its state
// closest to ref by the end of the step from measurement m; otherwise (a configured safe action, a
// measurement of another family, or no admissible set) SafeAction.
func (f *Family) SafeActionFor(mm mpc.Measurement) mpc.Action {
	me, ok := mm.(*Measurement)
	if f.safe != nil || f.hold == nil || !ok || me.fam != f {
		return f.SafeAction()
	}
	m, h := f.m, f.hold
	in, on := f.safeValues()
	held := map[int]int{} // unit → its place among the hold units
	for k, u := range h.units {
		held[u] = k
	}
	st := &m.States[h.state]
	want := m.SafeHold.Ref - st.Const
	units := make([]mpc.HoldUnit, len(h.units))
	for _, c := range st.Next {
		r := m.names[c.Name]
		switch r.kind {
		case kindState:
			want -= c.Value * me.Inst.States[r.idx]
		case kindForecast:
			want -= c.Value * me.Inst.Forecasts[r.idx][0]
		case kindInput:
			x := &m.Inputs[r.idx]
			k, isHeld := held[f.l.inputUnit[r.idx]]
			if x.Unit == "" || !isHeld {
				want -= c.Value * in[r.idx]
				continue
			}
			units[k].Lo += c.Value * x.OnMin
			units[k].Hi += c.Value * x.Hi
		}
	}
	run, alpha, ok := mpc.HoldSet(want, units, f.holdAdmits(h, on))
	if !ok {
		return f.SafeAction()
	}
	for i, x := range m.Inputs {
		if u := f.l.inputUnit[i]; u >= 0 {
			if k, isHeld := held[u]; isHeld {
				in[i] = 0
				if run[k] {
					in[i] = x.OnMin + alpha*(x.Hi-x.OnMin)
				}
			}
		}
	}
	for k, u := range h.units {
		on[u] = 0
		if run[k] {
			on[u] = 1
		}
	}
	return f.marshalApply(in, on)
}
