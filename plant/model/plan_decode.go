package model

import (
	"encoding/json"
	"fmt"
	"math"

	"gbdmpc/mpc"
)

var _ mpc.PlanDecoder = (*Family)(nil)

// DecodePlan implements mpc.PlanDecoder: it reads back what Plan.JSON wrote for this model and
// checks it as strictly as the plant would: the model's step length, blocks and horizon, every
// state, input, unit and forecast by name with N finite values within their ranges, unit states 0
// or 1, every step's inputs a move the plant accepts (DecodeApply's rules), admissible binaries.
func (f *Family) DecodePlan(raw json.RawMessage) (mpc.Plan, error) {
	m, l := f.m, f.l
	var pj planJSON
	if err := json.Unmarshal(raw, &pj); err != nil {
		return nil, fmt.Errorf("model: plan: %w", err)
	}
	bad := func(format string, a ...any) (mpc.Plan, error) {
		return nil, fmt.Errorf("model: plan: %s", fmt.Sprintf(format, a...))
	}
	if pj.States == nil || pj.Inputs == nil || pj.Units == nil {
		return bad("no steps (a null plan: the safe action was applied)")
	}
	head := mpc.PlanHead{Dt: pj.Dt, Blocks: pj.Blocks, Shifted: pj.Shifted, Y: pj.Y}
	if err := head.Check("dt", m.Dt, l.rows.Blocking, f.ypb); err != nil {
		return nil, fmt.Errorf("model: plan: %w", err)
	}
	series := func(kind string, byName map[string][]float64, name string, lo, hi float64) ([]float64, error) {
		v, ok := byName[name]
		if !ok || len(v) != l.n {
			return nil, fmt.Errorf("model: plan: %s %q needs %d values, got %d", kind, name, l.n, len(v))
		}
		for t, x := range v {
			if math.IsNaN(x) || x < lo || x > hi {
				return nil, fmt.Errorf("model: plan: %s %q step %d: %v outside [%v, %v]", kind, name, t, x, lo, hi)
			}
		}
		return v, nil
	}
	pl := &Plan{fam: f, Y: pj.Y, Shifted: pj.Shifted}
	for _, st := range m.States {
		v, err := series("state", pj.States, st.Name, st.Lo, st.Hi)
		if err != nil {
			return nil, err
		}
		x0, ok := pj.States0[st.Name]
		if !ok || math.IsNaN(x0) || x0 < st.Lo || x0 > st.Hi {
			return bad("states0 %q missing or outside [%v, %v]", st.Name, st.Lo, st.Hi)
		}
		pl.States, pl.States0 = append(pl.States, v), append(pl.States0, x0)
	}
	for _, u := range m.Units {
		v, ok := pj.Units[u.Name]
		if !ok || len(v) != l.n {
			return bad("unit %q needs %d values, got %d", u.Name, l.n, len(v))
		}
		for t, on := range v {
			if on != 0 && on != 1 {
				return bad("unit %q step %d: %d is not 0 or 1", u.Name, t, on)
			}
		}
		pl.On = append(pl.On, v)
	}
	for i, in := range m.Inputs {
		v, err := series("input", pj.Inputs, in.Name, in.Lo, in.Hi)
		if err != nil {
			return nil, err
		}
		if u := l.inputUnit[i]; u >= 0 {
			for t, x := range v {
				if pl.On[u][t] == 0 && x != 0 || pl.On[u][t] == 1 && x < in.OnMin {
					return bad("input %q step %d: %v while its unit %s is %s", in.Name, t, x, in.Unit, map[int]string{0: "off", 1: "on"}[pl.On[u][t]])
				}
			}
		}
		pl.Inputs = append(pl.Inputs, v)
	}
	for _, fc := range m.Forecasts {
		v, err := series("forecast", pj.Forecasts, fc.Name, fc.Lo, fc.Hi)
		if err != nil {
			return nil, err
		}
		pl.Forecasts = append(pl.Forecasts, v)
	}
	return pl, nil
}
