package model

import "math"

// atomValue is φ(a) of a cost term's atom at argument a = scale·(v − ref).
func atomValue(c *Cost, a float64) float64 {
	switch c.Atom {
	case AtomQuadratic:
		return a * a
	case AtomAbs:
		return math.Abs(a)
	case AtomPower:
		return math.Pow(math.Max(a, 0), c.P)
	case AtomPWL:
		return pwl(c.Points, a)
	}
	return a // linear
}

// StepCost is what one step of the plant cost by the model's own prices: every cost term except
// the terminal ones, at the step's inputs, its end state and the forecast values that came true;
// the running cost of every unit on; the start cost of every unit on that was off before the step
// (prevOn); and the soft limits' penalties at the end state. Summed over a closed loop it is the
// day's cost that the MPC's objective stands for (the terminal terms only stand in for the time
// after the horizon).
func (f *Family) StepCost(prevOn []int, st *SimStep) float64 {
	m := f.m
	cost := 0.0
	for k := range m.Costs {
		c := &m.Costs[k]
		if c.Terminal {
			continue
		}
		r := m.names[c.Var]
		v := st.Inputs[r.idx]
		if r.kind == kindState {
			v = st.States[r.idx]
		}
		w := c.Weight
		if c.Times != "" {
			w *= st.Actual[m.names[c.Times].idx]
		}
		cost += w * atomValue(c, c.Scale*(v-c.Ref))
	}
	for u, unit := range m.Units {
		if st.On[u] == 0 {
			continue
		}
		cost += unit.RunCost * m.Dt
		if prevOn[u] == 0 {
			cost += unit.StartCost
		}
	}
	for s, x := range m.States {
		if x.HasSoftMin {
			cost += x.SoftPenalty * math.Max(0, x.SoftMin-st.States[s])
		}
		if x.HasSoftMax {
			cost += x.SoftPenalty * math.Max(0, st.States[s]-x.SoftMax)
		}
	}
	return cost
}
