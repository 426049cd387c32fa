package model

import (
	"fmt"
	"math"
	"slices"
)

// reserved are measurement members that belong to the envelope, not to a model.
var reserved = []string{"v", "seq", "ts_ms"}

// kind of a name.
const (
	kindState = iota + 1
	kindInput
	kindUnit
	kindForecast
)

var kindNames = map[int]string{kindState: "state", kindInput: "input", kindUnit: "unit", kindForecast: "forecast"}

type ref struct {
	kind, idx, line int
}

// check validates what the parser could not see one key at a time: names, references, dimensions,
// convexity, and limits that leave nothing to plan. Each error names the line.
func (m *Model) check() error {
	bad := func(line int, format string, a ...any) error {
		return &Error{File: m.file, Line: line, Msg: fmt.Sprintf(format, a...)}
	}
	if len(m.Units) == 0 {
		return bad(m.line, "model %s has no units: a mixed-integer model needs at least one on/off unit", m.Name)
	}
	if len(m.States)+len(m.Inputs) == 0 {
		return bad(m.line, "model %s has neither states nor inputs", m.Name)
	}
	for what, n := range map[string]int{"states": len(m.States), "inputs": len(m.Inputs), "units": len(m.Units),
		"forecasts": len(m.Forecasts), "costs": len(m.Costs), "rules": len(m.Rules), "constraints": len(m.Constraints)} {
		if n > maxItems {
			return bad(m.line, "model %s has %d %s, more than %d", m.Name, n, what, maxItems)
		}
	}
	if ny := len(m.Units) * m.Blocks; ny > maxBinaries {
		return bad(m.line, "model %s has %d binaries (%d units × %d blocks), more than %d", m.Name, ny, len(m.Units), m.Blocks, maxBinaries)
	}
	names := map[string]ref{}
	add := func(name string, kind, idx, line int) error {
		if !validName(name) {
			return bad(line, "%s name %q: use letters, digits, '_' and '-' (starting with a letter)", kindNames[kind], name)
		}
		if slices.Contains(reserved, name) || name == "const" {
			return bad(line, "%s name %q is reserved", kindNames[kind], name)
		}
		if prev, dup := names[name]; dup {
			return bad(line, "name %q used twice: already the %s on line %d", name, kindNames[prev.kind], prev.line)
		}
		names[name] = ref{kind, idx, line}
		return nil
	}
	for i, f := range m.Forecasts {
		if err := add(f.Name, kindForecast, i, f.line); err != nil {
			return err
		}
	}
	for i, s := range m.States {
		if err := add(s.Name, kindState, i, s.line); err != nil {
			return err
		}
	}
	for i, in := range m.Inputs {
		if err := add(in.Name, kindInput, i, in.line); err != nil {
			return err
		}
	}
	for i, u := range m.Units {
		if err := add(u.Name, kindUnit, i, u.line); err != nil {
			return err
		}
	}
	m.names = names

	for i := range m.States {
		if err := m.checkState(&m.States[i], bad); err != nil {
			return err
		}
	}
	for i := range m.Inputs {
		in := &m.Inputs[i]
		if in.Unit == "" {
			continue
		}
		r, ok := names[in.Unit]
		switch {
		case !ok:
			return bad(in.unitAt, "input %s: unit %q is not defined", in.Name, in.Unit)
		case r.kind != kindUnit:
			return bad(in.unitAt, "input %s: %q is a %s, not a unit", in.Name, in.Unit, kindNames[r.kind])
		case in.Lo > 0:
			return bad(in.line, "input %s is gated by unit %s but its minimum %v is above zero: an off unit holds it at 0", in.Name, in.Unit, in.Lo)
		case in.Lo < 0:
			return bad(in.line, "input %s is gated by unit %s: its range must start at 0 (got %v); give the minimum while on as on_min", in.Name, in.Unit, in.Lo)
		case in.Hi <= 0:
			return bad(in.line, "input %s is gated by unit %s but its maximum is %v: a gated input needs a positive maximum", in.Name, in.Unit, in.Hi)
		case in.OnMin < 0 || in.OnMin > in.Hi:
			return bad(in.line, "input %s: on_min %v must lie in [0, %v]", in.Name, in.OnMin, in.Hi)
		}
		u := m.Units[r.idx]
		if u.SafeOn && (in.Safe < in.OnMin || in.Safe > in.Hi) {
			return bad(in.line, "input %s: safe value %v is outside [%v, %v], where its unit %s runs in the safe action", in.Name, in.Safe, in.OnMin, in.Hi, u.Name)
		}
		if !u.SafeOn && in.Safe != 0 {
			return bad(in.line, "input %s: safe value %v, but its unit %s is off in the safe action", in.Name, in.Safe, u.Name)
		}
	}
	for i := range m.Costs {
		if err := m.checkCost(&m.Costs[i], bad); err != nil {
			return err
		}
	}
	cnames := map[string]int{}
	for _, c := range m.Constraints {
		if l, dup := cnames[c.Name]; dup {
			return bad(c.line, "constraint name %q used twice (first on line %d)", c.Name, l)
		}
		cnames[c.Name] = c.line
		// Its range over the boxes must meet the right-hand side, or no step can satisfy it.
		lo, hi, vars := 0.0, 0.0, 0
		for _, k := range c.Sum {
			r, ok := names[k.Name]
			if !ok {
				return bad(k.line, "constraint %s: %q is not defined", c.Name, k.Name)
			}
			var a, b float64
			switch r.kind {
			case kindInput:
				a, b = m.Inputs[r.idx].Lo, m.Inputs[r.idx].Hi
				vars++
			case kindForecast:
				a, b = m.Forecasts[r.idx].Lo, m.Forecasts[r.idx].Hi
			default:
				return bad(k.line, "constraint %s: %q is a %s; constraints relate the inputs and forecasts of one step", c.Name, k.Name, kindNames[r.kind])
			}
			lo, hi = addScaled(lo, hi, k.Value, a, b)
		}
		if vars == 0 {
			return bad(c.line, "constraint %s names no input: it would constrain the forecasts, which a measurement brings", c.Name)
		}
		if c.Op == "eq" && (c.RHS < lo || c.RHS > hi) || c.Op == "le" && lo > c.RHS || c.Op == "ge" && hi < c.RHS {
			return bad(c.line, "constraint %s cannot hold: its sum ranges over [%v, %v], the right-hand side is %s %v", c.Name, lo, hi, c.Op, c.RHS)
		}
	}
	if m.SafeHold != nil {
		if err := m.checkSafeHold(bad); err != nil {
			return err
		}
	}
	for _, r := range m.Rules {
		seen := map[string]bool{}
		for _, name := range r.Units {
			if x, ok := names[name]; !ok || x.kind != kindUnit {
				return bad(r.line, "rule %s: %q is not a unit", r.Kind, name)
			}
			if seen[name] {
				return bad(r.line, "rule %s: unit %q named twice", r.Kind, name)
			}
			seen[name] = true
		}
	}
	return nil
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i, r := range s {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if i == 0 && !letter {
			return false
		}
		if !letter && !(r >= '0' && r <= '9') && r != '_' && r != '-' {
			return false
		}
	}
	return true
}

type badFunc func(line int, format string, a ...any) error

func (m *Model) checkState(s *State, bad badFunc) error {
	lo, hi := s.Lo, s.Hi
	if s.HasMin {
		lo = math.Max(lo, s.Min)
	}
	if s.HasMax {
		hi = math.Min(hi, s.Max)
	}
	if lo > hi {
		return bad(s.line, "state %s: limits [%v, %v] leave nothing of its range [%v, %v]", s.Name, s.Min, s.Max, s.Lo, s.Hi)
	}
	if (s.HasSoftMin || s.HasSoftMax) && !(s.SoftPenalty > 0) {
		return bad(s.line, "state %s: soft limits need a positive soft_penalty (per unit of violation and step), got %v", s.Name, s.SoftPenalty)
	}
	if !s.HasSoftMin && !s.HasSoftMax && s.SoftPenalty != 0 {
		return bad(s.line, "state %s: soft_penalty without soft_min or soft_max", s.Name)
	}
	// x[1]'s reachable interval over every measurement and every input in its box.
	rlo, rhi := s.Const, s.Const
	for _, c := range s.Next {
		r, ok := m.names[c.Name]
		if !ok {
			return bad(c.line, "state %s: next names %q, which is not defined", s.Name, c.Name)
		}
		var a, b float64
		switch r.kind {
		case kindState:
			a, b = m.States[r.idx].Lo, m.States[r.idx].Hi
		case kindInput:
			a, b = m.Inputs[r.idx].Lo, m.Inputs[r.idx].Hi
		case kindForecast:
			a, b = m.Forecasts[r.idx].Lo, m.Forecasts[r.idx].Hi
		default:
			return bad(c.line, "state %s: next names the unit %q; units enter the dynamics through the inputs they gate", s.Name, c.Name)
		}
		rlo, rhi = addScaled(rlo, rhi, c.Value, a, b)
	}
	if rhi < lo || rlo > hi {
		return bad(s.line, "state %s: its bounds [%v, %v] leave the first step empty: from any measurement, x[1] lies in [%v, %v]", s.Name, lo, hi, rlo, rhi)
	}
	return nil
}

func (m *Model) checkCost(c *Cost, bad badFunc) error {
	r, ok := m.names[c.Var]
	if !ok {
		return bad(c.line, "cost: var %q is not defined", c.Var)
	}
	var lo, hi float64
	switch r.kind {
	case kindState:
		lo, hi = m.States[r.idx].Lo, m.States[r.idx].Hi
	case kindInput:
		lo, hi = m.Inputs[r.idx].Lo, m.Inputs[r.idx].Hi
	default:
		return bad(c.line, "cost: var %q is a %s; costs apply to states and inputs (units have run_cost and start_cost)", c.Var, kindNames[r.kind])
	}
	if c.Terminal && r.kind != kindState {
		return bad(c.line, "cost on %s: steps: terminal applies to states only", c.Var)
	}
	flo, fhi := 1.0, 1.0
	if c.Times != "" {
		fr, ok := m.names[c.Times]
		if !ok || fr.kind != kindForecast {
			return bad(c.line, "cost on %s: times %q is not a forecast", c.Var, c.Times)
		}
		flo, fhi = m.Forecasts[fr.idx].Lo, m.Forecasts[fr.idx].Hi
	}
	if c.Scale == 0 {
		return bad(c.line, "cost on %s: scale must not be 0", c.Var)
	}
	if c.Atom == AtomLinear {
		return nil
	}
	// A convex atom stays convex only under a non-negative multiplier.
	if wlo := math.Min(c.Weight*flo, c.Weight*fhi); wlo < 0 {
		why := fmt.Sprintf("weight %v", c.Weight)
		if c.Times != "" {
			why = fmt.Sprintf("weight %v times %s in [%v, %v]", c.Weight, c.Times, flo, fhi)
		}
		return bad(c.line, "cost on %s: non-convex: %s can be negative, which makes the %s atom concave", c.Var, why, c.Atom)
	}
	if c.Atom == AtomPower {
		alo := math.Min(c.Scale*(lo-c.Ref), c.Scale*(hi-c.Ref))
		if alo < 0 {
			return bad(c.line, "cost on %s: non-convex: the power argument scale·(%s − ref) reaches %v over [%v, %v]; u^p is convex only for u ≥ 0", c.Var, c.Var, alo, lo, hi)
		}
	}
	return nil
}

// addScaled is the interval [lo, hi] + c·[a, b].
func addScaled(lo, hi, c, a, b float64) (float64, float64) {
	if c >= 0 {
		return lo + c*a, hi + c*b
	}
	return lo + c*b, hi + c*a
}
